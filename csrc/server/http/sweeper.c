/*
** The connection registry and the sweeper thread that enforces what
** libmicrohttpd's idle timeout cannot: its timer restarts on every byte,
** so a client trickling one byte a second would hold a connection
** forever. Every UX_HTTP_SWEEP_MS the sweeper checks each connection:
**   - waiting for headers: they must be complete header_deadline_ms after
**     the connection was accepted, or, on a kept-alive connection, after
**     the first byte of the next request (the kernel's byte count,
**     TCP_INFO, tells when that came; idle kept-alive connections are left
**     to the idle timeout);
**   - receiving a body: it must keep the minimum average rate
**     (ux_limit_body_slow), not counting time the server paused it;
**   - streaming a reply: a client that hung up is noticed here even while
**     the connection is suspended, and its writer woken (-1);
**   - waiting for a handler thread: too long is 503 (threads.c).
** A violating connection is shut down (shutdown(2)); libmicrohttpd then
** sees the end of the stream and closes it. All of this runs under h->mu,
** which libmicrohttpd's CLOSED notice also takes before it closes the
** socket, so an fd is never used after it could have been reused.
**
** The registry also keeps the connection budget (limits.h): a connection
** accepted past it closes an idle one, so that a process holding
** thousands of sockets (every local client is 127.0.0.1: an address says
** nothing about who it is) cannot lock the others out. Idle means no
** request in progress; of those, one that has sent no authenticated
** request goes first, then the longest idle; a connection with a
** request in progress (a body arriving, a handler, a stream, a terminal)
** and the newcomer itself are never chosen. Closed ones are counted and
** logged once per sweep, not one line each.
*/
#include "server/http/http_int.h"

#include <errno.h>
#include <linux/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/fsutil.h"
#include "server/mem.h"

long long ux_tcp_bytes_received(int fd) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  memset(&ti, 0, sizeof ti);
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0) return -1;
  if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
    return -1;                                 /* a kernel too old to count */
  return (long long)ti.tcpi_bytes_received;
}

void ux_conn_body_start(ux_conn *cn, long now) {
  cn->phase = C_BODY;
  cn->body_t0 = now;
  cn->body_bytes = 0;
  cn->paused_ms = 0;
  cn->paused_since = 0;
}

/* --------------------------------------------------------- the registry */

static void peer_text(struct MHD_Connection *c, char *out, size_t outlen) {
  const union MHD_ConnectionInfo *ci =
    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  snprintf(out, outlen, "?");
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)outlen);
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)outlen);
}

/* Shuts cn down for libmicrohttpd to close; it no longer counts as open.
** Under h->mu. */
static void shut_locked(ux_http *h, ux_conn *cn) {
  if (shutdown(cn->fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
    fprintf(stderr, "unsandboxd: shutdown of a client's socket: %s\n", strerror(errno));
  cn->killed = 1;
  h->conns_open--;
}

/* The connection to close for `newcomer` past the budget (see the top of
** the file), or NULL when every other one is busy. Under h->mu. */
static ux_conn *victim_locked(ux_http *h, const ux_conn *newcomer) {
  ux_conn *best = NULL;
  for (ux_conn *cn = h->conns; cn; cn = cn->next) {
    if (cn == newcomer || cn->killed || cn->phase != C_HEADERS || cn->x) continue;
    if (!best || cn->authed < best->authed ||
        (cn->authed == best->authed && cn->idle_since < best->idle_since))
      best = cn;
  }
  return best;
}

/* Past the budget: closes the best idle connection, if there is one (the
** newcomer stays either way; libmicrohttpd's cap is the hard limit). */
static void evict_locked(ux_http *h, const ux_conn *newcomer) {
  ux_conn *v = victim_locked(h, newcomer);
  if (!v) return;
  shut_locked(h, v);
  h->evicted++;
}

void ux_conn_on_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe) {
  ux_http *h = cls;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    ux_conn *cn = ux_xcalloc(1, sizeof *cn);
    *socket_context = cn;
    const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    cn->fd = ci ? ci->connect_fd : -1;
    peer_text(c, cn->peer, sizeof cn->peer);
    cn->phase = C_HEADERS;
    cn->since_ms = cn->idle_since = ux_now_ms();
    pthread_mutex_lock(&h->mu);
    cn->next = h->conns;
    if (h->conns) h->conns->prev = cn;
    h->conns = cn;
    if (++h->conns_open > h->budget) evict_locked(h, cn);
    pthread_mutex_unlock(&h->mu);
    return;
  }
  ux_conn *cn = *socket_context;
  if (!cn) return;
  pthread_mutex_lock(&h->mu);
  if (!cn->killed) h->conns_open--;
  if (cn->prev) cn->prev->next = cn->next;
  else h->conns = cn->next;
  if (cn->next) cn->next->prev = cn->prev;
  if (cn->x) cn->x->cn = NULL;
  pthread_mutex_unlock(&h->mu);
  free(cn);
  *socket_context = NULL;
}

