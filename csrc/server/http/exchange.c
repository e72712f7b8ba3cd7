/*
** libmicrohttpd's request callback, as one small state machine per
** request (an "exchange"), and the handler threads.
**
** libmicrohttpd 0.9.75 calls us once when the headers are in, once per
** piece of body, and then again with no data whenever the request is
** complete (or, after a resume, still at the headers) and no response is
** queued. A response may be queued only in those no-data calls, and a
** connection left neither answered nor suspended is called again at once.
** So every no-data call ends in exactly one of: queue the reply, let the
** body flow, or suspend until a handler thread has something (decide()).
** Suspending and resuming happen only under h->mu with x->suspended kept
** in step, so a resume never reaches a connection that is not suspended
** or no longer exists (on_completed clears x->mc under the same lock).
**
** Handlers run on detached threads of their own, at most max_handlers at
** once (threads.c: beyond that a request waits in line for a while, then
** 503 + Retry-After; health probes have a few more threads of their
** own), and see only copies of the
** request, never libmicrohttpd's memory. The exchange is reference
** counted: libmicrohttpd's side, the handler thread and a streamed
** reply each hold one.
**
** No body is buffered before its headers are authenticated: a request
** with a body to buffer first goes to the router's header check
** (authorize) on a thread of its own, its connection suspended, so the
** server accepts none of the body meanwhile (what libmicrohttpd read past
** the headers stays in its connection buffer, bounded with the headers by
** UX_HTTP_CONN_MEMORY). A body whose headers did not authenticate is
** thrown away as it arrives, never kept.
*/
#include "server/http/http_int.h"
#include "server/http/upgrade.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/mem.h"

static ux_conn *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* ---------------------------------------------------------------- copies */

typedef struct hdr_copy {
  ux_kv *kv;
  size_t n, max, bytes;
  char *p;
} hdr_copy;

static enum MHD_Result count_hdr(void *cls, enum MHD_ValueKind kind, const char *k, const char *v) {
  (void)kind;
  hdr_copy *hc = cls;
  hc->max++;
  hc->bytes += strlen(k) + 1 + (v ? strlen(v) : 0) + 1;
  return MHD_YES;
}

static char *put_str(char **p, const char *s) {
  char *start = *p;
  size_t n = strlen(s) + 1;
  memcpy(start, s, n);
  *p += n;
  return start;
}

static enum MHD_Result copy_hdr(void *cls, enum MHD_ValueKind kind, const char *k, const char *v) {
  (void)kind;
  hdr_copy *hc = cls;
  if (hc->n >= hc->max) return MHD_NO;
  hc->kv[hc->n].name = put_str(&hc->p, k);
  hc->kv[hc->n].value = put_str(&hc->p, v ? v : "");
  hc->n++;
  return MHD_YES;
}

/* The declared Content-Length, -1 when none (or the body is chunked). */
static long long declared_length(const ux_req *r) {
  const char *te = ux_req_header(r, "Transfer-Encoding");
  const char *cl = ux_req_header(r, "Content-Length");
  if ((te && strcasecmp(te, "identity") != 0) || !cl) return -1;
  char *end;
  unsigned long long v = strtoull(cl, &end, 10);
  return end == cl || v > (unsigned long long)1 << 62 ? (1LL << 62) : (long long)v;
}

/* Decodes %XX in place (the transport keeps URLs raw for signing; query
** values are only read, never signed). A bad escape stays as it is. */
static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Returns 1 when a %00 was decoded: the C string then ends there. */
static int percent_decode(char *s) {
  char *o = s;
  int nul = 0;
  for (; *s; s++) {
    int hi, lo;
    if (*s == '%' && (hi = hexval(s[1])) >= 0 && (lo = hexval(s[2])) >= 0) {
      *o++ = (char)(hi * 16 + lo);
      nul |= hi == 0 && lo == 0;
      s += 2;
    } else *o++ = *s;
  }
  *o = '\0';
  return nul;
}

/* Copies the query arguments after the headers, in the same arena; 1
** when one of them held an encoded NUL (ux_req.query_nul). */
static int copy_query(struct MHD_Connection *c, hdr_copy *hc) {
  size_t before = hc->n;
  int nul = 0;
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, copy_hdr, hc);
  for (size_t i = before; i < hc->n; i++) {
    nul |= percent_decode(hc->kv[i].name);
    nul |= hc->kv[i].value && percent_decode(hc->kv[i].value);
  }
  return nul;
}

