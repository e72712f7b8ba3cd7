/*
** The HTTP engine: one libcurl multi handle per client, driven by an
** event loop (loop.h) that the engines of one program or Lua state
** share. Connections live in the multi handle's pool, so keep-alive
** carries over from one call to the next whatever easy handle a call
** uses (HTTP/2 multiplexes when a server offers it).
**
** Every call is a transfer. At most max_concurrency run at once per
** engine; more wait in a FIFO queue (their time there is queue_us of
** their timing, and counts against their timeout). One way to run one:
** unsb_http_open, then the loop's rounds (unsb_loop_step, or
** unsb_http_drive for a caller that blocks until it is done: it drives in
** slices of at most 100 ms, checking the interrupt flag between them),
** unsb_http_result once unsb_http_done, unsb_http_close. The caller holds
** any number of transfers open at once, and unsb_http_notify queues a
** token on the loop when one ends, so a scheduler wakes the right waiter
** instead of checking them all. Each round drives every transfer of every
** engine on the loop, so a stream keeps flowing while a call beside it
** blocks; its bytes wait in its consumer's queue, or the consumer pauses it.
**
** TLS peer and host verification are always on; only the CA file can be
** changed. Redirects are not followed. Messages name the URL's host and
** curl's own text, never a header.
**
** A connect_only transfer stops once connected (TCP, then TLS for https,
** verified as every request): its caller speaks its own protocol on the
** connection with unsb_http_send / unsb_http_recv, watching the socket on
** the loop itself (the session terminal's WebSocket, ws/client.h). The
** connection is the transfer's alone, never reused, and closed with it.
**
** A transfer may stream instead of buffering (SSE, large downloads): the
** caller's callbacks see the status and content type once the headers are
** in, then the body bytes as they arrive; either can cancel, which aborts
** the transfer and closes its connection (a connection with an unread body
** is never reused), and so can closing the transfer. They run inside libcurl:
** they must not longjmp (no Lua error may cross them) and must not start,
** drive or close a transfer of the same engine (refused: "busy").
*/
#ifndef UNSB_HTTP_H
#define UNSB_HTTP_H

#include <stddef.h>

#include <stdint.h>

#include "core/error.h"
#include "core/loop.h"

typedef struct unsb_http unsb_http;

#define UNSB_HTTP_DEFAULT_CONCURRENCY 16
#define UNSB_HTTP_MAX_CONCURRENCY 1024

typedef struct {
  long connect_timeout_ms;   /* > 0 */
  const char *ca_file;       /* NULL = the system store */
  size_t max_response;       /* larger bodies fail with kind protocol */
  unsb_loop *loop;           /* shared loop (a reference is taken); NULL = a private one */
  int max_concurrency;       /* transfers at once; 0 = UNSB_HTTP_DEFAULT_CONCURRENCY */
} unsb_http_config;

/* Where a transfer's time went, from libcurl's own timers (microseconds;
** each part is 0 when it did not happen, e.g. connect and tls on a reused
** connection). queue + resolve + connect + tls + server + transfer <=
** total; the rest of total is libcurl's own work between the phases. */
typedef struct {
  int64_t queue_us;          /* waiting for a free slot of max_concurrency */
  int64_t resolve_us;        /* name resolution */
  int64_t connect_us;        /* TCP connect, after resolution */
  int64_t tls_us;            /* TLS handshake */
  int64_t server_us;         /* request sent .. first response byte */
  int64_t transfer_us;       /* first byte .. last byte */
  int64_t total_us;          /* open .. end, queue included */
  int64_t first_data_us;     /* open .. first body byte handed to on_data; -1 none */
  uint64_t bytes_out;        /* request head and body */
  uint64_t bytes_in;         /* response heads and body */
  long new_connections;      /* connections opened (0 = reused) */
  int sent;                  /* some of the request left: the server may have seen it */
} unsb_http_timing;

/* What on_head asks for the body. */
enum { UNSB_HTTP_STREAM = 0, UNSB_HTTP_BUFFER = 1, UNSB_HTTP_CANCEL = -1 };

/* What on_data may return besides 0 (taken) and other values (cancel):
** the bytes were NOT taken; the transfer pauses (the socket is no longer
** read, so the peer slows down) until unsb_http_resume, and the same
** bytes come again then. Only for transfers opened with unsb_http_open. */
#define UNSB_HTTP_PAUSE 0x7061

/* Response headers a request may ask to see besides X-Request-Id,
** Retry-After and Content-Type (ETag, Location, ...). */
#define UNSB_HTTP_CAPTURE_MAX 8
#define UNSB_HTTP_CAPTURE_VALUE_MAX 4096

typedef struct {
  /* Once the final response's headers are in (status >= 200), before any
  ** body byte: UNSB_HTTP_STREAM (body to on_data), UNSB_HTTP_BUFFER (body
  ** into the response, as without a stream) or UNSB_HTTP_CANCEL. NULL =
  ** stream a 2xx body and buffer any other, so error bodies stay readable. */
  int (*on_head)(void *ud, long status, const char *content_type);
  /* Body bytes as they arrive; a non-zero return cancels, except
  ** UNSB_HTTP_PAUSE. */
  int (*on_data)(void *ud, const char *data, size_t len);
  void *ud;
} unsb_http_stream;

