/*
** Transfers the caller drives (core/http.h open, the loop's steps, close)
** and the Control Plane client's request builder (core/cpclient.h),
** against a small HTTP/1.1 peer this test runs itself on 127.0.0.1: a
** listener thread that hands each connection to a thread of its own,
** which answers by path. Every wait is bounded (the peer gives up after
** 5 s, loops here after a fixed number of rounds).
**
** What is proven: two transfers of one engine run at once, and a stream
** keeps flowing while a blocking call runs beside it; a transfer whose
** consumer pauses is not read until resumed, and no byte is lost; asked
** for response headers are kept; closing a running transfer closes its
** connection; a connect_only transfer leaves its connection (and nothing
** else) to the caller, gives its slot back, and closes it when closed; a
** Control Plane call without a token, or an object call without a
** subject or owner, sends nothing; the header set and the URL.
*/
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/cpclient.h"
#include "core/http.h"
#include "tests/tap.h"
#include "tests/xfer_util.h"

#define MAX_CONN 16

typedef struct {
  int listen_fd, port;
  pthread_t thread;
  pthread_mutex_t mu;
  int accepted, closes;
  char requests[MAX_CONN][4096];
  int stop;
} peer;

typedef struct { peer *p; int fd, slot; } conn;

static int send_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 1 when the client closed within ms. */
static int wait_close(int fd, int ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  char c[256];
  int64_t end = unsb_monotonic_ms() + ms;
  while (unsb_monotonic_ms() < end) {
    if (poll(&pfd, 1, 50) > 0) {
      ssize_t r = recv(fd, c, sizeof c, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return 1;
    }
  }
  return 0;
}

static void answer(conn *k, const char *req) {
  char head[512];
  if (strncmp(req, "GET /json", 9) == 0 || strncmp(req, "POST /v1/", 9) == 0 ||
      strncmp(req, "GET /v1/", 8) == 0) {
    const char *body = "{\"ok\":true}";
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             "ETag: \"v1\"\r\nLocation: /there?x=1\r\nX-Request-Id: rid-1\r\n"
             "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
    send_all(k->fd, head, strlen(head));
  } else if (strncmp(req, "GET /sse", 8) == 0) {
    const char *h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    send_all(k->fd, h, strlen(h));
    for (int i = 1; i <= 10; i++) {
      char ev[64], chunk[96];
      snprintf(ev, sizeof ev, "data: %d\n\n", i);
      snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", strlen(ev), ev);
      if (send_all(k->fd, chunk, strlen(chunk)) != 0) return;
      t_sleep_ms(30);
    }
    send_all(k->fd, "0\r\n\r\n", 5);
  } else if (strncmp(req, "GET /big", 8) == 0) {
    size_t n = 256 * 1024;
    char *b = malloc(n);
    if (!b) return;
    for (size_t i = 0; i < n; i++) b[i] = (char)('a' + i % 26);
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
             "Content-Length: %zu\r\n\r\n", n);
    send_all(k->fd, head, strlen(head));
    send_all(k->fd, b, n);
    free(b);
  } else if (strncmp(req, "GET /hang", 9) == 0) {
    const char *h = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nxx";
    send_all(k->fd, h, strlen(h));
  }
}

static void *serve_conn(void *ud) {
  conn *k = ud;
  char *req = k->p->requests[k->slot];
  size_t n = 0;
  struct pollfd pfd = {k->fd, POLLIN, 0};
  while (n < 4095 && !strstr(req, "\r\n\r\n")) {
    if (poll(&pfd, 1, 5000) <= 0) break;
    ssize_t r = recv(k->fd, req + n, 4095 - n, 0);
    if (r <= 0) break;
    n += (size_t)r;
    req[n] = '\0';
  }
  if (strstr(req, "\r\n\r\n")) answer(k, req);
  if (wait_close(k->fd, strncmp(req, "GET /hang", 9) == 0 ? 5000 : 300)) {
    pthread_mutex_lock(&k->p->mu);
    k->p->closes++;
    pthread_mutex_unlock(&k->p->mu);
  }
  close(k->fd);
  free(k);
  return NULL;
}

