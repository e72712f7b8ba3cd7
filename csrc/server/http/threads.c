/*
** Who gets a handler thread. At most max_handlers requests are handled at
** once (health probes, marked by the router's admit, have
** UX_HTTP_PROBE_RESERVE threads more). A request that finds them all busy
** does not fail at once: it waits in line, its connection suspended, in
** arrival order, and takes the next thread that ends; only one that
** waited UX_HTTP_WAIT_MS, or that finds UX_HTTP_MAX_WAITING already in
** line (or UX_HTTP_WAIT_BYTES of their buffered bodies), gets 503
** server_busy. So a burst that a party's share refuses
** (429, in a millisecond each) holds the threads only for those
** milliseconds, and the requests of others that arrive with it are
** answered a little later instead of turned away.
**
** The line holds a reference to each exchange in it (the handler takes it
** over). A thread that ends hands its place to the first of the line
** while it still holds h->mu, so h->running never drops to 0 (and the
** listener is never freed, http.c) while a request is being handed on;
** everything here runs under h->mu but the thread creation.
*/
#include "server/http/http_int.h"

#include "server/fsutil.h"

/* Appends x to the line; under h->mu. */
static void enqueue_locked(ux_http *h, ux_xchg *x) {
  x->waiting = 1;
  x->wait_since = ux_now_ms();
  x->wait_next = NULL;
  x->refs++;
  if (h->wait_tail) h->wait_tail->wait_next = x; else h->wait_head = x;
  h->wait_tail = x;
  h->waiting++;
  h->waiting_bytes += x->len;
}

/* The first of the line, taken off it (its reference goes with it). */
static ux_xchg *dequeue_locked(ux_http *h) {
  ux_xchg *x = h->wait_head;
  if (!x) return NULL;
  h->wait_head = x->wait_next;
  if (!h->wait_head) h->wait_tail = NULL;
  x->wait_next = NULL;
  x->waiting = 0;
  h->waiting--;
  h->waiting_bytes -= x->len;
  return x;
}

int ux_x_admit_handler(ux_http *h, ux_xchg *x) {
  pthread_mutex_lock(&h->mu);
  unsigned cap = h->cfg.max_handlers + (x->probe ? UX_HTTP_PROBE_RESERVE : 0);
  if (h->running >= cap) {
    int wait = !x->probe && h->waiting < UX_HTTP_MAX_WAITING && h->stopping < 2 &&
               h->waiting_bytes + x->len <= UX_HTTP_WAIT_BYTES;
    if (wait) enqueue_locked(h, x);
    pthread_mutex_unlock(&h->mu);
    return wait ? 1 : -1;
  }
  h->running++;
  x->refs++;                          /* the handler's */
  pthread_mutex_unlock(&h->mu);
  if (ux_x_spawn(x) == 0) return 0;
  pthread_mutex_lock(&h->mu);
  h->running--;
  x->refs--;                          /* libmicrohttpd's reference remains */
  pthread_cond_broadcast(&h->drain_cv);
  pthread_mutex_unlock(&h->mu);
  return -1;
}

ux_xchg *ux_x_handler_ended_locked(ux_http *h) {
  /* a place above the common cap (a probe's, kept for probes) is not
  ** the line's: running counts the ending thread still */
  ux_xchg *next = h->stopping < 2 && h->running <= h->cfg.max_handlers ? dequeue_locked(h) : NULL;
  if (!next) h->running--;            /* else the thread's place is next's */
  return next;
}

void ux_x_start_next(ux_xchg *x) {
  while (x && ux_x_spawn(x) != 0) {
    /* h is alive: running still counts x's place */
    ux_http *h = x->h;
    pthread_mutex_lock(&h->mu);
    x->no_thread = 1;                 /* no thread after all: its 503 */
    ux_x_wake_locked(x);
    int last = --x->refs == 0;
    ux_xchg *next = ux_x_handler_ended_locked(h);
    pthread_cond_broadcast(&h->drain_cv);
    pthread_mutex_unlock(&h->mu);
    if (last) ux_x_free(x);
    x = next;
  }
}

void ux_x_wait_expire_locked(ux_http *h, long now) {
  while (h->wait_head && now - h->wait_head->wait_since >= UX_HTTP_WAIT_MS) {
    ux_xchg *x = dequeue_locked(h);
    x->no_thread = 1;
    ux_x_wake_locked(x);              /* decide answers 503 */
    /* libmicrohttpd's reference outlives the line's: the connection is
    ** suspended until now, so it cannot have been completed */
    x->refs--;
  }
}

ux_xchg *ux_x_wait_take_all_locked(ux_http *h) {
  ux_xchg *all = h->wait_head;
  for (ux_xchg *x = all; x; x = x->wait_next) x->waiting = 0;
  h->wait_head = h->wait_tail = NULL;
  h->waiting = 0;
  h->waiting_bytes = 0;
  return all;
}