/* A new exchange with its own copy of method, path, peer, headers and
** query arguments. */
static ux_xchg *x_new(ux_http *h, struct MHD_Connection *c, ux_conn *cn, const char *url,
                      const char *method) {
  hdr_copy hc = { 0 };
  MHD_get_connection_values(c, MHD_HEADER_KIND, count_hdr, &hc);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_hdr, &hc);
  size_t fixed = strlen(method) + strlen(url) + strlen(cn->peer) + 3;
  ux_xchg *x = ux_xcalloc(1, sizeof *x);
  char *arena = ux_xmalloc(fixed + hc.bytes);
  ux_kv *kv = ux_xcalloc(hc.max ? hc.max : 1, sizeof *kv);
  pthread_condattr_t ca;
  int cond_ok = x && pthread_condattr_init(&ca) == 0;
  if (cond_ok) {
    cond_ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&x->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!x || !arena || !kv || !cond_ok) {
    free(x); free(arena); free(kv);
    return NULL;
  }
  hc.kv = kv;
  hc.p = arena;
  x->req.method = put_str(&hc.p, method);
  x->req.path = put_str(&hc.p, url);
  x->req.peer = put_str(&hc.p, cn->peer);
  MHD_get_connection_values(c, MHD_HEADER_KIND, copy_hdr, &hc);
  size_t nh = hc.n;
  x->req.query_nul = copy_query(c, &hc);
  x->h = h;
  x->mc = c;
  x->cn = cn;
  x->refs = 1;
  x->t0 = ux_now_ms();
  x->arena = arena;
  x->hdrs = kv;
  x->req.req_headers = kv;
  x->req.req_nheaders = nh;
  x->req.req_query = kv + nh;
  x->req.req_nquery = hc.n - nh;
  x->req.body = "";
  x->req.content_length = declared_length(&x->req);
  x->req.x = x;
  x->out_length = -1;
  x->up_fd = x->up_stop = -1;
  return x;
}

void ux_x_free(ux_xchg *x) {
  ux_reply_clear(&x->req.reply);
  free(x->body);
  free(x->in.buf);
  free(x->out.buf);
  free(x->arena);
  free(x->hdrs);
  pthread_cond_destroy(&x->cv);
  free(x);
}

void ux_x_release(ux_xchg *x) {
  ux_http *h = x->h;
  pthread_mutex_lock(&h->mu);
  int last = --x->refs == 0;
  pthread_mutex_unlock(&h->mu);
  if (last) ux_x_free(x);
}

/* -------------------------------------------------- suspend and resume */

void ux_x_suspend_locked(ux_xchg *x) {
  if (x->suspended || !x->mc || x->h->stopping == 2) return;
  MHD_suspend_connection(x->mc);
  x->suspended = 1;
}

void ux_x_wake_locked(ux_xchg *x) {
  if (!x->suspended || !x->mc) return;
  x->suspended = 0;
  MHD_resume_connection(x->mc);
  ux_conn *cn = x->cn;
  if (cn && cn->paused_since) {       /* backpressure pause over */
    long now = ux_now_ms();
    cn->paused_ms += now - cn->paused_since;
    cn->paused_since = 0;
  }
}

/* ------------------------------------------------------------- handlers */

/* JSON is serialised here, on the handler's thread, so libmicrohttpd's
** few event threads only ever wrap ready buffers. */
static void serialise(ux_req *r) {
  ux_reply *rep = &r->reply;
  if (!rep->status) ux_reply_error(r, 500, "internal_error", "no reply");
  if (!rep->json || rep->raw || rep->empty) return;
  size_t len;
  char *text = ux_json_dump(rep->json, &len);
  if (!text) {
    ux_reply_error(r, 500, "internal_error", "cannot serialise the reply");
    text = ux_json_dump(rep->json, &len);
    if (!text) return;
  }
  json_decref(rep->json);
  rep->json = NULL;
  rep->raw = text;
  rep->raw_len = len;
}

