/*
** Streaming transfers of the HTTP engine (core/http.h) against a tiny
** HTTP/1.1 peer that this test runs itself: a thread with a listening
** socket on 127.0.0.1 that writes a canned chunked SSE response slowly.
**
** "Events arrive before the response ends" is proven by a handshake, not
** by timing: the peer writes one event and then waits (at most 5 s) until
** the client's callback has parsed it before it writes the next, so a
** client that only delivered the body at the end would make the peer time
** out. Cancellation is proven from the peer's side: it sees its socket
** closed by the client. Every wait is bounded.
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
#include "core/cprequest.h"
#include "core/http.h"
#include "core/interrupt.h"
#include "core/sse.h"
#include "tests/tap.h"
#include "tests/xfer_util.h"

enum { SLOW, FOREVER, ONE_THEN_IDLE, ERROR_503, JSON_200 };

typedef struct {
  int scenario, listen_fd, port;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int client_events;        /* events the client parsed (set by the client) */
  int sent, done;           /* events written; the final chunk written */
  int handshake_timeout;    /* the client did not see an event in time */
  int saw_close;            /* the client closed the connection */
  int accepted;
  char request[8192];
} peer;

/* ---------------------------------------------------------------------
** the peer
** ------------------------------------------------------------------- */

static int send_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static int send_chunk(int fd, const char *data) {
  char head[32];
  snprintf(head, sizeof head, "%zx\r\n", strlen(data));
  return send_all(fd, head, strlen(head)) || send_all(fd, data, strlen(data)) ||
         send_all(fd, "\r\n", 2);
}

/* Waits up to ms for the client to close: 1 if it did. */
static int wait_close(int fd, int ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  char c;
  int64_t end = unsb_monotonic_ms() + ms;
  while (unsb_monotonic_ms() < end) {
    if (poll(&pfd, 1, 50) > 0) {
      ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return 1;
    }
  }
  return 0;
}

/* Waits up to 5 s until the client has parsed n events. */
static int wait_client(peer *p, int n) {
  struct timespec until;
  int ok_ = 1;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  pthread_mutex_lock(&p->mu);
  while (p->client_events < n && ok_)
    ok_ = pthread_cond_timedwait(&p->cv, &p->mu, &until) == 0;
  ok_ = p->client_events >= n;
  pthread_mutex_unlock(&p->mu);
  return ok_;
}

static void mark(peer *p, int *field, int value) {
  pthread_mutex_lock(&p->mu);
  *field = value;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static int read_request(peer *p, int fd) {
  size_t n = 0;
  struct pollfd pfd = {fd, POLLIN, 0};
  while (n < sizeof p->request - 1 && !strstr(p->request, "\r\n\r\n")) {
    if (poll(&pfd, 1, 5000) <= 0) return -1;
    ssize_t r = recv(fd, p->request + n, sizeof p->request - 1 - n, 0);
    if (r <= 0) return -1;
    n += (size_t)r;
    p->request[n] = '\0';
  }
  return 0;
}

static const char SSE_HEAD[] =
  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
  "Cache-Control: no-cache, no-transform\r\nConnection: close\r\n"
  "Transfer-Encoding: chunked\r\n\r\n";

static void scenario(peer *p, int fd) {
  char ev[64];
  if (p->scenario == ERROR_503) {
    const char *body = "{\"error\":\"not ready yet\"}";
    char r[256];
    snprintf(r, sizeof r, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(body), body);
    send_all(fd, r, strlen(r));
    return;
  }
  if (p->scenario == JSON_200) {
    const char *r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "Content-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}";
    send_all(fd, r, strlen(r));
    p->saw_close = wait_close(fd, 3000);
    return;
  }
  if (send_all(fd, SSE_HEAD, sizeof SSE_HEAD - 1) != 0) return;
  for (int i = 1; i <= 100; i++) {          /* FOREVER: at most 100 events */
    snprintf(ev, sizeof ev, "event: message\ndata: {\"seq\":%d}\n\n", i);
    if (send_chunk(fd, ev) != 0) break;
    mark(p, &p->sent, i);
    if (p->scenario == SLOW && i < 3 && !wait_client(p, i)) {
      p->handshake_timeout = 1;
      break;
    }
    if (p->scenario == SLOW && i == 3) {
      send_all(fd, "0\r\n\r\n", 5);
      mark(p, &p->done, 1);
      break;
    }
    if (p->scenario == ONE_THEN_IDLE) {
      mark(p, &p->saw_close, wait_close(fd, 5000));
      return;
    }
    if (wait_close(fd, 50)) {                 /* FOREVER: ~20 events a second */
      mark(p, &p->saw_close, 1);
      return;
    }
  }
  if (p->scenario == SLOW) wait_close(fd, 3000);
}

static void *serve(void *ud) {
  peer *p = ud;
  struct pollfd pfd = {p->listen_fd, POLLIN, 0};
  if (poll(&pfd, 1, 5000) <= 0) return NULL;
  int fd = accept(p->listen_fd, NULL, NULL);
  if (fd < 0) return NULL;
  p->accepted = 1;
  if (read_request(p, fd) == 0) scenario(p, fd);
  close(fd);
  return NULL;
}

static int peer_start(peer *p, int scenario_) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  memset(p, 0, sizeof *p);
  p->scenario = scenario_;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->listen_fd, 4) != 0 || getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  p->port = ntohs(a.sin_port);
  return pthread_create(&p->thread, NULL, serve, p) == 0 ? 0 : -1;
}

