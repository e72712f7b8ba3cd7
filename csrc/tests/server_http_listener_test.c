/*
** The transport as a reusable object (http.h), driven by plain sockets on
** 127.0.0.1: two listeners in one process with routers of their own, a
** router's X-Request-Id, request headers and the peer address, response
** headers, content types, raw and empty bodies, sized streams (whole and
** cut short), a streaming body read piece by piece, a refusal before the
** body is read (from the handler and from the admit hook), the header
** check before a buffered body (a refusal that never waits for the body,
** a body thrown away unseen, one let in), and a stop that does not wait
** for a handler blocked forever. The execution API's
** use of it is covered by spec/unsandboxd_spec.lua and
** spec/http_limits_spec.lua.
*/
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/http/http.h"
#include "server/http/stream.h"
#include "tests/tap.h"

static pthread_mutex_t never_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static int blocked_in;                /* set once /block has its request */

/* ------------------------------------------------------------ routers */

static void read_all(ux_req *r) {
  char buf[8192], msg[64];
  long long total = 0;
  ssize_t n;
  while ((n = ux_req_read_body(r, buf, sizeof buf)) > 0) total += n;
  snprintf(msg, sizeof msg, "got %lld%s", total, n < 0 ? " (cut)" : "");
  ux_reply_raw(r, n < 0 ? 400 : 200, "text/plain", msg, strlen(msg));
}

static void sized(ux_req *r, long long length, const char *text) {
  ux_stream *s = ux_reply_stream(r, 200, "application/octet-stream", length);
  if (s) ux_stream_write(s, text, strlen(text));
  if (s) ux_stream_close(s);
}

static void handle_a(void *ctx, ux_req *r) {
  (void)ctx;
  char text[256];
  if (!strcmp(r->path, "/hdr")) {
    const char *x = ux_req_header(r, "x-thing");
    snprintf(text, sizeof text, "peer=%s x=%s", r->peer, x ? x : "-");
    ux_reply_header(r, "X-Custom", "yes");
    ux_reply_raw(r, 200, "text/plain; charset=utf-8", text, strlen(text));
  } else if (!strcmp(r->path, "/empty")) {
    ux_reply_empty(r, 204);
  } else if (!strcmp(r->path, "/sized-ok")) {
    sized(r, 5, "hello");
  } else if (!strcmp(r->path, "/sized-short")) {
    sized(r, 10, "12345");
  } else if (!strcmp(r->path, "/upload")) {
    read_all(r);
  } else if (!strcmp(r->path, "/refuse")) {
    ux_reply_error(r, 401, "unauthorized", "no");
  } else if (!strncmp(r->path, "/auth-", 6)) {
    snprintf(text, sizeof text, "len=%zu discarded=%d body=%.*s", r->body_len, r->body_discarded,
             (int)(r->body_len < 32 ? r->body_len : 32), r->body);
    ux_reply_raw(r, 200, "text/plain", text, strlen(text));
  } else if (!strcmp(r->path, "/block")) {
    pthread_mutex_lock(&never_mu);
    __atomic_store_n(&blocked_in, 1, __ATOMIC_SEQ_CST);  /* the test's readiness signal */
    for (;;) pthread_cond_wait(&never_cv, &never_mu);   /* blocked forever */
  } else {
    ux_reply_json(r, 200, json_pack("{s:s}", "listener", "A"));
  }
}

static void admit_a(void *ctx, ux_req *r, ux_body_policy *p) {
  (void)ctx;
  if (!strcmp(r->path, "/upload") || !strcmp(r->path, "/refuse")) {
    p->stream = 1;
    p->limit = 1 << 20;
  }
  if (!strcmp(r->path, "/admit-refuse")) ux_reply_error(r, 403, "forbidden", "at the door");
}

/* The header check: runs before any byte of a buffered body is taken. */
static void authorize_a(void *ctx, ux_req *r, ux_body_policy *p) {
  (void)ctx;
  if (!strcmp(r->path, "/auth-refuse")) ux_reply_error(r, 401, "unauthorized", "not you");
  if (!strcmp(r->path, "/auth-discard")) p->discard = 1;
}

static void request_id_a(void *ctx, const ux_req *r, char *out, size_t outlen) {
  (void)ctx;
  const char *t = ux_req_header(r, "X-Trace");
  snprintf(out, outlen, "A-%s", t ? t : "none");
}

static void handle_b(void *ctx, ux_req *r) {
  (void)ctx;
  ux_reply_json(r, 200, json_pack("{s:s}", "listener", "B"));
}