/* The header check (router.authorize) of x, whose connection stays
** suspended until it has decided. */
static void *auth_main(void *arg) {
  ux_xchg *x = arg;
  ux_http *h = x->h;
  ux_body_policy p = { .limit = x->limit };
  h->cfg.router.authorize(h->cfg.router.ctx, &x->req, &p);
  int refused = x->req.reply.status != 0;
  if (refused) serialise(&x->req);
  pthread_mutex_lock(&h->mu);
  x->auth_done = 1;
  x->discard = p.discard ? 1 : 0;
  if (refused) x->head_ready = 1;
  ux_x_wake_locked(x);
  ux_xchg *next = ux_x_handler_ended_locked(h);   /* the line's first gets this place */
  pthread_cond_broadcast(&h->drain_cv);
  int last = --x->refs == 0;
  pthread_mutex_unlock(&h->mu);
  if (last) ux_x_free(x);
  ux_x_start_next(next);              /* h is not touched after the unlock */
  return NULL;
}

static void *handler_main(void *arg) {
  ux_xchg *x = arg;
  ux_http *h = x->h;
  h->cfg.router.handle(h->cfg.router.ctx, &x->req);
  if (x->upgrade) ux_req_upgrade_close(&x->req);   /* a handler that forgot */
  int streamed;
  pthread_mutex_lock(&h->mu);
  streamed = x->stream_open;
  pthread_mutex_unlock(&h->mu);
  if (!streamed) serialise(&x->req);
  pthread_mutex_lock(&h->mu);
  if (x->stream_open && !x->stream_closed) x->stream_closed = 1;
  x->handler_done = 1;
  x->head_ready = 1;
  ux_x_wake_locked(x);
  ux_xchg *next = ux_x_handler_ended_locked(h);   /* the line's first gets this place */
  pthread_cond_broadcast(&h->drain_cv);
  int last = --x->refs == 0;
  pthread_mutex_unlock(&h->mu);
  if (last) ux_x_free(x);
  ux_x_start_next(next);              /* h is not touched after the unlock */
  return NULL;
}

/* Starts x's thread: its header check in the X_AUTH phase, else its
** handler (the caller took its place: threads.c). 0 or -1. */
int ux_x_spawn(ux_xchg *x) {
  return ux_http_thread_run(x->phase == X_AUTH ? auth_main : handler_main, x);
}

/* ------------------------------------------------------ the state machine */

/* The header check has let the body in: it flows into the buffer (or,
** discarded, is counted away). Under h->mu. */
static void body_begins_locked(ux_xchg *x) {
  x->phase = X_BODY;
  if (x->cn) ux_conn_body_start(x->cn, ux_now_ms());
}

/* The end of every no-data call: queue, let the body flow, or suspend. */
static enum MHD_Result decide(ux_http *h, ux_xchg *x, struct MHD_Connection *c) {
  pthread_mutex_lock(&h->mu);
  if (x->head_ready) {
    x->phase = X_QUEUED;
    pthread_mutex_unlock(&h->mu);
    return ux_respond(h, x, c);
  }
  if (h->stopping == 2) {
    x->phase = X_QUEUED;
    pthread_mutex_unlock(&h->mu);
    return ux_respond_error(h, x, c, 503, "shutting_down", "the server is shutting down");
  }
  if (x->no_thread) {                          /* waited for a thread in vain */
    x->phase = X_QUEUED;
    pthread_mutex_unlock(&h->mu);
    return ux_respond_error(h, x, c, 503, "server_busy", "too many requests in progress");
  }
  if (x->phase == X_STREAM_WAIT && x->want_body) {
    x->phase = X_STREAM_BODY;
    if (x->cn) ux_conn_body_start(x->cn, ux_now_ms());
    pthread_mutex_unlock(&h->mu);
    return MHD_YES;
  }
  if (x->phase == X_AUTH && x->auth_done) {    /* let in (a refusal is head_ready) */
    body_begins_locked(x);
    pthread_mutex_unlock(&h->mu);
    return MHD_YES;
  }
  ux_x_suspend_locked(x);
  pthread_mutex_unlock(&h->mu);
  return MHD_YES;
}

/* Hands x to a handler thread in `phase` (or to the line for one), then
** decides. */
static enum MHD_Result run(ux_http *h, ux_xchg *x, struct MHD_Connection *c, int phase) {
  pthread_mutex_lock(&h->mu);
  x->phase = phase;
  if (x->cn) x->cn->phase = C_BUSY;
  pthread_mutex_unlock(&h->mu);
  if (ux_x_admit_handler(h, x) < 0) {
    pthread_mutex_lock(&h->mu);
    x->phase = X_QUEUED;
    pthread_mutex_unlock(&h->mu);
    return ux_respond_error(h, x, c, 503, "server_busy", "too many requests in progress");
  }
  return decide(h, x, c);
}