static void peer_stop(peer *p) {
  pthread_join(p->thread, NULL);   /* serve() ends within its own bounded waits */
  close(p->listen_fd);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
}

/* ---------------------------------------------------------------------
** the client
** ------------------------------------------------------------------- */

typedef struct {
  peer *p;
  unsb_sse *sse;
  unsb_http *h;
  int events;
  int before_end;          /* events parsed while the peer had not finished */
  char last[64];
  int cancel_at;           /* on_data stops at this event (0 = never) */
  int interrupt_at;        /* sets the interrupt flag at this event */
  int head_mode;           /* what on_head answers */
  long head_status;
  char head_type[64];
  int data_calls;
  int reentry_rc;          /* a request started from inside on_data */
  unsb_error reentry_err;
} client;

static int on_event(void *ud, const unsb_sse_event *ev) {
  client *c = ud;
  c->events++;
  snprintf(c->last, sizeof c->last, "%s", ev->data);
  pthread_mutex_lock(&c->p->mu);
  if (!c->p->done) c->before_end++;
  c->p->client_events = c->events;
  pthread_cond_broadcast(&c->p->cv);
  pthread_mutex_unlock(&c->p->mu);
  if (c->interrupt_at && c->events == c->interrupt_at) unsb_interrupt_request();
  return c->cancel_at && c->events >= c->cancel_at ? 1 : 0;
}

static int on_data(void *ud, const char *data, size_t len) {
  client *c = ud;
  unsb_error err;
  c->data_calls++;
  if (c->h && c->data_calls == 1) {
    unsb_http_request again = {.method = "GET", .url = "http://127.0.0.1:1/", .timeout_ms = 1000};
    unsb_http_xfer *x = unsb_http_open(c->h, &again, &c->reentry_err);
    c->reentry_rc = x ? 0 : -1;
    unsb_http_close(x);
  }
  return unsb_sse_feed(c->sse, data, len, on_event, c, &err) != 0;
}

static int on_head(void *ud, long status, const char *content_type) {
  client *c = ud;
  c->head_status = status;
  snprintf(c->head_type, sizeof c->head_type, "%s", content_type ? content_type : "");
  return c->head_mode;
}

/* One streamed POST to the peer with the Control Plane's header set,
** opened (c->sse ready for on_data); NULL with err when the open failed. */
static unsb_http_xfer *open_stream(unsb_http *h, peer *p, client *c, int use_head,
                                   unsb_error *err) {
  char url[64];
  unsb_cp_headers hs;
  unsb_cp_header_opts o = {
    .token = "scoped-token", .subject = "0645ca35688bd5af1135ecc65edaa4ce",
    .traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    .mcp_tool = "shell", .streaming = 1,
  };
  unsb_http_stream st = {use_head ? on_head : NULL, on_data, c};
  unsb_http_xfer *x;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/sandboxes/sb-0123456789ab/mcp", p->port);
  if (unsb_cp_headers_build(&o, &hs, err) != 0) return NULL;
  unsb_http_request req = {
    .method = "POST", .url = url, .headers = (const char *const *)hs.lines, .n_headers = hs.n,
    .body = "{}", .body_len = 2, .timeout_ms = 10000, .stream = &st,
  };
  c->p = p;
  c->sse = unsb_sse_new(0, 0);
  x = unsb_http_open(h, &req, err);   /* the engine has copied the headers and the stream */
  unsb_cp_headers_free(&hs);
  return x;
}

