/*
** A listener: libmicrohttpd with its internal epoll loop on a small pool
** of event threads (UX_HTTP_POOL_THREADS) and suspend/resume, so an idle
** or half-open socket costs a file descriptor and a little memory but no
** thread, and a request is handed to a thread of its own only once it is
** complete (exchange.c). What bounds a listener (numbers in limits.h,
** explained in docs/internals.md "Connections"):
**   - MHD_OPTION_CONNECTION_LIMIT, and below it the connection budget:
**     past it each new connection closes an idle one (sweeper.c), so a
**     process holding thousands of sockets cannot lock others out;
**   - MHD_OPTION_CONNECTION_TIMEOUT, the idle timeout (keep-alive too);
**   - the sweeper (sweeper.c): header deadline and minimum body rate,
**     which a trickle that keeps resetting the idle timer cannot dodge;
**   - MHD_OPTION_CONNECTION_MEMORY_LIMIT: request line and headers must
**     fit in UX_HTTP_CONN_MEMORY, else libmicrohttpd answers 431 itself;
**   - bodies: the router's limit (default --max-body); a declared larger
**     body is never read, a chunked one is counted and thrown away.
** The path handed to routers is the raw one (no percent-decoding), which
** is exactly what the client signed.
**
** Shutdown never joins a thread that may block: libmicrohttpd's event
** threads and the sweeper only ever wait on sockets and h->mu, handler
** threads are detached and simply left behind when they outlive the
** drain (ux_http_stop's return value tells main.c so).
*/
#include "server/http/http_int.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/mem.h"

/* Keeps the path byte-for-byte as sent: signatures cover the raw path. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls; (void)c;
  return strlen(s);
}

void ux_http_config_default(ux_http_config *cfg, unsigned long long nofile, unsigned listeners) {
  memset(cfg, 0, sizeof *cfg);
  cfg->max_connections = ux_limit_conn_cap(nofile, listeners);
  cfg->idle_timeout_s = UX_HTTP_IDLE_TIMEOUT_S;
  cfg->header_deadline_ms = UX_HTTP_HEADER_DEADLINE_MS;
  cfg->body_grace_ms = UX_HTTP_BODY_GRACE_MS;
  cfg->body_min_rate = UX_HTTP_BODY_MIN_RATE;
  cfg->max_handlers = UX_HTTP_MAX_HANDLERS;
  cfg->max_body = 8u << 20;
}

void ux_http_config_connections(ux_http_config *cfg, unsigned want) {
  if (want && want < cfg->max_connections) cfg->max_connections = want;
}

unsigned long long ux_http_raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return 1024;
  if (rl.rlim_cur != rl.rlim_max) {
    struct rlimit want = { rl.rlim_max, rl.rlim_max };
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
    else fprintf(stderr, "unsandboxd: cannot raise RLIMIT_NOFILE to %llu\n",
                 (unsigned long long)rl.rlim_max);
  }
  return rl.rlim_cur == RLIM_INFINITY ? 1ull << 20 : (unsigned long long)rl.rlim_cur;
}

/* Splits "HOST:PORT" / "[V6]:PORT" and resolves it numerically. */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, char *host, size_t hlen,
                        char *err, size_t errlen) {
  char buf[300], *port;
  if (!spec || strlen(spec) >= sizeof buf) goto bad;
  snprintf(buf, sizeof buf, "%s", spec);
  char *h = buf;
  if (*h == '[') {
    char *end = strchr(h, ']');
    if (!end || end[1] != ':') goto bad;
    *end = '\0';
    h++;
    port = end + 2;
  } else {
    port = strrchr(h, ':');
    if (!port) goto bad;
    *port++ = '\0';
  }
  if (!*h || !*port || strspn(port, "0123456789") != strlen(port) || atol(port) > 65535) goto bad;
  struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai = NULL;
  if (getaddrinfo(h, port, &hints, &ai) != 0 || !ai) {
    snprintf(err, errlen, "cannot resolve listen address '%s'", spec);
    return -1;
  }
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  snprintf(host, hlen, "%s", h);
  return 0;
bad:
  snprintf(err, errlen, "bad --listen '%s' (want HOST:PORT or [IPV6]:PORT)", spec ? spec : "");
  return -1;
}

/* h's mutex and condition variables (the latter on the monotonic clock,
** like every deadline here). */
static int init_sync(ux_http *h) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0) return -1;
  int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
           pthread_mutex_init(&h->mu, NULL) == 0;
  if (ok && pthread_cond_init(&h->drain_cv, &ca) != 0) {
    pthread_mutex_destroy(&h->mu);
    ok = 0;
  }
  if (ok && pthread_cond_init(&h->sweep_cv, &ca) != 0) {
    pthread_cond_destroy(&h->drain_cv);
    pthread_mutex_destroy(&h->mu);
    ok = 0;
  }
  pthread_condattr_destroy(&ca);
  return ok ? 0 : -1;
}

