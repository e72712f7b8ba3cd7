/*
** The HTTP engine: one libcurl multi handle per client, with one easy
** handle reused for every call so keep-alive connections carry over.
** A blocking call adds one transfer and drives the multi handle in slices
** of at most 100 ms, checking the interrupt flag between slices; fan-out of
** several transfers later adds to this rather than replacing it.
**
** TLS peer and host verification are always on; only the CA file can be
** changed. Redirects are not followed. Messages name the URL's host and
** curl's own text, never a header.
**
** A transfer may stream instead of buffering (SSE, large downloads): the
** caller's callbacks see the status and content type once the headers are
** in, then the body bytes as they arrive, and a tick after each round of
** the engine (outside libcurl); any of them can cancel, which aborts the transfer and closes its connection (a
** connection with an unread body is never reused). The callbacks run
** inside libcurl: they must not longjmp (no Lua error may cross them) and
** must not start another transfer on the same engine (refused: "busy").
*/
#ifndef UNSB_HTTP_H
#define UNSB_HTTP_H

#include <stddef.h>

#include "core/error.h"

typedef struct unsb_http unsb_http;

typedef struct {
  long connect_timeout_ms;   /* > 0 */
  const char *ca_file;       /* NULL = the system store */
  size_t max_response;       /* larger bodies fail with kind protocol */
} unsb_http_config;

/* What on_head asks for the body. */
enum { UNSB_HTTP_STREAM = 0, UNSB_HTTP_BUFFER = 1, UNSB_HTTP_CANCEL = -1 };

typedef struct {
  /* Once the final response's headers are in (status >= 200), before any
  ** body byte: UNSB_HTTP_STREAM (body to on_data), UNSB_HTTP_BUFFER (body
  ** into the response, as without a stream) or UNSB_HTTP_CANCEL. NULL =
  ** stream a 2xx body and buffer any other, so error bodies stay readable. */
  int (*on_head)(void *ud, long status, const char *content_type);
  /* Body bytes as they arrive; a non-zero return cancels. */
  int (*on_data)(void *ud, const char *data, size_t len);
  /* Called after each round of the engine (at least every UNSB_SLICE_MS),
  ** outside libcurl: the place to hand what on_data queued to code that
  ** must not run inside a libcurl callback (a binding's protected Lua
  ** call). Non-zero cancels. May be NULL. */
  int (*on_tick)(void *ud);
  void *ud;
} unsb_http_stream;

typedef struct {
  const char *method;               /* upper case: GET, POST, PUT, ... */
  const char *url;
  const char *const *headers;       /* "Name: value" lines */
  size_t n_headers;
  const char *body;                 /* NULL = no body */
  size_t body_len;
  long timeout_ms;                  /* whole transfer, > 0 */
  const unsb_http_stream *stream;   /* NULL = buffer the whole body */
} unsb_http_request;

typedef struct {
  long status;
  char *body;                 /* malloc'd, NUL-terminated; body_len bytes */
  size_t body_len;
  char *request_id;           /* X-Request-Id, or NULL */
  char *content_type;         /* Content-Type, or NULL */
  long long retry_after;      /* Retry-After in seconds, or -1 */
  long new_connections;       /* connections opened for this call (0 = reused) */
  size_t streamed;            /* body bytes handed to on_data (body is then "") */
} unsb_http_response;

/* Once per process, thread-safe; unsb_http_new calls it. 0 or -1. */
int unsb_http_global_init(void);

unsb_http *unsb_http_new(const unsb_http_config *cfg, unsb_error *err);
void unsb_http_free(unsb_http *h);

/* Performs one request. Returns 0 with resp filled for any HTTP status
** (free it with unsb_http_response_free), or -1 with err: timeout,
** transport, protocol (response too large), validation (bad URL, a header
** line with CR or LF, the engine busy with another transfer), interrupted
** (the interrupt flag) or cancelled (a stream callback). The body is sent
** as exactly body_len bytes with a Content-Length; Content-Type:
** application/json is added only when a non-empty body is sent and the
** caller gave no Content-Type header. */
int unsb_http_perform(unsb_http *h, const unsb_http_request *req,
                      unsb_http_response *resp, unsb_error *err);

void unsb_http_response_free(unsb_http_response *resp);

#endif
