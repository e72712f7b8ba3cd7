/*
** The shared event loop (core/loop.h) and what the HTTP engine does with
** it (core/http.h): timers in due order, tokens queued once, cancelled
** timers gone; max_concurrency slots and the FIFO queue behind them (never
** more connections at the peer than slots, a queued transfer that waits
** past its timeout ends without a byte sent); two engines on one loop
** driven by one step; a token for every transfer that ends or is closed;
** the sockets and the next timeout a host's own loop would wait on; the
** timing of a transfer against a peer that delays its answer.
**
** The peer is a small HTTP/1.1 server run by this test on 127.0.0.1: one
** thread per connection, keep-alive, "GET /slow/<ms>" answered after ms.
** Every wait is bounded (the peer gives up after 5 s, loops here after a
** fixed number of rounds).
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/http.h"
#include "core/loop.h"
#include "tests/tap.h"
#include "tests/xfer_util.h"

#define MAX_CONN 64

typedef struct {
  int listen_fd, port, stop;
  pthread_t thread;
  pthread_mutex_t mu;
  int live, max_live, accepted, requests;
} peer;

typedef struct { peer *p; int fd; } conn;

static void count(peer *p, int *field, int d) {
  pthread_mutex_lock(&p->mu);
  *field += d;
  if (p->live > p->max_live) p->max_live = p->live;
  pthread_mutex_unlock(&p->mu);
}

static int peek(peer *p, int *field) {
  pthread_mutex_lock(&p->mu);
  int v = *field;
  pthread_mutex_unlock(&p->mu);
  return v;
}

/* Reads one request head; 0 at EOF or after 5 s. */
static int read_head(int fd, char *buf, size_t cap) {
  size_t n = 0;
  struct pollfd pfd = {fd, POLLIN, 0};
  buf[0] = '\0';
  while (n < cap - 1 && !strstr(buf, "\r\n\r\n")) {
    if (poll(&pfd, 1, 5000) <= 0) return 0;
    ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
    if (r <= 0) return 0;
    n += (size_t)r;
    buf[n] = '\0';
  }
  return 1;
}

static void *serve_conn(void *ud) {
  conn *k = ud;
  char req[4096], reply[256];
  count(k->p, &k->p->live, 1);
  while (read_head(k->fd, req, sizeof req)) {
    int ms = 0;
    count(k->p, &k->p->requests, 1);
    if (sscanf(req, "GET /slow/%d", &ms) == 1 && ms > 0 && ms < 5000) t_sleep_ms(ms);
    snprintf(reply, sizeof reply, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
             "X-Request-Id: r\r\nContent-Length: 2\r\n\r\nok");
    if (send(k->fd, reply, strlen(reply), MSG_NOSIGNAL) < 0) break;
  }
  count(k->p, &k->p->live, -1);
  close(k->fd);
  free(k);
  return NULL;
}

static void *serve(void *ud) {
  peer *p = ud;
  struct pollfd pfd = {p->listen_fd, POLLIN, 0};
  while (!p->stop) {
    if (poll(&pfd, 1, 100) <= 0) continue;
    int fd = accept(p->listen_fd, NULL, NULL);
    conn *k = fd >= 0 ? malloc(sizeof *k) : NULL;
    pthread_t t;
    if (!k) {
      if (fd >= 0) close(fd);
      continue;
    }
    k->p = p;
    k->fd = fd;
    count(p, &p->accepted, 1);
    if (pthread_create(&t, NULL, serve_conn, k) != 0) {
      close(fd);
      free(k);
      continue;
    }
    pthread_detach(t);
  }
  return NULL;
}

static int peer_start(peer *p) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->listen_fd, 64) != 0 || getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  p->port = ntohs(a.sin_port);
  return pthread_create(&p->thread, NULL, serve, p) == 0 ? 0 : -1;
}

