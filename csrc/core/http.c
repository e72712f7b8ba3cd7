/*
** HTTP engine on libcurl's multi_socket API (see http.h): the multi
** handle, its place in the shared loop, the slots of max_concurrency and
** the queue behind them, and the open transfers. What happens to one
** transfer's bytes is http_xfer.c's.
**
** A caller that blocks on a transfer drives the same loop until it is
** done (unsb_http_drive), so streams it holds open keep flowing while it
** waits. Nothing here runs inside a libcurl callback except what
** those callbacks themselves do; the loop's busy mark covers the inside,
** and every entry point refuses to run there ("busy"), because libcurl may
** not be re-entered from its own callbacks.
*/
#include "core/http.h"
#include "core/http_xfer.h"
#include "core/clock.h"
#include "core/interrupt.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
** process-wide initialisation
** ------------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int unsb_http_global_init(void) {
  pthread_once(&global_once, global_init);
  return global_rc == CURLE_OK ? 0 : -1;
}

static int busy(unsb_error *err) {
  return unsb_fail(err, UNSB_EVALIDATION,
                   "the HTTP engine is busy: a request from inside a transfer's callback");
}

/* ---------------------------------------------------------------------
** the engine in the loop
** ------------------------------------------------------------------- */

static unsb_http *engine_of(unsb_loop_source *s) {
  return (unsb_http *)((char *)s - offsetof(unsb_http, src));
}

/* The loop kicks the engine at its curl timeout or its queue's first
** deadline, whichever is sooner. */
static void reschedule(unsb_http *h) {
  int64_t due = h->curl_due;
  if (h->qhead && (due < 0 || h->qhead->deadline_ms < due)) due = h->qhead->deadline_ms;
  h->src.due_ms = due;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp) {
  unsb_http *h = ud;
  short ev = what == CURL_POLL_IN ? POLLIN : what == CURL_POLL_OUT ? POLLOUT
           : what == CURL_POLL_INOUT ? POLLIN | POLLOUT : 0;
  (void)easy;
  (void)sockp;
  return unsb_loop_watch(h->loop, &h->src, (int)fd, ev);
}

static int on_timer(CURLM *multi, long timeout_ms, void *ud) {
  unsb_http *h = ud;
  (void)multi;
  h->curl_due = timeout_ms < 0 ? -1 : unsb_monotonic_ms() + timeout_ms;
  reschedule(h);
  return 0;
}

static void promote(unsb_http *h);

/* Marks the transfers libcurl reports finished and takes them out of the
** multi handle (their connections go back to its pool), then gives their
** slots to queued transfers. */
static void collect(unsb_http *h) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(h->multi, &left))) {
    unsb_http_xfer *x = NULL;
    CURL *easy = m->easy_handle;
    int rc = m->data.result;
    if (m->msg != CURLMSG_DONE) continue;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    if (!x) continue;
    if (x->connect_only && rc == CURLE_OK) {
      /* removing it would close the connection its caller is about to use */
      x->held = 1;
    } else {
      curl_multi_remove_handle(h->multi, easy);   /* m is invalid from here */
      x->in_multi = 0;
    }
    x->done = 1;
    x->rc = rc;
    x->ended_us = unsb_monotonic_us();
    h->running--;
    unsb_loop_notify(h->loop, x->token);
  }
  promote(h);
}

static void act(unsb_http *h, curl_socket_t fd, int mask) {
  int running;
  unsb_loop_enter(h->loop);
  curl_multi_socket_action(h->multi, fd, mask, &running);
  unsb_loop_leave(h->loop);
  collect(h);
}

static void on_fd(unsb_loop_source *s, int fd, short revents) {
  int mask = 0;
  if (revents & POLLIN) mask |= CURL_CSELECT_IN;
  if (revents & POLLOUT) mask |= CURL_CSELECT_OUT;
  if (revents & (POLLERR | POLLHUP | POLLNVAL)) mask |= CURL_CSELECT_ERR;
  act(engine_of(s), (curl_socket_t)fd, mask);
}

