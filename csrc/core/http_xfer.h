/*
** Inside the HTTP engine (http.c, http_xfer.c): the transfer record and
** the engine struct, shared by the two files and by nothing else. The
** engine file owns the multi handle and the list of open transfers; the
** transfer file owns what happens to one transfer's bytes and headers
** (libcurl's callbacks and options), so each stays short.
*/
#ifndef UNSB_HTTP_XFER_H
#define UNSB_HTTP_XFER_H

#include <curl/curl.h>

#include "core/http.h"

#define UNSB_HTTP_IDLE_MAX 64        /* easy handles kept for reuse, at most */
#define UNSB_HTTP_HOST_MAX 256
#define UNSB_HTTP_NAME_MAX 64

struct unsb_http {
  CURLM *multi;
  unsb_loop *loop;
  unsb_loop_source src;              /* due_ms = min(curl_due, the queue's first deadline) */
  int64_t curl_due;                  /* libcurl's next timeout, monotonic ms; -1 none */
  CURL **idle;                       /* reset and reused by the next transfer */
  int n_idle, max_idle;
  long connect_timeout_ms;
  char *ca_file;
  size_t max_response;
  int cap, running;                  /* max_concurrency; transfers in the multi handle */
  unsb_http_xfer *open;              /* open transfers, a doubly linked list */
  unsb_http_xfer *qhead, *qtail;     /* waiting for a slot, oldest first */
  unsb_http_xfer *spare;             /* the last one closed, zeroed for the next */
  /* the last URL's scheme and authority and the host it names (for
  ** messages): an engine talks to one origin, so it is parsed once */
  char origin[UNSB_HTTP_HOST_MAX + 16], origin_host[UNSB_HTTP_HOST_MAX];
};

struct unsb_http_xfer {
  unsb_http *h;
  unsb_http_xfer *prev, *next;
  unsb_http_xfer *qnext;             /* the engine's queue */
  CURL *easy;
  int in_multi;                      /* added and not yet removed */
  int queued, queue_timeout;         /* waiting for a slot; its deadline passed there */
  int64_t opened_us, started_us, first_data_us, ended_us;   /* monotonic µs; 0 = not yet */
  int64_t deadline_ms;               /* opened + timeout, monotonic ms */
  unsb_token token;                  /* queued on the loop at the end */
  struct curl_slist *headers;
  unsb_http_stream stream;           /* copy; on_data NULL = buffered */
  int has_stream;
  unsb_http_response resp;
  size_t cap, max;
  int too_big, oom;
  int head_done, streaming, cancelled, paused;
  int done, rc;                      /* rc: libcurl's result once done */
  int connect_only;                  /* the request's */
  int body_fd;                       /* the request's body file, or -1 */
  int read_failed;                   /* reading body_fd failed (errno kept) */
  int read_errno;
  int held;                          /* connect_only and connected: kept in the multi
                                     ** handle (its connection lives there), slot freed */
  long timeout_ms;
  char host[UNSB_HTTP_HOST_MAX];
  char errbuf[CURL_ERROR_SIZE];
  size_t n_capture;
  char capture[UNSB_HTTP_CAPTURE_MAX][UNSB_HTTP_NAME_MAX];
};

/* Sets x's easy handle up for req (callbacks, options, headers). 0, or
** -1 with err (transport: memory or a refused option). */
int unsb_xfer_setup(unsb_http_xfer *x, const unsb_http_request *req, unsb_error *err);

/* The error of a transfer that ended badly (rc a CURLcode), named by
** host. Always -1. */
int unsb_xfer_fail(const unsb_http_xfer *x, int rc, unsb_error *err);

#endif