/* The whole streamed call, driven until it ends. */
static int fetch(unsb_http *h, peer *p, client *c, int use_head, unsb_http_response *resp,
                 unsb_error *err) {
  int rc = xfer_finish(open_stream(h, p, c, use_head, err), resp, err);
  unsb_sse_free(c->sse);
  return rc;
}

static unsb_http *engine(void) {
  unsb_error err;
  unsb_http_config cfg = {.connect_timeout_ms = 2000, .max_response = 1 << 20};
  return unsb_http_new(&cfg, &err);
}

/* ---------------------------------------------------------------------
** the tests
** ------------------------------------------------------------------- */

static void events_before_the_end(unsb_http *h) {
  peer p;
  client c = {0};
  unsb_http_response resp;
  unsb_error err;
  ok(peer_start(&p, SLOW) == 0, "peer listening on 127.0.0.1");
  int rc = fetch(h, &p, &c, 0, &resp, &err);
  peer_stop(&p);
  ok(rc == 0 && resp.status == 200, "streamed request answered 200 (%s)", rc ? err.message : "ok");
  ok(!p.handshake_timeout, "the peer never waited in vain: each event reached the client first");
  ok(c.events == 3 && c.before_end >= 2, "3 events, at least the first 2 parsed before the response ended");
  is_str(c.last, "{\"seq\":3}", "the last event");
  ok(resp.streamed > 0 && resp.body && resp.body[0] == '\0', "bytes were streamed, none buffered");
  is_str(resp.content_type, "text/event-stream; charset=utf-8", "content type reported");
  /* the request carried the Control Plane's header set */
  ok(strstr(p.request, "POST /v1/sandboxes/sb-0123456789ab/mcp HTTP/1.1\r\n") != NULL, "request line");
  ok(strstr(p.request, "\r\nAuthorization: Bearer scoped-token\r\n") != NULL, "Authorization");
  ok(strstr(p.request, "\r\nX-Acting-Subject: 0645ca35688bd5af1135ecc65edaa4ce\r\n") != NULL,
     "X-Acting-Subject on the stream");
  ok(strstr(p.request, "\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-") != NULL, "traceparent");
  ok(strstr(p.request, "\r\nAccept: text/event-stream, application/json\r\n") != NULL &&
     strstr(p.request, "\r\nMcp-Name: shell\r\n") != NULL, "MCP streaming headers");
  unsb_http_response_free(&resp);
}

static void cancel_from_callback(unsb_http *h) {
  peer p;
  client c = {.cancel_at = 2};
  unsb_http_response resp;
  unsb_error err;
  peer_start(&p, FOREVER);
  int64_t t0 = unsb_monotonic_ms();
  int rc = fetch(h, &p, &c, 0, &resp, &err);
  int64_t dt = unsb_monotonic_ms() - t0;
  peer_stop(&p);
  ok(rc == -1 && err.kind == UNSB_ECANCELLED, "on_data cancels: kind cancelled (%s)", err.message);
  /* the kind tells the cancel from the 10 s timeout; the bound only
  ** says "not at the timeout", far from what a busy machine adds */
  ok(c.events == 2 && dt < 9000, "stopped at the second event, after %lld ms", (long long)dt);
  ok(p.saw_close && p.sent < 100, "the peer saw the connection closed after %d events", p.sent);
}

static void cancel_by_interrupt(unsb_http *h) {
  peer p;
  client c = {.interrupt_at = 1};
  unsb_http_response resp;
  unsb_error err;
  peer_start(&p, ONE_THEN_IDLE);
  int64_t t0 = unsb_monotonic_ms();
  int rc = fetch(h, &p, &c, 0, &resp, &err);
  int64_t dt = unsb_monotonic_ms() - t0;
  peer_stop(&p);
  ok(rc == -1 && err.kind == UNSB_EINTERRUPTED, "the interrupt flag ends a silent stream");
  ok(dt < 9000, "before the 10 s timeout: %lld ms (slices of 100 ms)", (long long)dt);
  ok(p.saw_close, "the peer saw the connection closed");
  ok(!unsb_interrupt_pending(), "the interrupt was consumed");
}

