/*
** libcurl and libcrypto loaded on first use (csrc/lazy): linked like
** unsandbox/core.so (the core, the forwarders, -ldl; no -lcurl, no
** -lcrypto), this checks in /proc/self/maps that neither library is
** mapped until the core first needs it, that each forwarder reaches the
** real function (known answers for the digest, HMAC, base64; a real HTTP
** exchange with a peer on 127.0.0.1 that sees every option the engine
** sets: long, pointer, callback and curl_off_t), and that wiping a
** secret loads nothing.
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <openssl/crypto.h>

#include "core/base64.h"
#include "core/digest.h"
#include "core/http.h"
#include "core/sign.h"
#include "tests/tap.h"
#include "tests/xfer_util.h"

/* 1 when a mapping of this process names `lib`. */
static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, lib) != NULL;
  if (f) fclose(f);
  return found;
}

/* ---------------------------------------------------------------------
** A peer that answers one request: it keeps what it read
** ------------------------------------------------------------------- */

typedef struct peer {
  int fd, port;
  pthread_t t;
  char got[8192];
} peer;

static void *serve(void *arg) {
  peer *p = arg;
  int c = accept(p->fd, NULL, NULL);
  if (c < 0) return NULL;
  struct timeval tv = { 5, 0 };
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t len = 0;
  ssize_t n;
  /* headers, then the 2-byte body the test sends */
  while (len < sizeof p->got - 1 && (n = read(c, p->got + len, sizeof p->got - 1 - len)) > 0) {
    len += (size_t)n;
    p->got[len] = '\0';
    char *end = strstr(p->got, "\r\n\r\n");
    if (end && strlen(end + 4) >= 2) break;
  }
  static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Request-Id: req_1\r\n"
                              "Connection: close\r\n\r\nok";
  if (write(c, reply, sizeof reply - 1) < 0) { /* the client sees the error */ }
  close(c);
  return NULL;
}

static int peer_start(peer *p) {
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t al = sizeof a;
  memset(p->got, 0, sizeof p->got);
  if ((p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
      bind(p->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->fd, 1) != 0 ||
      getsockname(p->fd, (struct sockaddr *)&a, &al) != 0) return -1;
  p->port = ntohs(a.sin_port);
  return pthread_create(&p->t, NULL, serve, p) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------------
** The tests
** ------------------------------------------------------------------- */

static void test_crypto(void) {
  char secret[] = "a secret";
  OPENSSL_cleanse(secret, sizeof secret);
  ok(secret[0] == 0 && secret[7] == 0 && !mapped("libcrypto"),
     "OPENSSL_cleanse wipes without loading libcrypto");

  char hex[65];
  ok(unsb_sha256_hex("abc", 3, hex) == 0 &&
     !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
     "SHA-256 of 'abc' (FIPS 180-2 vector)");
  ok(mapped("libcrypto") && !mapped("libcurl"), "the digest loaded libcrypto, not libcurl");

  /* RFC 4231, test case 2 */
  const char *msg = "what do ya want for nothing?";
  ok(unsb_hmac_hex("Jefe", 4, msg, strlen(msg), hex) == 0 &&
     !strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
     "HMAC-SHA256 (RFC 4231 test case 2)");
  ok(unsb_signature_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") &&
     !unsb_signature_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3844"),
     "constant-time compare: equal and different");

  size_t n = 0;
  char *b = unsb_base64_encode((const unsigned char *)"hello", 5, &n);
  unsigned char *d = b ? unsb_base64_decode(b, n, &n) : NULL;
  ok(b && !strcmp(b, "aGVsbG8=") && d && n == 5 && !memcmp(d, "hello", 5),
     "base64 both ways (%s)", b ? b : "null");
  free(b);
  free(d);
  ok(unsb_base64_decode("a=b=", 4, &n) == NULL, "base64 still refuses '=' inside");

  unsigned char r1[16] = {0}, r2[16] = {0};
  ok(unsb_random_bytes(r1, sizeof r1) == 0 && unsb_random_bytes(r2, sizeof r2) == 0 &&
     memcmp(r1, r2, sizeof r1) != 0, "random bytes, different twice");
}

static void test_http(void) {
  unsb_error err;
  unsb_http_config cfg = { .connect_timeout_ms = 2000, .max_response = 1 << 20 };
  ok(!mapped("libcurl"), "no libcurl before the first engine");
  unsb_http *h = unsb_http_new(&cfg, &err);
  ok(h != NULL && mapped("libcurl"), "the first engine loads libcurl");
  if (!h) return;

  peer p;
  if (peer_start(&p) != 0) { ok(0, "peer on 127.0.0.1"); unsb_http_free(h); return; }
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/echo", p.port);
  const char *headers[] = { "X-Lazy: yes" };
  unsb_http_request req = { .method = "POST", .url = url, .headers = headers, .n_headers = 1,
                            .body = "{}", .body_len = 2, .timeout_ms = 5000 };
  unsb_http_response resp;
  int rc = xfer_call(h, &req, &resp, &err);
  pthread_join(p.t, NULL);
  close(p.fd);
  ok(rc == 0 && resp.status == 200 && resp.body_len == 2 && !memcmp(resp.body, "ok", 2) &&
     resp.request_id && !strcmp(resp.request_id, "req_1"),
     "a POST through the forwarders: status, body and a header back (%s)",
     rc ? err.message : "ok");
  ok(strstr(p.got, "POST /echo HTTP/1.1\r\n") && strstr(p.got, "\r\nX-Lazy: yes\r\n") &&
     strstr(p.got, "\r\nContent-Length: 2\r\n") && strstr(p.got, "\r\n\r\n{}"),
     "the peer got the method, the header, the curl_off_t length and the body");
  if (rc == 0) unsb_http_response_free(&resp);

  /* a closed port: curl's own error text comes back through the forwarders */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", p.port);
  req.method = "GET"; req.body = NULL; req.body_len = 0; req.n_headers = 0;
  rc = xfer_call(h, &req, &resp, &err);
  ok(rc != 0 && err.kind == UNSB_ETRANSPORT && strstr(err.message, "onnect"),
     "a refused connection is a transport error with curl's text (%s)", err.message);
  if (rc == 0) unsb_http_response_free(&resp);
  unsb_http_free(h);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  ok(!mapped("libcurl") && !mapped("libcrypto"), "neither library is mapped at start");
  test_crypto();
  test_http();
  return tap_done();
}
