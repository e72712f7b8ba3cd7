/*
** HTTP 101 upgrades on libmicrohttpd 0.9.75 (MHD_ALLOW_UPGRADE). The 101
** is a reply like any other: the handler marks it, and the event thread
** queues MHD_create_response_for_upgrade in decide(). After the headers
** are sent, libmicrohttpd suspends the connection internally and calls
** on_upgrade on its event thread, which must not block: it only records
** the socket and wakes the handler. The exchange stays alive meanwhile
** through the handler's own reference, and the handler waits until
** either on_upgrade ran or libmicrohttpd completed the request (a client
** gone before the 101 went out), after which on_upgrade can no longer
** come. The socket is given back with MHD_UPGRADE_ACTION_CLOSE exactly
** once. On stop, ux_http_stop tells each owner (an eventfd), later cuts
** the sockets (shutdown(2)) and waits for them to be given back before
** libmicrohttpd is stopped.
*/
#include "server/http/upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/http/http_int.h"

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
  (void)c;
  (void)con_cls;
  ux_xchg *x = cls;
  char *copy = malloc(extra_len ? extra_len : 1);
  if (copy && extra_len) memcpy(copy, extra, extra_len);
  int flags = fcntl(sock, F_GETFL);
  int nb = flags >= 0 && fcntl(sock, F_SETFL, flags | O_NONBLOCK) == 0;
  /* A terminal sends keystrokes and echoes as small frames: without
  ** TCP_NODELAY, Nagle holds each one until the previous is acknowledged
  ** (a delayed ACK of up to 40 ms on every round trip). */
  int one = 1;
  (void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  pthread_mutex_lock(&x->h->mu);
  x->urh = urh;
  x->up_fd = sock;
  x->up_extra = copy;
  x->up_extra_len = extra_len;
  x->up_state = copy && nb ? UP_HANDED : UP_FAILED;
  x->up_next = x->h->upgraded;                  /* listed until given back */
  if (x->up_next) x->up_next->up_prev = x;
  x->up_prev = NULL;
  x->h->upgraded = x;
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->h->mu);
}

struct MHD_Response *ux_upgrade_response(ux_xchg *x) {
  return MHD_create_response_for_upgrade(on_upgrade, x);
}

/* Waits on x->cv for at most 250 ms (the monotonic clock). */
static void wait_a_while(ux_xchg *x) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_nsec += 250 * 1000000L;
  if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  pthread_cond_timedwait(&x->cv, &x->h->mu, &until);
}

int ux_req_upgrade(ux_req *r, const char *protocol, ux_upgraded *up) {
  ux_xchg *x = r ? r->x : NULL;
  if (!x || !protocol || !up || ux_reply_header(r, "Upgrade", protocol) < 0) return -1;
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) {
    ux_reply_error(r, 500, "internal_error", "cannot make an eventfd");
    return -1;
  }
  ux_http *h = x->h;
  pthread_mutex_lock(&h->mu);
  int refused = x->head_ready || x->stream_open || h->stopping;
  pthread_mutex_unlock(&h->mu);
  if (refused) {                                /* an ordinary reply then */
    close(efd);
    ux_reply_error(r, 503, "shutting_down", "the server is shutting down");
    r->reply.retry_after = 1;
    return -1;
  }
  ux_reply *rep = &r->reply;
  if (rep->json) json_decref(rep->json);
  free(rep->raw);
  rep->json = NULL;
  rep->raw = NULL;
  rep->empty = 1;
  rep->status = 101;
  pthread_mutex_lock(&h->mu);
  x->upgrade = 1;
  x->up_state = UP_WAITING;
  x->up_fd = -1;
  x->up_stop = efd;
  x->head_ready = 1;
  ux_x_wake_locked(x);
  /* on_upgrade comes, or libmicrohttpd completes the request (x->mc NULL)
  ** without it; its own timeouts and its stop bound this wait */
  while (x->up_state == UP_WAITING && x->mc) wait_a_while(x);
  int handed = x->up_state == UP_HANDED;
  if (handed) {
    up->fd = x->up_fd;
    up->extra = (const unsigned char *)x->up_extra;
    up->extra_len = x->up_extra_len;
    up->stop_fd = x->up_stop;
    if (h->stopping) {                          /* it stops already: say so at once */
      uint64_t one = 1;
      if (write(efd, &one, sizeof one) < 0) { /* a full counter is signalled anyway */ }
    }
  }
  pthread_mutex_unlock(&h->mu);
  if (!handed) ux_req_upgrade_close(r);         /* a handed-over but unusable socket */
  return handed ? 0 : -1;
}