static void peer_stop(peer *p) {
  p->stop = 1;
  pthread_join(p->thread, NULL);
  close(p->listen_fd);
  /* connection threads end within 5 s on their own (they are detached) */
}

static unsb_http *engine(unsb_loop *loop, int cap) {
  unsb_error err;
  unsb_http_config cfg = {.connect_timeout_ms = 2000, .max_response = 1 << 20, .loop = loop,
                          .max_concurrency = cap};
  return unsb_http_new(&cfg, &err);
}

static unsb_http_xfer *get(unsb_http *h, peer *p, int ms, long timeout, unsb_token tok) {
  char url[128];
  unsb_error err;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/slow/%d", p->port, ms);
  unsb_http_request req = {.method = "GET", .url = url, .timeout_ms = timeout};
  unsb_http_xfer *x = unsb_http_open(h, &req, &err);
  if (x) unsb_http_notify(x, tok);
  return x;
}

/* Steps until every one of xs is done (bounded). */
static int drive_all(unsb_loop *l, unsb_http_xfer **xs, int n) {
  unsb_error err;
  for (int round = 0; round < 2000; round++) {
    int left = 0;
    for (int i = 0; i < n; i++) left += !unsb_http_done(xs[i]);
    if (!left) return 1;
    if (unsb_loop_step(l, 50, &err) != 0) return 0;
  }
  return 0;
}

/* ---------------------------------------------------------------------
** the loop alone
** ------------------------------------------------------------------- */

static void test_timers(void) {
  unsb_error err;
  unsb_loop *l = unsb_loop_new(&err);
  unsb_token got[8];
  int64_t now = unsb_monotonic_ms();
  ok(l != NULL, "a loop");
  ok(unsb_loop_timeout(l) == -1, "nothing scheduled: no timeout");
  ok(unsb_loop_take(l, got, 8) == 0, "a new loop has nothing to take (and reads no event array)");
  unsb_loop_timer(l, now + 60, 3, &err);
  unsb_loop_timer(l, now + 20, 1, &err);
  unsb_loop_timer(l, now + 40, 2, &err);
  unsb_loop_timer(l, now + 30, 9, &err);
  unsb_loop_timer_cancel(l, 9);
  ok(unsb_loop_timers(l) == 3, "a cancelled timer is gone");
  long t = unsb_loop_timeout(l);
  ok(t >= 0 && t <= 20, "the next timeout is the earliest timer (%ld ms)", t);
  size_t n = 0;
  for (int i = 0; i < 50 && n < 3; i++) {
    unsb_loop_step(l, 100, &err);
    n += unsb_loop_take(l, got + n, 8 - n);
  }
  ok(n == 3 && got[0] == 1 && got[1] == 2 && got[2] == 3, "timers fire in due order");
  ok(unsb_monotonic_ms() - now >= 60, "not before they are due");
  unsb_loop_notify(l, 5);
  unsb_loop_notify(l, 5);
  unsb_loop_notify(l, 0);
  unsb_loop_notify(l, 6);
  n = unsb_loop_take(l, got, 8);
  ok(n == 2 && got[0] == 5 && got[1] == 6, "a token queued twice in a row is kept once; 0 never");
  int64_t t0 = unsb_monotonic_ms();
  unsb_loop_step(l, 30, &err);
  ok(unsb_monotonic_ms() - t0 >= 25, "a step with nothing to watch still waits (a timer's sleep)");
  unsb_loop_enter(l);
  ok(unsb_loop_step(l, 0, &err) == -1 && err.kind == UNSB_EVALIDATION,
     "no step from inside a callback");
  unsb_loop_leave(l);
  unsb_loop_unref(l);
}

/* ---------------------------------------------------------------------
** slots, the queue, tokens
** ------------------------------------------------------------------- */