/* 1 when a body follows the headers: a declared length, or chunked. */
static int body_coming(const ux_xchg *x) {
  const char *te = ux_req_header(&x->req, "Transfer-Encoding");
  return x->req.content_length > 0 || (x->req.content_length < 0 && te && strcasecmp(te, "identity"));
}

static enum MHD_Result first_call(ux_http *h, struct MHD_Connection *c, const char *url,
                                  const char *method, void **con_cls) {
  ux_conn *cn = conn_of(c);
  ux_xchg *x = cn ? x_new(h, c, cn, url, method) : NULL;
  if (!x) return MHD_NO;                       /* out of memory: close */
  *con_cls = x;
  x->con_slot = con_cls;
  pthread_mutex_lock(&h->mu);
  h->live++;
  cn->x = x;
  cn->phase = C_BUSY;
  x->req.stopping = h->stopping > 0;
  int abandoned = h->stopping == 2;
  pthread_mutex_unlock(&h->mu);
  const ux_http_router *rt = &h->cfg.router;
  if (rt->request_id) rt->request_id(rt->ctx, &x->req, x->request_id, sizeof x->request_id);
  if (!x->request_id[0] && ux_random_id(x->request_id, sizeof x->request_id, "req_", 8) < 0)
    return MHD_NO;
  x->req.request_id = x->request_id;
  if (abandoned) {                             /* the drain is over: no new handler */
    x->phase = X_QUEUED;
    return ux_respond_error(h, x, c, 503, "shutting_down", "the server is shutting down");
  }
  ux_body_policy p = { .limit = h->cfg.max_body };
  if (rt->admit) rt->admit(rt->ctx, &x->req, &p);
  if (x->req.reply.status) {                   /* refused before any body */
    x->phase = X_QUEUED;
    serialise(&x->req);
    return ux_respond(h, x, c);
  }
  x->limit = p.limit;
  x->streaming = p.stream ? 1 : 0;
  x->probe = p.probe ? 1 : 0;
  if (x->req.content_length >= 0 && (unsigned long long)x->req.content_length > x->limit) {
    x->req.body_overflow = 1;                  /* never read: libmicrohttpd closes after */
    return run(h, x, c, X_RUNNING);
  }
  if (x->streaming) {
    x->in.buf = ux_xmalloc(UX_HTTP_RING);
    x->in.cap = UX_HTTP_RING;
    return run(h, x, c, X_STREAM_WAIT);
  }
  if (rt->authorize && body_coming(x)) return run(h, x, c, X_AUTH);
  pthread_mutex_lock(&h->mu);
  body_begins_locked(x);
  pthread_mutex_unlock(&h->mu);
  return MHD_YES;
}

/* Keeps a buffered body, or counts it away once over the limit. */
static enum MHD_Result take_buffered(ux_xchg *x, const char *data, size_t n) {
  x->received += n;
  if (!x->req.body_overflow && x->received > x->limit) {
    x->req.body_overflow = 1;
    free(x->body);
    x->body = NULL;
    x->len = x->cap = 0;
  }
  if (x->req.body_overflow) {
    x->discarded += n;
    return x->discarded > UX_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
  }
  if (x->discard) {                            /* unauthenticated: never kept */
    x->unseen += n;
    return MHD_YES;
  }
  if (x->len + n + 1 > x->cap) {
    size_t cap = x->cap ? x->cap : 4096;
    while (cap < x->len + n + 1) cap *= 2;
    char *b = ux_xrealloc(x->body, cap);
    x->body = b;
    x->cap = cap;
  }
  memcpy(x->body + x->len, data, n);
  x->len += n;
  x->body[x->len] = '\0';
  return MHD_YES;
}

/* Body bytes while the header check runs: left with libmicrohttpd (the
** connection waits suspended), or thrown away after a refusal. */
static enum MHD_Result auth_data(ux_http *h, ux_xchg *x, size_t *size) {
  pthread_mutex_lock(&h->mu);
  int go = x->auth_done && !x->head_ready;
  if (go) body_begins_locked(x);
  else if (x->head_ready) {                     /* refused: only its answer is left */
    x->discarded += *size;
    *size = 0;
  } else ux_x_suspend_locked(x);
  int too_much = x->discarded > UX_HTTP_DISCARD_MAX;
  pthread_mutex_unlock(&h->mu);
  return too_much ? MHD_NO : MHD_YES;
}

