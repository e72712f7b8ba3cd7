/*
** The transport's HTTP 101 upgrade (http/upgrade.c) with a protocol of
** the test's own (an echo), driven by plain sockets on 127.0.0.1: the 101
** and its headers, bytes the client sent with its request reaching the
** handler first, the socket owned by the handler until it gives it back
** (or returns without: the transport gives it back), a refusal that stays
** a plain reply, and the stop: an owner that listens to the stop eventfd
** says goodbye, one that does not is cut, and ux_http_stop returns with
** no handler left within its bounds.
*/
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/http/http.h"
#include "server/http/upgrade.h"
#include "tests/tap.h"

/* Echoes until the client ends, or (polite) until the server stops. */
static void echo(ux_req *r, int polite) {
  ux_upgraded up;
  if (ux_req_upgrade(r, "x-echo", &up) < 0) return;
  char hello[300];
  int n = snprintf(hello, sizeof hello, "extra=[%.*s]\n", (int)up.extra_len, (const char *)up.extra);
  send(up.fd, hello, (size_t)n, MSG_NOSIGNAL);
  for (int i = 0; i < 100000; i++) {
    struct pollfd p[2] = {{up.fd, POLLIN, 0}, {polite ? up.stop_fd : -1, POLLIN, 0}};
    if (poll(p, 2, 10000) <= 0) break;
    if (p[1].revents) {
      send(up.fd, "bye\n", 4, MSG_NOSIGNAL);
      break;
    }
    char buf[512];
    ssize_t k = recv(up.fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    send(up.fd, buf, (size_t)k, MSG_NOSIGNAL);
  }
  if (polite) ux_req_upgrade_close(r);          /* the rude one leaves it to the transport */
}

static void handle(void *ctx, ux_req *r) {
  (void)ctx;
  if (!strcmp(r->path, "/echo")) echo(r, 1);
  else if (!strcmp(r->path, "/rude")) echo(r, 0);
  else if (!strcmp(r->path, "/refuse")) ux_reply_error(r, 403, "forbidden", "no upgrade for you");
  else ux_reply_json(r, 200, json_pack("{s:s}", "plain", "yes"));
}

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

/* Reads until `want` is in buf (or the socket ends / 5 s); 1 when it came. */
static int read_until(int fd, char *buf, size_t cap, size_t *len, const char *want) {
  for (int i = 0; i < 1000 && *len < cap - 1; i++) {
    buf[*len] = '\0';
    if (strstr(buf, want)) return 1;
    ssize_t k = recv(fd, buf + *len, cap - 1 - *len, 0);
    if (k <= 0) break;
    *len += (size_t)k;
  }
  buf[*len] = '\0';
  return strstr(buf, want) != NULL;
}

/* Opens an upgraded connection to path, sending `early` with the request. */
static int upgrade(unsigned port, const char *path, const char *early, char *buf, size_t cap,
                   size_t *len) {
  char req[512];
  int fd = dial(port);
  if (fd < 0) return -1;
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: x-echo\r\n"
                   "Connection: Upgrade\r\n\r\n%s", path, early);
  *len = 0;
  if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n || !read_until(fd, buf, cap, len, "\r\n\r\n")) {
    close(fd);
    return -1;
  }
  return fd;
}

static unsigned port_of(const char *url) {
  const char *colon = strrchr(url, ':');
  return colon ? (unsigned)atoi(colon + 1) : 0;
}

static void test_echo(unsigned port) {
  char buf[4096];
  size_t len;
  int fd = upgrade(port, "/echo", "early-bytes", buf, sizeof buf, &len);
  ok(fd >= 0 && !strncmp(buf, "HTTP/1.1 101", 12), "a 101 answer");
  ok(strcasestr(buf, "\r\nUpgrade: x-echo") && strcasestr(buf, "\r\nConnection: Upgrade"),
     "with Upgrade and Connection: Upgrade");
  ok(!strcasestr(buf, "Content-Type") && strcasestr(buf, "X-Request-Id: req_"),
     "no content type, the request id as every reply");
  ok(read_until(fd, buf, sizeof buf, &len, "extra=[early-bytes]"),
     "bytes sent with the request reach the handler as extra bytes");
  ok(send(fd, "ping-1", 6, MSG_NOSIGNAL) == 6 && read_until(fd, buf, sizeof buf, &len, "ping-1"),
     "then the socket is the handler's, both ways");
  close(fd);
  fd = upgrade(port, "/rude", "", buf, sizeof buf, &len);
  ok(fd >= 0 && !strncmp(buf, "HTTP/1.1 101", 12), "a handler that never gives the socket back");
  if (fd >= 0) close(fd);
  fd = upgrade(port, "/refuse", "", buf, sizeof buf, &len);
  ok(fd >= 0 && !strncmp(buf, "HTTP/1.1 403", 12) && !strcasestr(buf, "Upgrade:"),
     "a refusal stays a plain reply");
  if (fd >= 0) close(fd);
  fd = upgrade(port, "/plain", "", buf, sizeof buf, &len);
  ok(fd >= 0 && !strncmp(buf, "HTTP/1.1 200", 12), "the listener still serves after all that");
  if (fd >= 0) close(fd);
}

static void test_stop(ux_http *h, unsigned port) {
  char b1[4096], b2[4096];
  size_t l1, l2;
  int polite = upgrade(port, "/echo", "", b1, sizeof b1, &l1);
  int rude = upgrade(port, "/rude", "", b2, sizeof b2, &l2);
  ok(polite >= 0 && rude >= 0 && read_until(polite, b1, sizeof b1, &l1, "extra=[]") &&
     read_until(rude, b2, sizeof b2, &l2, "extra=[]"), "two upgraded sockets held by their handlers");
  long t0 = ux_now_ms();
  unsigned left = ux_http_stop(h, t0 + 1000);
  long took = ux_now_ms() - t0;
  ok(left == 0, "the stop leaves no handler behind (%u)", left);
  ok(took < 5000, "within the drain and the upgrade drain (%ld ms)", took);
  ok(read_until(polite, b1, sizeof b1, &l1, "bye\n"), "the owner that listens to the stop said goodbye");
  char c;
  ok(recv(rude, &c, 1, 0) == 0, "the other one's socket was cut");
  close(polite);
  close(rude);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char url[128], err[256];
  ux_http_config cfg;
  ux_http_config_default(&cfg, ux_http_raise_nofile(), 1);
  cfg.listen = "127.0.0.1:0";
  cfg.router = (ux_http_router){ handle, NULL, NULL, NULL, NULL };
  ux_http *h = ux_http_start(&cfg, url, sizeof url, err, sizeof err);
  ok(h != NULL, "a listener (%s)", h ? url : err);
  if (!h) return tap_done();
  unsigned port = port_of(url);
  test_echo(port);
  test_stop(h, port);
  return tap_done();
}
