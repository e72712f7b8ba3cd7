/*
** The HTTP transport on libmicrohttpd, as a reusable listener: each
** ux_http_start makes one listener with its own address, limits and
** router, so one process can serve the execution API and the Control
** Plane on two ports. Handlers stay synchronous and blocking: each
** request runs on a thread of its own once its headers (streaming-body
** routes) or its whole body (all others) are in, while idle and slow
** sockets cost no thread. See docs/internals.md, "Connections".
*/
#ifndef UX_HTTP_H
#define UX_HTTP_H

#include <stddef.h>

#include "server/http/reply.h"

typedef struct ux_http ux_http;

/* How a route takes its body; filled by the router's admit hook. */
typedef struct ux_body_policy {
  int stream;                 /* 1: the handler starts when the headers are
                              ** in and reads with ux_req_read_body */
  unsigned long long limit;   /* largest body; a declared larger one is not
                              ** read, a chunked one is cut: r->body_overflow */
  int discard;                /* set by authorize: read the body and throw it
                              ** away unseen (r->body_discarded) */
  int probe;                  /* a health probe: it may use the handler
                              ** threads kept for probes (limits.h) */
} ux_body_policy;

typedef struct ux_http_router {
  /* Runs on the request's own thread; must leave a reply in r->reply (a
  ** missing one becomes 500) or open a stream (stream.h). */
  void (*handle)(void *ctx, ux_req *r);
  /* Optional; runs on libmicrohttpd's thread when the headers are in and
  ** must not block. Chooses the body policy (default: buffered, limit
  ** max_body); setting r->reply answers at once, before any body. */
  void (*admit)(void *ctx, ux_req *r, ux_body_policy *p);
  /* Optional; the X-Request-Id of r (it can read r's headers). Default
  ** "req_" + 16 hex. */
  void (*request_id)(void *ctx, const ux_req *r, char *out, size_t outlen);
  void *ctx;
  /* Optional; the header check of a request with a body to buffer: runs
  ** on a thread of its own (it may block, e.g. on the store) after admit,
  ** while the connection is suspended, so no byte of the body is accepted
  ** before it has decided. It authenticates what the headers allow and
  ** either leaves r->reply empty (the body is buffered, then handle runs),
  ** sets r->reply (answered at once; the body is never read), or sets
  ** p->discard (the body is read and thrown away as it comes, then handle
  ** runs with r->body_discarded: for answers that must not tell, by
  ** reading or not reading, what the headers alone said). */
  void (*authorize)(void *ctx, ux_req *r, ux_body_policy *p);
} ux_http_router;

typedef struct ux_http_config {
  const char *listen;         /* "HOST:PORT" or "[V6]:PORT" */
  unsigned max_connections;   /* libmicrohttpd's cap; 7/8 of it is the budget */
  unsigned idle_timeout_s;
  long header_deadline_ms;
  long body_grace_ms;
  unsigned long body_min_rate;  /* bytes per second */
  unsigned max_handlers;
  size_t max_body;            /* default limit of buffered bodies */
  ux_http_router router;
} ux_http_config;

/* Fills cfg with the limits.h defaults for one of `listeners` listeners
** under the NOFILE limit `nofile`; listen, max_body and router are left
** for the caller. */
void ux_http_config_default(ux_http_config *cfg, unsigned long long nofile, unsigned listeners);

/* Lowers cfg's connection cap to `want` (--max-connections; 0 keeps it):
** never above what the NOFILE limit holds. */
void ux_http_config_connections(ux_http_config *cfg, unsigned want);

/* Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the soft
** limit now in force. */
unsigned long long ux_http_raise_nofile(void);

/* Starts listening. url gets "http://HOST:PORT" with the port really
** bound. NULL with err set on failure. cfg is copied. */
ux_http *ux_http_start(const ux_http_config *cfg, char *url, size_t urllen,
                       char *err, size_t errlen);

/* Stops accepting connections; requests in flight continue, and later
** ones on kept-alive connections see r->stopping and get Connection: close. */
void ux_http_quiesce(ux_http *h);

/* Waits for requests in flight until deadline_ms (ux_now_ms clock), then
** cuts what is left (blocked handlers' clients get 503, streams and body
** readers see -1) and stops. Never waits for a handler thread: returns
** how many are still running, and then leaves h allocated for them (the
** process is about to exit); 0 means everything was freed. */
unsigned ux_http_stop(ux_http *h, long deadline_ms);

#endif