static void *serve(void *ud) {
  peer *p = ud;
  pthread_t threads[MAX_CONN];
  int n = 0;
  struct pollfd pfd = {p->listen_fd, POLLIN, 0};
  while (n < MAX_CONN && !p->stop) {
    if (poll(&pfd, 1, 100) <= 0) continue;
    int fd = accept(p->listen_fd, NULL, NULL);
    conn *k = fd >= 0 ? malloc(sizeof *k) : NULL;
    if (!k) {
      if (fd >= 0) close(fd);
      continue;
    }
    k->p = p;
    k->fd = fd;
    pthread_mutex_lock(&p->mu);
    k->slot = p->accepted++;
    pthread_mutex_unlock(&p->mu);
    if (pthread_create(&threads[n], NULL, serve_conn, k) != 0) {
      close(fd);
      free(k);
      continue;
    }
    n++;
  }
  for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
  return NULL;
}

static int peer_start(peer *p) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->listen_fd, 16) != 0 || getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  p->port = ntohs(a.sin_port);
  return pthread_create(&p->thread, NULL, serve, p) == 0 ? 0 : -1;
}

static void peer_stop(peer *p) {
  p->stop = 1;
  pthread_join(p->thread, NULL);
  close(p->listen_fd);
  pthread_mutex_destroy(&p->mu);
}

static int accepted(peer *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->accepted;
  pthread_mutex_unlock(&p->mu);
  return n;
}

static int closes_within(peer *p, int want, int ms) {
  int64_t end = unsb_monotonic_ms() + ms;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int n = p->closes;
    pthread_mutex_unlock(&p->mu);
    if (n >= want || unsb_monotonic_ms() > end) return n >= want;
    t_sleep_ms(20);
  }
}

/* ---------------------------------------------------------------------
** a consumer that counts bytes and can pause
** ------------------------------------------------------------------- */

typedef struct {
  size_t bytes, calls;
  int pause_every;          /* pause on every n-th call (0 = never) */
  int paused_now;
  int pauses;
  char first[8];
} sink;

static int sink_data(void *ud, const char *data, size_t len) {
  sink *s = ud;
  s->calls++;
  if (s->pause_every && !s->paused_now && s->calls % (size_t)s->pause_every == 0) {
    s->paused_now = 1;
    s->pauses++;
    return UNSB_HTTP_PAUSE;
  }
  s->paused_now = 0;
  if (s->bytes == 0) memcpy(s->first, data, len < 7 ? len : 7);
  s->bytes += len;
  return 0;
}

static unsb_http *engine(void) {
  unsb_error err;
  unsb_http_config cfg = {.connect_timeout_ms = 2000, .max_response = 1 << 20};
  return unsb_http_new(&cfg, &err);
}

static void url_of(char *out, size_t n, peer *p, const char *path) {
  snprintf(out, n, "http://127.0.0.1:%d%s", p->port, path);
}

/* ---------------------------------------------------------------------
** engine: transfers the caller drives
** ------------------------------------------------------------------- */

static void two_at_once(peer *p) {
  unsb_http *h = engine();
  unsb_error err;
  unsb_http_response r1, r2;
  char u1[96], u2[96];
  sink s = {0};
  unsb_http_stream st = {NULL, sink_data, &s};
  url_of(u1, sizeof u1, p, "/sse");
  url_of(u2, sizeof u2, p, "/json");
  unsb_http_request stream = {.method = "GET", .url = u1, .timeout_ms = 5000, .stream = &st};
  unsb_http_request plain = {.method = "GET", .url = u2, .timeout_ms = 5000};
  unsb_http_xfer *x = unsb_http_open(h, &stream, &err);
  ok(x != NULL, "a streamed transfer is opened without waiting");
  /* the first events arrive while the caller drives the engine itself */
  for (int i = 0; i < 100 && s.bytes == 0; i++) {
    unsb_loop_step(unsb_http_loop(h), 50, &err);
  }
  size_t before = s.bytes;
  ok(before > 0 && !unsb_http_done(x), "its first bytes arrived before it ended (%zu)", before);
  /* a blocking call beside it: the stream goes on during the call */
  ok(xfer_call(h, &plain, &r1, &err) == 0 && r1.status == 200,
     "a blocking call while the stream is open (%s)", r1.status ? "200" : err.message);
  unsb_http_response_free(&r1);
  for (int i = 0; i < 200 && !unsb_http_done(x); i++) {
    unsb_loop_step(unsb_http_loop(h), 50, &err);
  }
  ok(unsb_http_done(x), "the stream ended");
  ok(unsb_http_result(x, &r2, &err) == 0 && r2.status == 200 && r2.streamed == s.bytes,
     "its result: 200, %zu bytes streamed", r2.streamed);
  ok(s.bytes == 10 * strlen("data: 1\n\n") + 1, "every event's bytes arrived (%zu)", s.bytes);
  unsb_http_response_free(&r2);
  unsb_http_close(x);
  unsb_http_free(h);
}