static void test_slots(peer *p) {
  unsb_error err;
  unsb_loop *l = unsb_loop_new(&err);
  unsb_http *h = engine(l, 2);
  unsb_http_xfer *xs[6];
  unsb_token got[16];
  for (int i = 0; i < 6; i++) xs[i] = get(h, p, 150, 5000, (unsb_token)(i + 1));
  ok(drive_all(l, xs, 6), "six transfers through two slots all end");
  ok(peek(p, &p->max_live) <= 2, "the peer never saw more than two connections (%d)",
     peek(p, &p->max_live));
  size_t n = unsb_loop_take(l, got, 16);
  int seen = 0;
  for (size_t i = 0; i < n; i++) seen |= 1 << got[i];
  ok(seen == 0x7e, "each one's token was queued when it ended (%zu tokens)", n);
  unsb_http_timing t0, t5;
  unsb_http_timing_of(xs[0], &t0);
  unsb_http_timing_of(xs[5], &t5);
  /* relative, so a slow machine's start-up does not count: the sixth
  ** waited two of the peer's 150 ms turns longer than the first */
  ok(t5.queue_us - t0.queue_us >= 250000,
     "the sixth waited two turns longer than the first for a slot (%lld, %lld us)",
     (long long)t0.queue_us, (long long)t5.queue_us);
  ok(t5.server_us >= 140000, "server time covers the peer's delay (%lld us)", (long long)t5.server_us);
  int64_t parts = t5.queue_us + t5.resolve_us + t5.connect_us + t5.tls_us + t5.server_us +
                  t5.transfer_us;
  ok(parts <= t5.total_us, "the parts add up to at most the total (%lld <= %lld)",
     (long long)parts, (long long)t5.total_us);
  ok(t5.bytes_in > 2 && t5.bytes_out > 20, "bytes both ways (%llu in, %llu out)",
     (unsigned long long)t5.bytes_in, (unsigned long long)t5.bytes_out);
  unsb_http_response r;
  ok(unsb_http_result(xs[5], &r, &err) == 0 && r.status == 200 && r.timing.total_us == t5.total_us,
     "the result carries the same timing");
  unsb_http_response_free(&r);
  for (int i = 0; i < 6; i++) unsb_http_close(xs[i]);
  ok(peek(p, &p->accepted) <= 2, "connections were kept alive and reused (%d accepted)",
     peek(p, &p->accepted));
  unsb_http_free(h);
  unsb_loop_unref(l);
}

static void test_queue_timeout(peer *p) {
  unsb_error err;
  unsb_http *h = engine(NULL, 1);
  unsb_loop *l = unsb_http_loop(h);
  int before = peek(p, &p->requests);
  unsb_http_xfer *slow = get(h, p, 3000, 10000, 1);
  unsb_http_xfer *late = get(h, p, 0, 200, 2);
  unsb_http_xfer *xs[1] = {late};
  int64_t t0 = unsb_monotonic_ms();
  ok(drive_all(l, xs, 1), "a queued transfer ends at its timeout");
  int64_t took = unsb_monotonic_ms() - t0;
  unsb_http_response r;
  ok(unsb_http_result(late, &r, &err) == -1 && err.kind == UNSB_ETIMEOUT &&
     strstr(err.message, "nothing was sent"), "as a timeout that says nothing was sent: %s",
     err.message);
  ok(took >= 180 && took < 2500, "at its deadline, not after the slow one's 3 s (%lld ms)", (long long)took);
  unsb_http_timing t;
  unsb_http_timing_of(late, &t);
  ok(t.queue_us >= 180000 && t.total_us == t.queue_us, "all of its time was queue time");
  unsb_http_close(late);
  xs[0] = slow;
  ok(drive_all(l, xs, 1) && peek(p, &p->requests) == before + 1,
     "the slow one still ends, and the peer saw one request");
  unsb_http_close(slow);
  /* closing one that never ran, and one that runs: their tokens come */
  unsb_http_xfer *a = get(h, p, 1000, 5000, 7), *b = get(h, p, 0, 5000, 8);
  unsb_loop_step(l, 0, &err);
  unsb_token got[8];
  unsb_loop_take(l, got, 8);
  unsb_http_close(b);
  unsb_http_close(a);
  size_t n = unsb_loop_take(l, got, 8);
  ok(n == 2 && got[0] == 8 && got[1] == 7, "a closed transfer queues its token (queued or running)");
  unsb_http_free(h);
}