typedef struct {
  const char *method;               /* upper case: GET, POST, PUT, ... */
  const char *url;
  const char *const *headers;       /* "Name: value" lines */
  size_t n_headers;
  const char *body;                 /* NULL = no body; not copied (see open) */
  size_t body_len;
  /* or the body read from a file: body_fd_len bytes from body_fd's
  ** current offset, handed to libcurl in its own buffer (never through
  ** the caller); the fd must stay open until the transfer is closed */
  int has_body_fd;
  int body_fd;
  int64_t body_fd_len;
  long timeout_ms;                  /* whole transfer, > 0 */
  const unsb_http_stream *stream;   /* NULL = buffer the whole body; copied */
  int large;                        /* a large body is expected: receive it in pieces
                                    ** of 512 KiB rather than libcurl's 16 KiB */
  const char *const *capture;       /* response header names to keep (copied) */
  size_t n_capture;                 /* <= UNSB_HTTP_CAPTURE_MAX */
  int connect_only;                 /* connect and stop (method, headers, body unused);
                                    ** HTTP/1.1 is what TLS's ALPN offers then */
  int verbose;                      /* libcurl's own log on stderr (connect_only only: an
                                    ** ordinary request's headers would show) */
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
  char *captured[UNSB_HTTP_CAPTURE_MAX];   /* request.capture[i]'s value, or NULL */
  unsb_http_timing timing;
} unsb_http_response;

typedef struct unsb_http_xfer unsb_http_xfer;

/* Once per process, thread-safe; unsb_http_new calls it. 0 or -1. */
int unsb_http_global_init(void);

unsb_http *unsb_http_new(const unsb_http_config *cfg, unsb_error *err);
/* Closes the engine's transfers (their tokens are queued), leaves the loop. */
void unsb_http_free(unsb_http *h);
unsb_loop *unsb_http_loop(const unsb_http *h);

void unsb_http_response_free(unsb_http_response *resp);

/* Starts req as a transfer of its own and returns without waiting (the
** first round of the engine sends it). req->body must stay valid until
** unsb_http_close; everything else is copied. The body is sent as exactly
** body_len bytes (or body_fd_len bytes of body_fd) with a Content-Length;
** Content-Type: application/json is added only when a non-empty body is
** sent and the caller gave no Content-Type header. A file that ends early
** fails the transfer (transport: the Content-Length was promised). NULL with err: validation (a header line with CR
** or LF, a stream without on_data, too many captured names, called from a
** callback: "busy") or transport. */
unsb_http_xfer *unsb_http_open(unsb_http *h, const unsb_http_request *req, unsb_error *err);

/* Drives the loop until x is done (0), or -1 with err: interrupted (the
** flag is taken) or the loop's errors (validation: "busy", from inside a
** callback). */
int unsb_http_drive(unsb_http *h, unsb_http_xfer *x, unsb_error *err);

/* 1 once x has ended (completed or failed), else 0. */
int unsb_http_done(const unsb_http_xfer *x);

/* The engine x belongs to. */
unsb_http *unsb_http_of(const unsb_http_xfer *x);

/* Queues tok on the engine's loop when x ends or is closed (at once when
** it already has); 0 stops that. */
void unsb_http_notify(unsb_http_xfer *x, unsb_token tok);

/* x's timing so far (at its end: final). Valid whatever the outcome. */
void unsb_http_timing_of(const unsb_http_xfer *x, unsb_http_timing *out);

/* Lets a paused transfer (on_data said UNSB_HTTP_PAUSE) go on; the bytes
** it held are offered to on_data again at once. No-op otherwise. */
void unsb_http_resume(unsb_http_xfer *x);

/* The outcome of a done transfer (resp is moved to the caller; free it
** with unsb_http_response_free): 0 for any HTTP status, or -1 with err:
** timeout, transport, protocol (response too large, a malformed reply),
** validation (bad URL), cancelled (a stream callback), and also when x is
** not done yet. */
int unsb_http_result(unsb_http_xfer *x, unsb_http_response *resp, unsb_error *err);

/* Ends x: a running transfer is aborted and its connection closed (a
** connect_only transfer's too). Frees x and whatever result it still
** holds. NULL is fine. unsb_http_free closes the transfers still open. */
void unsb_http_close(unsb_http_xfer *x);

/* ---- connect_only transfers (http_conn.c) ---- */

/* 1 once x is connected (its slot is free again: the connection is held
** by x until unsb_http_close), 0 while it connects, -1 with err when it
** failed, the messages naming `name` (the caller's URL): transport
** ("cannot connect to NAME: ...", "TLS with NAME failed ...: ..."),
** timeout, validation (a bad URL). */
int unsb_http_connected(const unsb_http_xfer *x, const char *name, unsb_error *err);

/* The connected socket, to watch on the loop (-1 when there is none). */
int unsb_http_socket(const unsb_http_xfer *x);

/* Writes up to len bytes (TLS included): 1 with *n written (maybe fewer
** than len), 0 when nothing can be written now (wait for POLLOUT; retry
** with the same bytes), -1 with err (transport: the connection broke). */
int unsb_http_send(unsb_http_xfer *x, const void *buf, size_t len, size_t *n, unsb_error *err);

/* Reads up to len bytes: 1 with *n read (0: the peer closed the
** connection), 0 when nothing is there now (wait for POLLIN), -1 with err
** (transport). TLS may hold decrypted bytes the socket no longer shows:
** read until 0 before waiting again. */
int unsb_http_recv(unsb_http_xfer *x, void *buf, size_t len, size_t *n, unsb_error *err);

#endif