static void on_due(unsb_loop_source *s) {
  unsb_http *h = engine_of(s);
  if (h->curl_due >= 0 && h->curl_due <= unsb_monotonic_ms()) {
    h->curl_due = -1;
    act(h, CURL_SOCKET_TIMEOUT, 0);
  } else {
    promote(h);                  /* expires what waited in the queue too long */
  }
  reschedule(h);
}

/* ---------------------------------------------------------------------
** construction
** ------------------------------------------------------------------- */

static int setup_multi(unsb_http *h) {
  int bad = 0;
#define MSET(opt, val) (bad |= curl_multi_setopt(h->multi, opt, val) != CURLM_OK)
  MSET(CURLMOPT_SOCKETFUNCTION, on_socket);
  MSET(CURLMOPT_SOCKETDATA, h);
  MSET(CURLMOPT_TIMERFUNCTION, on_timer);
  MSET(CURLMOPT_TIMERDATA, h);
  MSET(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  /* keep a connection per slot alive between bursts */
  MSET(CURLMOPT_MAXCONNECTS, (long)h->cap);
#undef MSET
  return bad ? -1 : 0;
}

unsb_http *unsb_http_new(const unsb_http_config *cfg, unsb_error *err) {
  unsb_http *h;
  if (unsb_http_global_init() != 0) {
    unsb_fail(err, UNSB_ETRANSPORT, "libcurl initialisation failed");
    return NULL;
  }
  if (cfg->max_concurrency < 0 || cfg->max_concurrency > UNSB_HTTP_MAX_CONCURRENCY) {
    unsb_fail(err, UNSB_EVALIDATION, "max_concurrency must be from 1 to %d",
              UNSB_HTTP_MAX_CONCURRENCY);
    return NULL;
  }
  if (!(h = calloc(1, sizeof *h))) goto oom;
  h->cap = cfg->max_concurrency > 0 ? cfg->max_concurrency : UNSB_HTTP_DEFAULT_CONCURRENCY;
  h->max_idle = h->cap < UNSB_HTTP_IDLE_MAX ? h->cap : UNSB_HTTP_IDLE_MAX;
  h->curl_due = h->src.due_ms = -1;
  h->src.on_fd = on_fd;
  h->src.on_due = on_due;
  h->loop = cfg->loop ? unsb_loop_ref(cfg->loop) : unsb_loop_new(err);
  if (!h->loop) {
    free(h);
    return NULL;
  }
  unsb_loop_add(h->loop, &h->src);
  unsb_loop_unref(h->loop);      /* the source's reference is the engine's */
  h->idle = calloc((size_t)h->max_idle, sizeof *h->idle);
  h->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
  if (!h->idle || (cfg->ca_file && !h->ca_file)) {
    unsb_http_free(h);
    goto oom;
  }
  h->connect_timeout_ms = cfg->connect_timeout_ms;
  h->max_response = cfg->max_response;
  if (!(h->multi = curl_multi_init()) || setup_multi(h) != 0) {
    unsb_http_free(h);
    unsb_fail(err, UNSB_ETRANSPORT, "cannot create a libcurl handle");
    return NULL;
  }
  return h;
oom:
  unsb_fail(err, UNSB_ENOMEM, "out of memory");
  return NULL;
}

void unsb_http_free(unsb_http *h) {
  if (!h) return;
  h->cap = 0;                    /* closing one must not start a queued one */
  while (h->open) unsb_http_close(h->open);
  for (int i = 0; i < h->n_idle; i++) curl_easy_cleanup(h->idle[i]);
  free(h->spare);
  if (h->multi) curl_multi_cleanup(h->multi);
  unsb_loop_remove(h->loop, &h->src);   /* may free the loop */
  free(h->idle);
  free(h->ca_file);
  free(h);
}

unsb_loop *unsb_http_loop(const unsb_http *h) { return h->loop; }

void unsb_http_response_free(unsb_http_response *resp) {
  if (!resp) return;
  free(resp->body);
  free(resp->request_id);
  free(resp->content_type);
  for (size_t i = 0; i < UNSB_HTTP_CAPTURE_MAX; i++) free(resp->captured[i]);
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
}

/* CR or LF in a header line would let a value start a new header. */
static int check_request(const unsb_http_request *req, unsb_error *err) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (!req->headers[i] || strpbrk(req->headers[i], "\r\n"))
      return unsb_fail(err, UNSB_EVALIDATION, "header line %zu contains CR or LF", i + 1);
  if (req->stream && !req->stream->on_data)
    return unsb_fail(err, UNSB_EVALIDATION, "a streamed request needs on_data");
  if (req->n_capture > UNSB_HTTP_CAPTURE_MAX)
    return unsb_fail(err, UNSB_EVALIDATION, "at most %d response headers can be kept",
                     UNSB_HTTP_CAPTURE_MAX);
  for (size_t i = 0; i < req->n_capture; i++)
    if (!req->capture[i] || !req->capture[i][0] || strlen(req->capture[i]) >= UNSB_HTTP_NAME_MAX)
      return unsb_fail(err, UNSB_EVALIDATION, "response header name %zu is empty or too long", i + 1);
  if (req->timeout_ms <= 0) return unsb_fail(err, UNSB_EVALIDATION, "timeout must be positive");
  return 0;
}