static void pause_and_resume(peer *p) {
  unsb_http *h = engine();
  unsb_error err;
  unsb_http_response r;
  char u[96];
  sink s = {.pause_every = 2};
  unsb_http_stream st = {NULL, sink_data, &s};
  url_of(u, sizeof u, p, "/big");
  unsb_http_request req = {.method = "GET", .url = u, .timeout_ms = 5000, .stream = &st};
  unsb_http_xfer *x = unsb_http_open(h, &req, &err);
  int rounds = 0, stalled = 0;
  while (x && !unsb_http_done(x) && rounds++ < 2000) {
    size_t b = s.bytes;
    unsb_loop_step(unsb_http_loop(h), 10, &err);
    unsb_loop_step(unsb_http_loop(h), 0, &err);
    if (s.paused_now && s.bytes == b) stalled++;   /* nothing moves while paused */
    unsb_http_resume(x);
  }
  ok(x && unsb_http_done(x), "a transfer paused again and again still ends (%d rounds)", rounds);
  ok(s.pauses > 1 && stalled > 0, "it was paused %d times and stood still while paused", s.pauses);
  ok(unsb_http_result(x, &r, &err) == 0 && s.bytes == 256 * 1024 && memcmp(s.first, "abcdefg", 7) == 0,
     "no byte lost or repeated: %zu bytes", s.bytes);
  unsb_http_response_free(&r);
  unsb_http_close(x);
  unsb_http_free(h);
}