/* What a Lua consumer does with a stream it no longer wants (Transfer's
** close): the loop is stepped until the first event, then the transfer is
** closed while the peer still holds it open. */
static void closed_by_its_consumer(unsb_http *h) {
  peer p;
  client c = {0};
  unsb_error err;
  peer_start(&p, ONE_THEN_IDLE);
  unsb_http_xfer *x = open_stream(h, &p, &c, 0, &err);
  for (int i = 0; x && i < 200 && c.events == 0 && !unsb_http_done(x); i++)
    unsb_loop_step(unsb_http_loop(h), 50, &err);
  int running = x && c.events == 1 && !unsb_http_done(x);
  unsb_http_close(x);
  unsb_sse_free(c.sse);
  peer_stop(&p);
  ok(running, "a silent stream, its first event in, still running");
  ok(p.saw_close, "closing it closed the connection");
}

static void error_bodies_are_buffered(unsb_http *h) {
  peer p;
  client c = {0};
  unsb_http_response resp;
  unsb_error err;
  peer_start(&p, ERROR_503);
  int rc = fetch(h, &p, &c, 0, &resp, &err);
  peer_stop(&p);
  ok(rc == 0 && resp.status == 503, "a 503 answer is a response, not an error");
  is_str(resp.body, "{\"error\":\"not ready yet\"}", "its body is buffered for the caller");
  ok(c.data_calls == 0 && resp.streamed == 0, "on_data never ran");
  unsb_http_response_free(&resp);
}

static void on_head_decides(unsb_http *h) {
  peer p;
  client c = {.head_mode = UNSB_HTTP_BUFFER};
  unsb_http_response resp;
  unsb_error err;
  peer_start(&p, JSON_200);
  int rc = fetch(h, &p, &c, 1, &resp, &err);
  peer_stop(&p);
  ok(rc == 0 && c.head_status == 200 && strcmp(c.head_type, "application/json") == 0,
     "on_head saw 200 application/json");
  is_str(resp.body, "{\"ok\":true}", "BUFFER: the JSON body is in the response");
  ok(c.data_calls == 0, "and was not streamed");
  unsb_http_response_free(&resp);

  client d = {.head_mode = UNSB_HTTP_CANCEL};
  peer_start(&p, JSON_200);
  rc = fetch(h, &p, &d, 1, &resp, &err);
  peer_stop(&p);
  ok(rc == -1 && err.kind == UNSB_ECANCELLED && d.head_status == 200, "CANCEL from on_head");
  ok(p.saw_close, "the peer saw the connection closed");
}

static void refused_before_io(unsb_http *h) {
  peer p;
  client c = {0};
  unsb_http_response resp;
  unsb_error err;
  char url[64];
  const char *bad[] = {"X-Ok: 1", "X-Evil: a\r\nInjected: 1"};
  unsb_http_stream st = {NULL, on_data, &c};
  peer_start(&p, JSON_200);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", p.port);
  unsb_http_request req = {.method = "GET", .url = url, .headers = bad, .n_headers = 2,
                           .timeout_ms = 2000, .stream = &st};
  ok(xfer_call(h, &req, &resp, &err) == -1 && err.kind == UNSB_EVALIDATION &&
     strstr(err.message, "header line 2"), "a header line with CR LF is refused");
  unsb_http_stream no_data = {NULL, NULL, &c};
  req.n_headers = 1;
  req.stream = &no_data;
  ok(xfer_call(h, &req, &resp, &err) == -1 && err.kind == UNSB_EVALIDATION,
     "a stream without on_data is refused");
  /* now a good request, so the peer's accept() ends; it is the first connection */
  req.stream = NULL;
  ok(xfer_call(h, &req, &resp, &err) == 0 && resp.status == 200,
     "a plain buffered request still works on the same engine");
  ok(resp.new_connections == 1, "... on a fresh connection (the refused ones never connected)");
  unsb_http_response_free(&resp);
  peer_stop(&p);
}

static void no_reentry(unsb_http *h) {
  peer p;
  client c = {.h = h};
  unsb_http_response resp;
  unsb_error err;
  peer_start(&p, SLOW);
  int rc = fetch(h, &p, &c, 0, &resp, &err);
  peer_stop(&p);
  ok(rc == 0 && c.events == 3, "stream completes");
  ok(c.reentry_rc == -1 && c.reentry_err.kind == UNSB_EVALIDATION &&
     strstr(c.reentry_err.message, "busy"), "a request from inside on_data is refused: busy");
  unsb_http_response_free(&resp);
}

int main(void) {
  unsb_http *h = engine();
  ok(h != NULL, "engine");
  events_before_the_end(h);
  cancel_from_callback(h);
  cancel_by_interrupt(h);
  closed_by_its_consumer(h);
  error_bodies_are_buffered(h);
  on_head_decides(h);
  refused_before_io(h);
  no_reentry(h);
  unsb_http_free(h);
  return tap_done();
}