/* ---------------------------------------------------------------------
** slots and the queue
** ------------------------------------------------------------------- */

/* Puts x into the multi handle with what is left of its timeout. */
static void start(unsb_http *h, unsb_http_xfer *x, int64_t now_ms) {
  x->queued = 0;
  x->started_us = unsb_monotonic_us();
  curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)(x->deadline_ms - now_ms));
  if (curl_multi_add_handle(h->multi, x->easy) == CURLM_OK) {
    x->in_multi = 1;
    h->running++;
    return;
  }
  x->done = 1;                   /* reported as a transport error */
  x->rc = CURLE_FAILED_INIT;
  x->ended_us = unsb_monotonic_us();
  unsb_loop_notify(h->loop, x->token);
}

/* Fills free slots from the queue, oldest first; ends what waited past
** its deadline there (nothing was sent). */
static void promote(unsb_http *h) {
  int64_t now = unsb_monotonic_ms();
  while (h->qhead && (h->running < h->cap || h->qhead->deadline_ms <= now)) {
    unsb_http_xfer *x = h->qhead;
    h->qhead = x->qnext;
    if (!h->qhead) h->qtail = NULL;
    x->qnext = NULL;
    if (x->deadline_ms <= now) {
      x->queued = 0;
      x->done = x->queue_timeout = 1;
      x->rc = CURLE_OPERATION_TIMEDOUT;
      x->ended_us = unsb_monotonic_us();
      unsb_loop_notify(h->loop, x->token);
    } else {
      start(h, x, now);
    }
  }
  reschedule(h);
}

static void unqueue(unsb_http *h, unsb_http_xfer *x) {
  unsb_http_xfer **p = &h->qhead, *prev = NULL;
  for (; *p && *p != x; p = &(*p)->qnext) prev = *p;
  if (!*p) return;
  *p = x->qnext;
  if (h->qtail == x) h->qtail = prev;
  x->qnext = NULL;
  x->queued = 0;
}

/* ---------------------------------------------------------------------
** transfers
** ------------------------------------------------------------------- */