static void captured_headers(peer *p) {
  unsb_http *h = engine();
  unsb_error err;
  unsb_http_response r;
  char u[96];
  const char *names[] = {"ETag", "location", "X-Missing"};
  url_of(u, sizeof u, p, "/json");
  unsb_http_request req = {.method = "GET", .url = u, .timeout_ms = 5000, .capture = names,
                           .n_capture = 3};
  ok(xfer_call(h, &req, &r, &err) == 0, "request with captured headers");
  is_str(r.captured[0], "\"v1\"", "ETag kept");
  is_str(r.captured[1], "/there?x=1", "Location kept (names match in any case)");
  ok(r.captured[2] == NULL, "an absent header is NULL");
  is_str(r.request_id, "rid-1", "X-Request-Id as before");
  unsb_http_response_free(&r);
  const char *many[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  req.capture = many;
  req.n_capture = 9;
  ok(xfer_call(h, &req, &r, &err) == -1 && err.kind == UNSB_EVALIDATION,
     "more than 8 names are refused: %s", err.message);
  unsb_http_free(h);
}

static void close_running(peer *p) {
  unsb_http *h = engine();
  unsb_error err;
  char u[96];
  sink s = {0};
  unsb_http_stream st = {NULL, sink_data, &s};
  int closes;
  pthread_mutex_lock(&p->mu);
  closes = p->closes;
  pthread_mutex_unlock(&p->mu);
  url_of(u, sizeof u, p, "/hang");
  unsb_http_request req = {.method = "GET", .url = u, .timeout_ms = 5000, .stream = &st};
  unsb_http_xfer *x = unsb_http_open(h, &req, &err);
  for (int i = 0; i < 100 && s.bytes == 0; i++) {
    unsb_loop_step(unsb_http_loop(h), 50, &err);
  }
  ok(s.bytes == 2 && !unsb_http_done(x), "a transfer waiting for the rest of its body");
  unsb_http_close(x);
  ok(closes_within(p, closes + 1, 3000), "closing it closed the connection");
  /* an engine freed with transfers still open frees them too */
  x = unsb_http_open(h, &req, &err);
  unsb_loop_step(unsb_http_loop(h), 0, &err);
  unsb_http_free(h);
  ok(closes_within(p, closes + 2, 3000), "freeing the engine closed its open transfer");
}

/* ---------------------------------------------------------------------
** connect_only: a connection for the caller's own protocol
** ------------------------------------------------------------------- */

/* Writes all of s on x's connection, waiting for the socket when it is full. */
static int send_raw(unsb_http_xfer *x, const char *s, unsb_error *err) {
  size_t off = 0, n, len = strlen(s);
  struct pollfd pfd = {unsb_http_socket(x), POLLOUT, 0};
  for (int i = 0; i < 200 && off < len; i++) {
    int rc = unsb_http_send(x, s + off, len - off, &n, err);
    if (rc < 0) return -1;
    off += n;
    if (rc == 0) poll(&pfd, 1, 50);
  }
  return off == len ? 0 : -1;
}

/* Reads into out until it holds want (or the peer closes). */
static void recv_until(unsb_http_xfer *x, char *out, size_t size, const char *want, unsb_error *err) {
  size_t have = 0, n;
  struct pollfd pfd = {unsb_http_socket(x), POLLIN, 0};
  out[0] = '\0';
  for (int i = 0; i < 200 && !strstr(out, want) && have < size - 1; i++) {
    int rc = unsb_http_recv(x, out + have, size - 1 - have, &n, err);
    if (rc < 0 || (rc == 1 && n == 0)) return;
    have += n;
    out[have] = '\0';
    if (rc == 0) poll(&pfd, 1, 50);
  }
}

static void connect_only(peer *p) {
  unsb_error err;
  unsb_http_config cfg = {.connect_timeout_ms = 2000, .max_response = 1 << 20, .max_concurrency = 1};
  unsb_http *h = unsb_http_new(&cfg, &err);
  unsb_loop *l = unsb_http_loop(h);
  unsb_http_response r;
  unsb_loop_fd fds[4];
  char u[96], u2[96], got[512];
  int rc = 0;
  url_of(u, sizeof u, p, "/");
  url_of(u2, sizeof u2, p, "/json");
  unsb_http_request req = {.method = "GET", .url = u, .timeout_ms = 5000, .connect_only = 1};
  unsb_http_request plain = {.method = "GET", .url = u2, .timeout_ms = 5000};
  unsb_http_xfer *x = unsb_http_open(h, &req, &err);
  for (int i = 0; x && i < 200 && (rc = unsb_http_connected(x, "the peer", &err)) == 0; i++)
    unsb_loop_step(l, 50, &err);
  ok(rc == 1, "a connect_only transfer connects (%s)", rc < 0 ? err.message : "ok");
  int fd = unsb_http_socket(x);
  ok(fd >= 0 && unsb_loop_fds(l, fds, 4) == 0,
     "its socket is the caller's to watch: the engine watches nothing now");
  ok(xfer_call(h, &plain, &r, &err) == 0 && r.status == 200,
     "its slot was given back: a call of the one-slot engine runs beside it");
  unsb_http_response_free(&r);
  ok(send_raw(x, "GET /hang HTTP/1.1\r\nHost: peer\r\n\r\n", &err) == 0,
     "the caller's own bytes written on the connection");
  recv_until(x, got, sizeof got, "\r\n\r\nxx", &err);
  ok(strstr(got, "HTTP/1.1 200 OK\r\n") && strstr(got, "\r\n\r\nxx"), "and the peer's answer read");
  pthread_mutex_lock(&p->mu);
  int closes = p->closes;
  pthread_mutex_unlock(&p->mu);
  unsb_http_close(x);
  ok(closes_within(p, closes + 1, 3000), "closing the transfer closed its connection");

  /* nothing listening: a bound socket that does not listen refuses */
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  int dead = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bind(dead, (struct sockaddr *)&a, sizeof a);
  getsockname(dead, (struct sockaddr *)&a, &alen);
  snprintf(u, sizeof u, "http://127.0.0.1:%d/", ntohs(a.sin_port));
  x = unsb_http_open(h, &req, &err);
  rc = 0;
  for (int i = 0; x && i < 200 && (rc = unsb_http_connected(x, "ws://dead", &err)) == 0; i++)
    unsb_loop_step(l, 50, &err);
  ok(rc == -1 && err.kind == UNSB_ETRANSPORT && strstr(err.message, "cannot connect to ws://dead: "),
     "a refused connection names the caller's URL: %s", err.message);
  ok(unsb_http_socket(x) == -1 && unsb_http_send(x, "x", 1, &(size_t){0}, &err) == -1,
     "and has no socket to use");
  unsb_http_close(x);
  close(dead);
  unsb_http_free(h);
}

/* ---------------------------------------------------------------------
** the Control Plane client
** ------------------------------------------------------------------- */

static unsb_cp *cp(peer *p, const char *token, const char *tenant, unsb_error *err) {
  char url[96];
  unsb_cp_config cfg;
  memset(&cfg, 0, sizeof cfg);   /* no environment: the test's own values only */
  snprintf(url, sizeof url, "http://127.0.0.1:%d///", p->port);
  cfg.url = url;
  cfg.token = token;
  cfg.tenant = tenant;
  cfg.session = "demo";
  return unsb_cp_new(&cfg, err);
}

static const char *last_request(peer *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->accepted;
  pthread_mutex_unlock(&p->mu);
  return n > 0 ? p->requests[n - 1] : "";
}

static void cp_fails_closed(peer *p) {
  unsb_error err;
  unsb_http_response r;
  unsb_cp *c = cp(p, "  ", NULL, &err);
  int before = accepted(p);
  ok(c && !unsb_cp_has_token(c), "a blank token counts as none");
  unsb_cp_call call = {.method = "GET", .path = "/v1/whoami"};
  ok(xfer_finish(unsb_cp_open(c, &call, &err), &r, &err) == -1 && err.kind == UNSB_ECREDENTIALS &&
     strstr(err.message, "SANDBOX_TOKEN"), "no token: credentials error (%s)", err.message);
  call.stream = &(unsb_http_stream){NULL, NULL, NULL};
  ok(unsb_cp_open(c, &call, &err) == NULL && err.kind == UNSB_ECREDENTIALS,
     "... before the stream is even looked at");
  call.stream = NULL;
  unsb_cp_free(c);
  c = cp(p, "tok", NULL, &err);
  unsb_cp_call obj = {.method = "GET", .path = "/v1/storage/objects/list?scope=upload"};
  ok(xfer_finish(unsb_cp_open(c, &obj, &err), &r, &err) == -1 && err.kind == UNSB_EVALIDATION &&
     strstr(err.message, "/v1/storage/objects/list is an object call") &&
     !strstr(err.message, "scope="), "object call without subject or owner: %s", err.message);
  unsb_cp_call imp = {.method = "POST", .path = "/v1/workspaces/ws-0123456789ab/objects/import",
                      .body = "{}", .body_len = 2};
  ok(xfer_finish(unsb_cp_open(c, &imp, &err), &r, &err) == -1 && err.kind == UNSB_EVALIDATION, "import too");
  unsb_cp_call bad = {.method = "get", .path = "/x"};
  ok(unsb_cp_check_call(&bad, &err) == -1, "a lower-case method is misuse");
  unsb_cp_call bad2 = {.method = "GET", .path = "/a b"};
  ok(unsb_cp_check_call(&bad2, &err) == -1, "a blank in the path is misuse");
  unsb_cp_call bad3 = {.method = "GET", .path = "v1/whoami"};
  ok(unsb_cp_check_call(&bad3, &err) == -1, "a relative path is misuse");
  ok(accepted(p) == before, "nothing of the above reached the peer");
  unsb_cp_free(c);
}

static void cp_headers(peer *p) {
  unsb_error err;
  unsb_http_response r;
  unsb_cp *c = cp(p, "tok-123", "acme", &err);
  ok(c != NULL, "client with a tenant");
  char want[96];
  snprintf(want, sizeof want, "http://127.0.0.1:%d", p->port);
  is_str(unsb_cp_url(c), want, "trailing slashes dropped");
  is_str(unsb_cp_session_id(c), "2a97516c354b68848cdbd8f54a226a0a", "session 'demo' kept as its id");
  ok(unsb_cp_refresh_period(c) == 60, "refresh period default 60");
  unsb_cp_call call = {
    .method = "POST", .path = "/v1/storage/objects", .body = "{\"a\":1}", .body_len = 7,
    .subject = "0645ca35688bd5af1135ecc65edaa4ce",
    .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
  };
  ok(xfer_finish(unsb_cp_open(c, &call, &err), &r, &err) == 0 && r.status == 200, "object call with a subject");
  const char *q = last_request(p);
  ok(strstr(q, "POST /v1/storage/objects HTTP/1.1\r\n") != NULL, "request line");
  ok(strstr(q, "\r\nAuthorization: Bearer tok-123\r\n") != NULL, "Authorization");
  ok(strstr(q, "\r\nAccept: application/json\r\n") != NULL, "Accept");
  ok(strstr(q, "\r\nContent-Type: application/json\r\n") != NULL, "Content-Type");
  ok(strstr(q, "\r\nX-Acting-Subject: 0645ca35688bd5af1135ecc65edaa4ce\r\n") != NULL, "subject");
  ok(strstr(q, "\r\nX-Sandbox-Tenant: acme\r\n") != NULL, "tenant");
  ok(strstr(q, "\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-") != NULL, "bound trace id");
  unsb_http_response_free(&r);
  /* a scoped token replaces the client's; a random trace otherwise */
  unsb_cp_call tok = {.method = "GET", .path = "/v1/whoami", .token = "scoped"};
  ok(xfer_finish(unsb_cp_open(c, &tok, &err), &r, &err) == 0, "call with a scoped token");
  q = last_request(p);
  ok(strstr(q, "\r\nAuthorization: Bearer scoped\r\n") != NULL && !strstr(q, "tok-123"),
     "the scoped token, and only it");
  ok(strstr(q, "\r\ntraceparent: 00-") != NULL && !strstr(q, "4bf92f3577b34da6"), "a fresh random trace");
  ok(!strstr(q, "Content-Type"), "no body, no Content-Type");
  unsb_http_response_free(&r);
  unsb_cp_free(c);
}

static void cp_config(void) {
  unsb_error err;
  unsb_cp_config cfg;
  unsb_cp *c;
  memset(&cfg, 0, sizeof cfg);
  c = unsb_cp_new(&cfg, &err);
  is_str(c ? unsb_cp_url(c) : NULL, "http://127.0.0.1:18080", "default URL");
  ok(c && unsb_cp_session_id(c) == NULL && !unsb_cp_has_token(c), "no session, no token");
  unsb_cp_free(c);
  cfg.env_url = "https://cp.example/";
  cfg.env_token = "env-token";
  cfg.env_session = "demo";
  cfg.env_refresh = " 2 ";
  c = unsb_cp_new(&cfg, &err);
  is_str(c ? unsb_cp_url(c) : NULL, "https://cp.example", "URL from the environment");
  ok(c && unsb_cp_has_token(c) && unsb_cp_session_id(c) && unsb_cp_refresh_period(c) == 5,
     "token and session from the environment, refresh raised to 5");
  unsb_cp_free(c);
  cfg.env_url = "ftp://x";
  ok(unsb_cp_new(&cfg, &err) == NULL && strncmp(err.message, "SANDBOX_CONTROL_PLANE_URL:", 26) == 0,
     "a bad URL names the variable: %s", err.message);
  cfg.env_url = NULL;
  cfg.url = "http://a/?q=1";
  ok(unsb_cp_new(&cfg, &err) == NULL && strncmp(err.message, "url:", 4) == 0, "... or the option");
  cfg.url = NULL;
  cfg.refresh = "soon";
  ok(unsb_cp_new(&cfg, &err) == NULL && strncmp(err.message, "refresh:", 8) == 0,
     "a bad refresh option: %s", err.message);
  cfg.refresh = NULL;
  cfg.tenant = "Bad_Tenant";
  ok(unsb_cp_new(&cfg, &err) == NULL && strncmp(err.message, "tenant:", 7) == 0, "a bad tenant");
  cfg.tenant = NULL;
  cfg.session = "\xff";
  ok(unsb_cp_new(&cfg, &err) == NULL && err.kind == UNSB_EVALIDATION, "a session key that is not UTF-8");
}

int main(void) {
  peer p;
  if (peer_start(&p) != 0) {
    ok(0, "peer listening on 127.0.0.1");
    return tap_done();
  }
  two_at_once(&p);
  pause_and_resume(&p);
  captured_headers(&p);
  close_running(&p);
  connect_only(&p);
  cp_fails_closed(&p);
  cp_headers(&p);
  cp_config();
  peer_stop(&p);
  return tap_done();
}