/* ------------------------------------------------------------ the rules */

static void stamp_now(char *out, size_t outlen) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void kill_conn(ux_http *h, ux_conn *cn, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static void kill_conn(ux_http *h, ux_conn *cn, const char *fmt, ...) {
  char stamp[32], why[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  stamp_now(stamp, sizeof stamp);
  fprintf(stderr, "%s - slow client %s: %s; connection closed\n", stamp, cn->peer, why);
  shut_locked(h, cn);
}

/* One line for the connections the budget closed since the last sweep. */
static void log_evicted(ux_http *h) {
  if (h->evicted == h->evicted_logged) return;
  char stamp[32];
  stamp_now(stamp, sizeof stamp);
  fprintf(stderr, "%s - connection budget of %u reached: %llu idle connection(s) closed, "
          "unauthenticated first\n", stamp, h->budget, h->evicted - h->evicted_logged);
  h->evicted_logged = h->evicted;
}

static void check_headers(ux_http *h, ux_conn *cn, long now) {
  if (cn->kept_alive && !cn->since_ms) {
    long long got = ux_tcp_bytes_received(cn->fd);
    if (got < 0) cn->since_ms = now;           /* no count: from the last request's end */
    else if ((unsigned long long)got > cn->tcp_base) cn->since_ms = now;
    else return;                               /* idle: the idle timeout's business */
  }
  if (ux_limit_headers_late(cn->since_ms, now, h->cfg.header_deadline_ms))
    kill_conn(h, cn, "request headers not complete within %ld ms", h->cfg.header_deadline_ms);
}

static void check_body(ux_http *h, ux_conn *cn, long now) {
  if (cn->x && cn->x->suspended) return;       /* paused by us, not the client */
  long active = ux_limit_body_active_ms(cn->body_t0, cn->paused_ms, cn->paused_since, now);
  if (ux_limit_body_slow(cn->body_bytes, active, h->cfg.body_grace_ms, h->cfg.body_min_rate))
    kill_conn(h, cn, "request body slower than %lu bytes/s after %ld ms", h->cfg.body_min_rate,
              h->cfg.body_grace_ms);
}

/* A client that hung up (or reset) during a streamed reply. */
static void check_stream(ux_conn *cn) {
  ux_xchg *x = cn->x;
  if (!x || !x->stream_open || x->gone) return;
  struct pollfd p = { .fd = cn->fd, .events = POLLRDHUP };
  if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return;
  x->gone = 1;
  pthread_cond_broadcast(&x->cv);
  if (x->suspended) ux_x_wake_locked(x);       /* its reader ends the response */
  else shutdown(cn->fd, SHUT_RDWR);            /* libmicrohttpd notices at once */
}

static void sweep(ux_http *h, long now) {
  log_evicted(h);
  ux_x_wait_expire_locked(h, now);
  for (ux_conn *cn = h->conns; cn; cn = cn->next) {
    if (cn->killed) continue;
    if (cn->phase == C_HEADERS) check_headers(h, cn, now);
    else if (cn->phase == C_BODY) check_body(h, cn, now);
    else check_stream(cn);
  }
}

static void *sweeper_main(void *arg) {
  ux_http *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->sweeper_stop) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += UX_HTTP_SWEEP_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&h->sweep_cv, &h->mu, &until);
    if (!h->sweeper_stop) sweep(h, ux_now_ms());
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

int ux_sweeper_start(ux_http *h) {
  if (pthread_create(&h->sweeper, NULL, sweeper_main, h) != 0) return -1;
  h->sweeper_started = 1;
  return 0;
}

void ux_sweeper_stop(ux_http *h) {
  if (!h->sweeper_started) return;
  pthread_mutex_lock(&h->mu);
  h->sweeper_stop = 1;
  pthread_cond_broadcast(&h->sweep_cv);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->sweeper, NULL);              /* it never blocks but on h->mu */
  h->sweeper_started = 0;
}