/* ---------------------------------------------------------------------
** two engines, one loop; what a host's loop sees
** ------------------------------------------------------------------- */

static void test_shared(peer *p) {
  unsb_error err;
  unsb_loop *l = unsb_loop_new(&err);
  unsb_http *a = engine(l, 4), *b = engine(l, 4);
  unsb_http_xfer *xs[2] = {get(a, p, 300, 5000, 1), get(b, p, 300, 5000, 2)};
  unsb_loop_fd fds[8];
  size_t nfd = 0;
  long t = -1;
  int reading = 0;
  for (int i = 0; i < 50 && reading < 2; i++) {   /* connected and sent: both wait to read */
    unsb_loop_step(l, 10, &err);
    nfd = unsb_loop_fds(l, fds, 8);
    t = unsb_loop_timeout(l);
    reading = 0;
    for (size_t k = 0; k < nfd && k < 8; k++) reading += fds[k].events == POLLIN;
  }
  ok(nfd == 2, "both engines' sockets are watched by the one loop (%zu)", nfd);
  ok(reading == 2, "both waiting for their answers: POLLIN");
  ok(t >= 0 && t <= 5000, "libcurl's own timeout is the loop's (%ld ms)", t);
  int64_t t0 = unsb_monotonic_ms();
  ok(drive_all(l, xs, 2), "one loop drives both engines");
  ok(unsb_monotonic_ms() - t0 < 550, "at once, not one after the other");
  unsb_http_close(xs[0]);
  unsb_http_close(xs[1]);
  unsb_http_free(a);
  ok(unsb_loop_fds(l, fds, 8) <= 1, "a freed engine's sockets are no longer watched");
  unsb_http_free(b);
  unsb_loop_unref(l);   /* the last reference: the loop may go in any order */
  ok(1, "loop and engines freed in any order");
}

/* A callback may not drive the loop. */
typedef struct { unsb_loop *l; int rc; unsb_error err; } reentry;

static int reenter(void *ud, const char *data, size_t len) {
  reentry *r = ud;
  (void)data;
  (void)len;
  r->rc = unsb_loop_step(r->l, 0, &r->err);
  return 0;
}

static void test_busy(peer *p) {
  unsb_error err;
  unsb_http *h = engine(NULL, 0);
  reentry r = {unsb_http_loop(h), 0, {0}};
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/slow/1", p->port);
  unsb_http_stream st = {NULL, reenter, &r};
  unsb_http_request req = {.method = "GET", .url = url, .timeout_ms = 3000, .stream = &st};
  unsb_http_response resp;
  ok(xfer_call(h, &req, &resp, &err) == 0, "a streamed call");
  ok(r.rc == -1 && r.err.kind == UNSB_EVALIDATION, "whose on_data could not step the loop");
  ok(resp.timing.first_data_us > 0 && resp.timing.first_data_us <= resp.timing.total_us,
     "first_data_us is set for a stream");
  unsb_http_response_free(&resp);
  unsb_http_config bad = {.connect_timeout_ms = 1, .max_response = 1, .max_concurrency = 5000};
  ok(unsb_http_new(&bad, &err) == NULL && err.kind == UNSB_EVALIDATION,
     "max_concurrency above the limit is refused: %s", err.message);
  unsb_http_free(h);
}

int main(void) {
  peer p;
  test_timers();
  if (peer_start(&p) != 0) {
    ok(0, "the test peer could not start");
    return tap_done();
  }
  test_slots(&p);
  test_queue_timeout(&p);
  test_shared(&p);
  test_busy(&p);
  peer_stop(&p);
  return tap_done();
}