char ux_upgrade_done;

/* What ux_x_on_completed does for a request, done here for an upgraded
** one about to be given back: libmicrohttpd 0.9.75 sends that notice
** while it holds its cleanup mutex, which MHD_resume_connection (called
** under h->mu) also takes, so the notice must not wait for h->mu. The
** connection is suspended inside libmicrohttpd until the give-back, so
** nothing there reads its con_cls meanwhile. Under h->mu. */
static void completed_locked(ux_xchg *x) {
  if (!x->mc) return;                           /* the notice came already */
  x->mc = NULL;
  x->suspended = 0;
  x->gone = 1;
  x->refs--;                                    /* libmicrohttpd's: the handler still holds one */
  x->h->live--;
  if (x->cn) {
    x->cn->x = NULL;
    x->cn = NULL;
  }
  *x->con_slot = &ux_upgrade_done;
}

void ux_req_upgrade_close(ux_req *r) {
  ux_xchg *x = r ? r->x : NULL;
  if (!x) return;
  ux_http *h = x->h;
  pthread_mutex_lock(&h->mu);
  struct MHD_UpgradeResponseHandle *urh = NULL;
  if ((x->up_state == UP_HANDED || x->up_state == UP_FAILED) && x->urh) urh = x->urh;
  if (x->up_state == UP_HANDED || x->up_state == UP_FAILED) {
    if (x->up_prev) x->up_prev->up_next = x->up_next;
    else h->upgraded = x->up_next;
    if (x->up_next) x->up_next->up_prev = x->up_prev;
    x->up_prev = x->up_next = NULL;
  }
  if (x->up_state != UP_NONE) x->up_state = UP_CLOSED;
  x->urh = NULL;
  x->up_fd = -1;
  int efd = x->up_stop;
  x->up_stop = -1;
  free(x->up_extra);
  x->up_extra = NULL;
  x->up_extra_len = 0;
  /* a handler left behind by the stop (ux_http_stop returned with it
  ** still running) must not reach a daemon that is gone */
  if (urh && h->mhd_stopping) urh = NULL;
  if (urh) {
    h->up_closing++;
    completed_locked(x);
  }
  pthread_cond_broadcast(&h->drain_cv);
  pthread_mutex_unlock(&h->mu);
  if (efd > 0) close(efd);
  if (!urh) return;
  if (MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE) != MHD_YES)
    fprintf(stderr, "unsandboxd: an upgraded connection could not be closed\n");
  pthread_mutex_lock(&h->mu);
  h->up_closing--;
  pthread_cond_broadcast(&h->drain_cv);
  pthread_mutex_unlock(&h->mu);
}

void ux_upgrade_bar_locked(ux_http *h) {
  h->mhd_stopping = 1;
  long deadline = ux_now_ms() + 1000;           /* each call is short: this is a formality */
  while (h->up_closing && ux_now_ms() < deadline) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 10 * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&h->drain_cv, &h->mu, &until);
  }
}

void ux_upgrade_stop_locked(ux_http *h, int cut) {
  for (ux_xchg *x = h->upgraded; x; x = x->up_next) {
    uint64_t one = 1;
    if (x->up_stop > 0 && write(x->up_stop, &one, sizeof one) < 0 && errno != EAGAIN)
      fprintf(stderr, "unsandboxd: cannot signal a terminal to stop: %s\n", strerror(errno));
    if (cut && x->up_fd >= 0) shutdown(x->up_fd, SHUT_RDWR);
  }
}

void ux_upgrade_drain_locked(ux_http *h, long deadline_ms) {
  while (h->upgraded) {
    long left = deadline_ms - ux_now_ms();
    if (left <= 0) break;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (left > 100) left = 100;
    until.tv_nsec += left * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&h->drain_cv, &h->mu, &until);
  }
}