static void free_http(ux_http *h) {
  pthread_cond_destroy(&h->sweep_cv);
  pthread_cond_destroy(&h->drain_cv);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

static struct MHD_Daemon *start_daemon(ux_http *h, struct sockaddr_storage *ss) {
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
                   MHD_USE_ERROR_LOG |
                   (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  return MHD_start_daemon(flags, 0, NULL, NULL, ux_x_on_request, h,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss,
                          MHD_OPTION_THREAD_POOL_SIZE, (unsigned)UX_HTTP_POOL_THREADS,
                          MHD_OPTION_CONNECTION_LIMIT, h->cfg.max_connections,
                          MHD_OPTION_CONNECTION_TIMEOUT, h->cfg.idle_timeout_s,
                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)UX_HTTP_CONN_MEMORY,
                          MHD_OPTION_NOTIFY_COMPLETED, ux_x_on_completed, h,
                          MHD_OPTION_NOTIFY_CONNECTION, ux_conn_on_notify, h,
                          MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                          MHD_OPTION_END);
}

ux_http *ux_http_start(const ux_http_config *cfg, char *url, size_t urllen,
                       char *err, size_t errlen) {
  struct sockaddr_storage ss;
  char host[300];
  memset(&ss, 0, sizeof ss);
  if (!cfg->router.handle) {
    snprintf(err, errlen, "a listener needs a router");
    return NULL;
  }
  if (parse_listen(cfg->listen, &ss, host, sizeof host, err, errlen) < 0) return NULL;
  ux_http *h = ux_xcalloc(1, sizeof *h);
  if (init_sync(h) < 0) {
    free(h);
    snprintf(err, errlen, "cannot initialise the listener's locks");
    return NULL;
  }
  h->cfg = *cfg;
  snprintf(h->listen, sizeof h->listen, "%s", cfg->listen);
  h->cfg.listen = h->listen;
  h->budget = ux_limit_conn_budget(h->cfg.max_connections);
  if (ux_sweeper_start(h) < 0) {
    snprintf(err, errlen, "cannot start the connection sweeper thread");
    free_http(h);
    return NULL;
  }
  h->d = start_daemon(h, &ss);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s (address in use or not permitted)", cfg->listen);
    ux_sweeper_stop(h);
    free_http(h);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  unsigned port = info ? info->port : 0;
  /* a wildcard address is reachable on loopback; print that */
  if (!strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
  if (!strcmp(host, "::")) snprintf(host, sizeof host, "::1");
  snprintf(url, urllen, ss.ss_family == AF_INET6 ? "http://[%s]:%u" : "http://%s:%u", host, port);
  return h;
}

void ux_http_quiesce(ux_http *h) {
  pthread_mutex_lock(&h->mu);
  if (!h->stopping) h->stopping = 1;
  pthread_mutex_unlock(&h->mu);
  MHD_socket s = MHD_quiesce_daemon(h->d);
  if (s != MHD_INVALID_SOCKET) close(s);
}

/* Waits (under h->mu) until nothing is in flight or the deadline. */
static void drain_locked(ux_http *h, long deadline_ms, int conns_too) {
  while ((conns_too && h->live > 0) || h->running > 0) {
    long left = deadline_ms - ux_now_ms();
    if (left <= 0) break;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (left > 100) left = 100;               /* re-check the clock often */
    until.tv_nsec += left * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&h->drain_cv, &h->mu, &until);
  }
}

unsigned ux_http_stop(ux_http *h, long deadline_ms) {
  pthread_mutex_lock(&h->mu);
  if (!h->stopping) h->stopping = 1;
  ux_upgrade_stop_locked(h, 0);               /* terminals say goodbye and end */
  drain_locked(h, deadline_ms, 1);
  /* abandon: nothing suspends any more, every waiting handler sees -1,
  ** and every suspended connection is resumed, since libmicrohttpd may
  ** not be stopped with one still suspended */
  h->stopping = 2;
  ux_xchg *line = ux_x_wait_take_all_locked(h);   /* woken below: 503 */
  for (ux_conn *cn = h->conns; cn; cn = cn->next) {
    if (!cn->x) continue;
    pthread_cond_broadcast(&cn->x->cv);
    ux_x_wake_locked(cn->x);
  }
  /* upgraded sockets still held are cut, and given back (bounded)
  ** before libmicrohttpd stops: it must not close one under its owner */
  ux_upgrade_stop_locked(h, 1);
  ux_upgrade_drain_locked(h, ux_now_ms() + UX_HTTP_UPGRADE_DRAIN_MS);
  /* the handlers woken or cut above are returning: they are waited for
  ** (bounded), so what is left is a handler that holds on, not one that
  ** had not yet got the lock back to say it ended */
  drain_locked(h, ux_now_ms() + UX_HTTP_UPGRADE_DRAIN_MS, 0);
  ux_upgrade_bar_locked(h);
  pthread_mutex_unlock(&h->mu);
  while (line) {                              /* the line's references */
    ux_xchg *x = line;
    line = x->wait_next;
    ux_x_release(x);
  }
  ux_sweeper_stop(h);
  MHD_stop_daemon(h->d);
  pthread_mutex_lock(&h->mu);
  unsigned left = h->running;
  pthread_mutex_unlock(&h->mu);
  if (left) return left;                      /* h stays for those threads */
  free_http(h);
  return 0;
}