/* -------------------------------------------------------------- client */

typedef struct resp {
  int status;
  char head[4096];
  char body[400000];
  size_t body_len;
} resp;

static int dial(unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  struct timeval tv = { 5, 0 };
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { close(fd); return -1; }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads until the server closes (requests say Connection: close). */
static void receive(int fd, resp *out) {
  static char buf[sizeof out->head + sizeof out->body];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof buf && (n = recv(fd, buf + len, sizeof buf - len, 0)) > 0) len += (size_t)n;
  memset(out, 0, sizeof *out);
  out->status = -1;
  char *end = memmem(buf, len, "\r\n\r\n", 4);
  if (!end || (size_t)(end - buf) >= sizeof out->head) return;
  memcpy(out->head, buf, (size_t)(end - buf));
  sscanf(out->head, "HTTP/1.%*d %d", &out->status);
  out->body_len = len - (size_t)(end + 4 - buf);
  memcpy(out->body, end + 4, out->body_len);
}

/* One request; body may be NULL. */
static void fetch(unsigned port, const char *method, const char *path, const char *extra,
                  const char *body, size_t body_len, resp *out) {
  char head[1024];
  int fd = dial(port);
  out->status = -1;
  if (fd < 0) return;
  snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s"
           "Content-Length: %zu\r\n\r\n", method, path, extra ? extra : "", body_len);
  if (send_all(fd, head, strlen(head)) == 0 && body) send_all(fd, body, body_len);
  receive(fd, out);
  close(fd);
}

static int has_header(const resp *r, const char *line) {
  return strcasestr(r->head, line) != NULL;
}

static unsigned port_of(const char *url) {
  const char *colon = strrchr(url, ':');
  return colon ? (unsigned)atoi(colon + 1) : 0;
}

/* ---------------------------------------------------------------- tests */

static resp R;

static void test_a(unsigned pa) {
  fetch(pa, "GET", "/hdr", "X-Thing: 42\r\nX-Trace: t1\r\n", NULL, 0, &R);
  ok(R.status == 200, "a router's raw reply");
  ok(R.body_len == 19 && !memcmp(R.body, "peer=127.0.0.1 x=42", 19), "request header and peer reach the handler");
  ok(has_header(&R, "\r\nContent-Type: text/plain; charset=utf-8"), "the handler's content type");
  ok(has_header(&R, "\r\nX-Custom: yes"), "the handler's own header");
  ok(has_header(&R, "\r\nX-Request-Id: A-t1"), "the router's request id");
  fetch(pa, "GET", "/empty", NULL, NULL, 0, &R);
  ok(R.status == 204 && R.body_len == 0, "an empty 204");
  fetch(pa, "GET", "/sized-ok", NULL, NULL, 0, &R);
  ok(R.status == 200 && has_header(&R, "\r\nContent-Length: 5") && R.body_len == 5 &&
     !memcmp(R.body, "hello", 5), "a sized stream has its Content-Length");
  fetch(pa, "GET", "/sized-short", NULL, NULL, 0, &R);
  ok(R.status == 200 && has_header(&R, "\r\nContent-Length: 10") && R.body_len < 10,
     "a sized stream closed short is cut (%zu of 10 bytes)", R.body_len);
}

static void test_bodies(unsigned pa) {
  static char big[300000];
  memset(big, 'b', sizeof big);
  fetch(pa, "PUT", "/upload", NULL, big, sizeof big, &R);
  ok(R.status == 200 && R.body_len == 10 && !memcmp(R.body, "got 300000", 10),
     "a streaming body is read piece by piece");
  fetch(pa, "PUT", "/upload", NULL, NULL, 0, &R);
  ok(R.status == 200 && !memcmp(R.body, "got 0", 5), "an empty streaming body reads as its end");
  /* the body is declared but never sent: the reply must not wait for it */
  int fd = dial(pa);
  const char *req = "PUT /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
  long t0 = ux_now_ms();
  if (fd >= 0 && send_all(fd, req, strlen(req)) == 0) receive(fd, &R);
  if (fd >= 0) close(fd);
  ok(R.status == 401 && ux_now_ms() - t0 < 3000, "a streaming route refuses before reading the body");
  fd = dial(pa);
  req = "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n";
  if (fd >= 0 && send_all(fd, req, strlen(req)) == 0) receive(fd, &R);
  if (fd >= 0) close(fd);
  ok(R.status == 400, "a declared body over the route's limit: the handler sees the overflow");
  fetch(pa, "POST", "/admit-refuse", NULL, "x", 1, &R);
  ok(R.status == 403 && has_header(&R, "\r\nX-Request-Id: A-none"), "the admit hook answers at once");
}