unsb_http_xfer *unsb_http_open(unsb_http *h, const unsb_http_request *req, unsb_error *err) {
  unsb_http_xfer *x;
  if (unsb_loop_busy(h->loop)) { busy(err); return NULL; }
  if (check_request(req, err) != 0) return NULL;
  /* the struct of the last transfer closed, when there is one (a call
  ** after a call reuses it: no allocation of a kilobyte and more each) */
  if ((x = h->spare)) {
    h->spare = NULL;
    memset(x, 0, sizeof *x);
  } else if (!(x = calloc(1, sizeof *x))) {
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  x->h = h;
  x->opened_us = unsb_monotonic_us();
  x->deadline_ms = unsb_monotonic_ms() + req->timeout_ms;
  x->easy = h->n_idle > 0 ? h->idle[--h->n_idle] : curl_easy_init();
  /* linked first, so unsb_http_close can undo any step below */
  x->next = h->open;
  if (h->open) h->open->prev = x;
  h->open = x;
  if (!x->easy) {
    unsb_fail(err, UNSB_ETRANSPORT, "cannot create a libcurl handle");
  } else if (unsb_xfer_setup(x, req, err) == 0) {
    x->queued = 1;
    if (h->qtail) h->qtail->qnext = x;
    else h->qhead = x;
    h->qtail = x;
    promote(h);                  /* starts at once when a slot is free */
    return x;
  }
  unsb_http_close(x);
  return NULL;
}

int unsb_http_done(const unsb_http_xfer *x) { return x->done; }
unsb_http *unsb_http_of(const unsb_http_xfer *x) { return x->h; }

void unsb_http_notify(unsb_http_xfer *x, unsb_token tok) {
  x->token = tok;
  if (x->done) unsb_loop_notify(x->h->loop, tok);
}

void unsb_http_resume(unsb_http_xfer *x) {
  if (!x->paused || x->done || unsb_loop_busy(x->h->loop)) return;
  x->paused = 0;
  /* libcurl hands the held bytes to on_body from inside this call */
  unsb_loop_enter(x->h->loop);
  curl_easy_pause(x->easy, CURLPAUSE_CONT);
  unsb_loop_leave(x->h->loop);
}

int unsb_http_result(unsb_http_xfer *x, unsb_http_response *resp, unsb_error *err) {
  char *ctype = NULL;
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
  if (!x->done) return unsb_fail(err, UNSB_EVALIDATION, "the transfer has not ended yet");
  if (x->rc != CURLE_OK || x->oom) return unsb_xfer_fail(x, x->rc, err);
  *resp = x->resp;
  memset(&x->resp, 0, sizeof x->resp);
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp->status);
  curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &resp->new_connections);
  unsb_http_timing_of(x, &resp->timing);
  if (curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
    resp->content_type = strdup(ctype);
  if (!resp->body) resp->body = calloc(1, 1);   /* always a string, maybe empty */
  if (!resp->body || (ctype && !resp->content_type)) {
    unsb_http_response_free(resp);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}

void unsb_http_close(unsb_http_xfer *x) {
  unsb_http *h;
  if (!x) return;
  h = x->h;
  /* removing a running transfer aborts it and closes its connection (a
  ** held one's slot was given back when it connected) */
  if (x->in_multi) {
    curl_multi_remove_handle(h->multi, x->easy);
    if (!x->held) h->running--;
  }
  if (x->queued) unqueue(h, x);
  if (!x->done) unsb_loop_notify(h->loop, x->token);   /* its waiter must look again */
  if (x->prev) x->prev->next = x->next;
  else h->open = x->next;
  if (x->next) x->next->prev = x->prev;
  if (x->easy) {
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
    if (h->n_idle < h->max_idle) h->idle[h->n_idle++] = x->easy;
    else curl_easy_cleanup(x->easy);
  }
  curl_slist_free_all(x->headers);
  unsb_http_response_free(&x->resp);
  if (!h->spare) h->spare = x;
  else free(x);
  if (!unsb_loop_busy(h->loop)) promote(h);   /* a slot may have come free */
}

/* ---------------------------------------------------------------------
** blocking on one transfer
** ------------------------------------------------------------------- */

int unsb_http_drive(unsb_http *h, unsb_http_xfer *x, unsb_error *err) {
  if (unsb_loop_busy(h->loop)) return busy(err);
  for (;;) {
    if (x->done) return 0;
    if (unsb_loop_step(h->loop, UNSB_SLICE_MS, err) != 0) return -1;
    if (x->done) return 0;
    if (unsb_interrupt_take())
      return unsb_fail(err, UNSB_EINTERRUPTED, "request to %s interrupted", x->host);
  }
}