static enum MHD_Result body_data(ux_http *h, ux_xchg *x, const char *data, size_t *size) {
  size_t n = *size;
  if (x->phase == X_AUTH) {
    enum MHD_Result rc = auth_data(h, x, size);
    if (x->phase != X_BODY || rc == MHD_NO) return rc;
  }
  if (x->phase == X_BODY) {                    /* only this thread touches it */
    enum MHD_Result rc = take_buffered(x, data, n);
    pthread_mutex_lock(&h->mu);
    if (x->cn) x->cn->body_bytes += n;
    pthread_mutex_unlock(&h->mu);
    *size = 0;
    return rc;
  }
  pthread_mutex_lock(&h->mu);
  if (h->stopping == 2) {
    pthread_mutex_unlock(&h->mu);
    return MHD_NO;
  }
  size_t used = 0;
  if (x->phase == X_STREAM_BODY && !x->handler_done && !x->req.body_overflow)
    used = ux_stream_feed_locked(x, data, n);
  if (x->phase != X_STREAM_BODY || x->handler_done || x->req.body_overflow) {
    used = n;                                  /* nobody will read it */
    x->discarded += n;
  }
  if (x->cn) x->cn->body_bytes += used;
  if (used < n) {                              /* ring full: backpressure */
    ux_x_suspend_locked(x);
    if (x->cn && x->suspended && !x->cn->paused_since) x->cn->paused_since = ux_now_ms();
  }
  int too_much = x->discarded > UX_HTTP_DISCARD_MAX;
  pthread_mutex_unlock(&h->mu);
  *size = n - used;
  return too_much ? MHD_NO : MHD_YES;
}

static enum MHD_Result later_call(ux_http *h, ux_xchg *x, struct MHD_Connection *c) {
  switch (x->phase) {
  case X_BODY:                                 /* the whole buffered body is in */
    if (x->body) {
      x->req.body = x->body;
      x->req.body_len = x->len;
    }
    x->req.body_discarded = x->unseen > 0;
    return run(h, x, c, X_RUNNING);
  case X_STREAM_BODY:                          /* the whole streamed body is in */
    pthread_mutex_lock(&h->mu);
    x->body_done = 1;
    x->phase = X_RUNNING;
    if (x->cn) x->cn->phase = C_BUSY;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&h->mu);
    return decide(h, x, c);
  case X_QUEUED:
    return MHD_NO;
  default:
    return decide(h, x, c);
  }
}

enum MHD_Result ux_x_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls) {
  (void)version;
  ux_http *h = cls;
  ux_xchg *x = *con_cls;
  if (!x) return first_call(h, c, url, method, con_cls);
  if (*size) return body_data(h, x, data, size);
  return later_call(h, x, c);
}

void ux_x_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe) {
  ux_http *h = cls;
  if (*con_cls == &ux_upgrade_done) {          /* given back: upgrade.c did the rest */
    *con_cls = NULL;
    return;
  }
  ux_xchg *x = *con_cls;
  ux_conn *cn = conn_of(c);
  long long tcp = cn && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK
                  ? ux_tcp_bytes_received(cn->fd) : -1;
  long now = ux_now_ms();
  pthread_mutex_lock(&h->mu);
  if (x) {
    x->mc = NULL;
    x->cn = NULL;
    x->suspended = 0;
    x->gone = 1;
    pthread_cond_broadcast(&x->cv);
    h->live--;
    pthread_cond_broadcast(&h->drain_cv);
  }
  if (cn) {                                    /* the next request's headers */
    cn->x = NULL;
    cn->phase = C_HEADERS;
    cn->kept_alive = 1;
    cn->authed = x && x->req.authenticated;     /* the connection budget's order */
    cn->idle_since = now;
    cn->tcp_base = tcp >= 0 ? (unsigned long long)tcp : 0;
    cn->since_ms = tcp >= 0 ? 0 : now;
    cn->paused_since = 0;
  }
  pthread_mutex_unlock(&h->mu);
  *con_cls = NULL;
  if (x) ux_x_release(x);
}