static void test_header_check(unsigned pa) {
  fetch(pa, "POST", "/auth-ok", NULL, "hello", 5, &R);
  ok(R.status == 200 && strstr(R.body, "len=5 discarded=0 body=hello"), "a body its headers let in: %s", R.body);
  fetch(pa, "POST", "/auth-discard", NULL, "secret", 6, &R);
  ok(R.status == 200 && strstr(R.body, "len=0 discarded=1 body="),
     "a body thrown away unseen: the handler sees none of it: %s", R.body);
  fetch(pa, "POST", "/auth-ok", NULL, NULL, 0, &R);
  ok(R.status == 200 && strstr(R.body, "len=0 discarded=0"), "no body, no check: %s", R.body);
  /* declared but never sent: the refusal does not wait for the body */
  const char *heads[] = {
    "POST /auth-refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
    "POST /auth-refuse HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
  };
  for (int i = 0; i < 2; i++) {
    int fd = dial(pa);
    long t0 = ux_now_ms();
    if (fd >= 0 && send_all(fd, heads[i], strlen(heads[i])) == 0) receive(fd, &R);
    if (fd >= 0) close(fd);
    ok(R.status == 401 && ux_now_ms() - t0 < 3000, "the header check refuses a %s body before it comes",
       i ? "chunked" : "declared");
  }
}

static void *blocked_client(void *arg) {
  unsigned port = *(unsigned *)arg;
  static resp r;
  fetch(port, "GET", "/block", NULL, NULL, 0, &r);
  return NULL;
}

int main(void) {
  char url_a[128], url_b[128], err[256];
  ux_http_config ca, cb;
  ux_http_config_default(&ca, ux_http_raise_nofile(), 2);
  ca.listen = "127.0.0.1:0";
  ca.router = (ux_http_router){ handle_a, admit_a, request_id_a, NULL, authorize_a };
  cb = ca;
  cb.router = (ux_http_router){ handle_b, NULL, NULL, NULL, NULL };
  ux_http *a = ux_http_start(&ca, url_a, sizeof url_a, err, sizeof err);
  ux_http *b = ux_http_start(&cb, url_b, sizeof url_b, err, sizeof err);
  ok(a && b && strcmp(url_a, url_b) != 0, "two listeners in one process (%s, %s)", url_a, url_b);
  if (!a || !b) return tap_done();
  unsigned pa = port_of(url_a), pb = port_of(url_b);
  ca.router.handle = NULL;
  ok(ux_http_start(&ca, url_a, sizeof url_a, err, sizeof err) == NULL, "a listener needs a router");
  ca.listen = "nonsense";
  ca.router.handle = handle_a;
  ok(ux_http_start(&ca, url_a, sizeof url_a, err, sizeof err) == NULL && strstr(err, "--listen"),
     "a bad listen address is refused: %s", err);

  test_a(pa);
  test_bodies(pa);
  test_header_check(pa);
  fetch(pb, "GET", "/anything", NULL, NULL, 0, &R);
  ok(R.status == 200 && strstr(R.body, "\"listener\":\"B\"") && has_header(&R, "\r\nX-Request-Id: req_"),
     "the second listener has its own router and the default request id");

  pthread_t t;
  pthread_create(&t, NULL, blocked_client, &pa);
  /* stop once the handler really is blocked (at most 20 s of looking) */
  for (int i = 0; i < 2000 && !__atomic_load_n(&blocked_in, __ATOMIC_SEQ_CST); i++) t_sleep_ms(10);
  ok(__atomic_load_n(&blocked_in, __ATOMIC_SEQ_CST), "a handler is blocked");
  long t0 = ux_now_ms();
  unsigned left = ux_http_stop(a, t0 + 500);
  long took = ux_now_ms() - t0;
  ok(left == 1, "stop reports the handler it did not wait for (%u)", left);
  /* at least the drain; then it returns, far below "waits for the handler" (forever) */
  ok(took >= 450 && took < 500 + 10000, "stop took %ld ms for a 500 ms drain", took);
  pthread_join(t, NULL);                       /* its client got an answer or a close */

  ux_http_quiesce(b);
  int fd = dial(pb);
  ok(fd < 0, "a quiesced listener accepts nothing");
  if (fd >= 0) close(fd);
  ok(ux_http_stop(b, ux_now_ms() + 500) == 0, "an idle listener stops and frees everything");
  return tap_done();
}
