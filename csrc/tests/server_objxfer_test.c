/*
** Object content over HTTP (cp/objects/transfer.h) on a real listener of the
** transport, driven by plain sockets on 127.0.0.1: a streamed upload and
** download with their headers, and what refused uploads leave behind
** (nothing): no Content-Length, a declared length over max_bytes
** (answered before the body is sent), a sha256 mismatch, a client that
** disconnects mid-body. The Control Plane routes on top are covered by
** spec/cp_objects_spec.lua.
*/
#include <arpa/inet.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "server/cp/objects/transfer.h"
#include "server/fsutil.h"
#include "server/http/http.h"
#include "tests/tap.h"

#define B "agent-data"
#define MAX (2u << 20)

static ux_store *st;
static ux_objstore *os;
static char data[256];

/* PUT /k/<name>[?sha=<hex>]: receive into k/<name>; GET /k/<name>: send. */
static void handle(void *ctx, ux_req *r) {
  (void)ctx;
  char err[256];
  const char *key = r->path + 1;
  if (!strcmp(r->method, "PUT")) {
    const char *sha = ux_req_query(r, "sha");
    ux_obj_meta m;
    int status = ux_objxfer_receive(r, os, "t", B, key, "application/x-test", MAX, sha ? sha : "", &m, err, sizeof err);
    if (status == 201) ux_reply_json(r, 201, json_pack("{s:s, s:I}", "sha256", m.sha256, "bytes", (json_int_t)m.bytes));
    else if (status > 0) ux_reply_json(r, status, json_pack("{s:s}", "error", err));
    else ux_reply_json(r, 499, json_pack("{s:s}", "error", "gone"));
    return;
  }
  int fd;
  ux_obj_meta m;
  if (ux_objstore_open_read(os, B, key, &fd, &m) != UX_OBJ_OK) {
    ux_reply_json(r, 404, json_pack("{s:s}", "error", "object not found"));
    return;
  }
  ux_objxfer_send(r, fd, &m, NULL, NULL);
}

static void admit(void *ctx, ux_req *r, ux_body_policy *p) {
  (void)ctx;
  if (!strcmp(r->method, "PUT")) { p->stream = 1; p->limit = 64u << 20; }
}

/* ------------------------------------------------------------ client */

typedef struct { int status; char head[4096]; char *body; size_t body_len; } resp;

static int dial(unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  struct timeval tv = { 10, 0 };
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { close(fd); return -1; }
  return fd;
}

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static void receive(int fd, resp *out) {
  size_t cap = 8u << 20, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  while (len < cap && (n = recv(fd, buf + len, cap - len, 0)) > 0) len += (size_t)n;
  free(out->body);
  memset(out, 0, sizeof *out);
  out->status = -1;
  char *end = memmem(buf, len, "\r\n\r\n", 4);
  if (end && (size_t)(end - buf) < sizeof out->head) {
    memcpy(out->head, buf, (size_t)(end - buf));
    sscanf(out->head, "HTTP/1.%*d %d", &out->status);
    out->body_len = len - (size_t)(end + 4 - buf);
    out->body = malloc(out->body_len + 1);
    memcpy(out->body, end + 4, out->body_len);
    out->body[out->body_len] = '\0';
  }
  free(buf);
}

static void fetch(unsigned port, const char *method, const char *path, const char *head_extra,
                  const void *body, size_t len, int with_length, resp *out) {
  char head[1024];
  int fd = dial(port);
  out->status = -1;
  if (fd < 0) return;
  snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s", method, path,
           head_extra ? head_extra : "");
  if (with_length) snprintf(head + strlen(head), sizeof head - strlen(head), "Content-Length: %zu\r\n", len);
  strcat(head, "\r\n");
  if (send_all(fd, head, strlen(head)) == 0 && body) send_all(fd, body, len);
  receive(fd, out);
  close(fd);
}

static int tmp_files(void) {
  char path[400];
  snprintf(path, sizeof path, "%s/objects/tmp", data);
  DIR *d = opendir(path);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* ------------------------------------------------------------- tests */

static resp R;

static void round_trip(unsigned port) {
  size_t n = (3u << 19) + 7;      /* 1.5 MiB and a bit */
  char *body = malloc(n), sha[65];
  unsigned char md[32];
  for (size_t i = 0; i < n; i++) body[i] = (char)(i * 13 + (i >> 8));
  EVP_Digest(body, n, md, NULL, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++) sprintf(sha + 2 * i, "%02x", md[i]);
  char path[200];
  snprintf(path, sizeof path, "/k/big?sha=%s", sha);
  fetch(port, "PUT", path, NULL, body, n, 1, &R);
  ok(R.status == 201 && strstr(R.body, sha), "a 1.5 MiB upload with its sha256 is stored (%d %s)", R.status, R.body);
  fetch(port, "GET", "/k/big", NULL, NULL, 0, 0, &R);
  ok(R.status == 200 && R.body_len == n && !memcmp(R.body, body, n), "and streams back whole");
  char want[200];
  ux_obj_meta m;
  ux_objstore_stat(os, B, "k/big", &m);
  snprintf(want, sizeof want, "\r\nETag: \"%s\"", m.etag);
  ok(strcasestr(R.head, want) != NULL, "ETag is the quoted MD5");
  snprintf(want, sizeof want, "\r\nX-Object-Version-Id: %s", m.version_id);
  ok(strcasestr(R.head, want) != NULL, "X-Object-Version-Id");
  snprintf(want, sizeof want, "\r\nX-Content-SHA256: %s", sha);
  ok(strcasestr(R.head, want) != NULL, "X-Content-SHA256");
  snprintf(want, sizeof want, "\r\nContent-Length: %zu", n);
  ok(strcasestr(R.head, want) && strcasestr(R.head, "\r\nContent-Type: application/x-test"),
     "Content-Length and the stored Content-Type");
  free(body);
  fetch(port, "PUT", "/k/empty", NULL, NULL, 0, 1, &R);
  ok(R.status == 201, "an empty upload");
  fetch(port, "GET", "/k/empty", NULL, NULL, 0, 0, &R);
  ok(R.status == 200 && R.body_len == 0 && strcasestr(R.head, "\r\nContent-Length: 0"), "an empty download");
}

static void refusals(unsigned port) {
  ux_obj_meta m;
  fetch(port, "PUT", "/k/chunked", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", 15, 0, &R);
  ok(R.status == 400 && strstr(R.body, "Content-Length is required"), "no Content-Length: 400 (%s)", R.body);
  /* the declared length alone decides: the body is never sent */
  int fd = dial(port);
  char head[200];
  snprintf(head, sizeof head, "PUT /k/huge HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\n\r\n", MAX + 1);
  long t0 = ux_now_ms();
  if (fd >= 0 && send_all(fd, head, strlen(head)) == 0) receive(fd, &R);
  if (fd >= 0) close(fd);
  ok(R.status == 400 && strstr(R.body, "exceeds max_bytes") && ux_now_ms() - t0 < 3000,
     "Content-Length over max_bytes: 400 before the body (%s)", R.body ? R.body : "");
  fetch(port, "PUT", "/k/sha?sha=0000000000000000000000000000000000000000000000000000000000000000", NULL,
        "hello", 5, 1, &R);
  ok(R.status == 400 && strstr(R.body, "sha256 does not match"), "a sha256 mismatch: 400");
  ok(ux_objstore_stat(os, B, "k/chunked", &m) == UX_OBJ_ENOENT && ux_objstore_stat(os, B, "k/huge", &m) ==
     UX_OBJ_ENOENT && ux_objstore_stat(os, B, "k/sha", &m) == UX_OBJ_ENOENT, "none of them stored anything");
  /* cut off mid-body */
  fd = dial(port);
  snprintf(head, sizeof head, "PUT /k/cut HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
  char part[5000];
  memset(part, 'c', sizeof part);
  if (fd >= 0) { send_all(fd, head, strlen(head)); send_all(fd, part, sizeof part); t_sleep_ms(200); close(fd); }
  int gone = 0;
  for (int i = 0; i < 50 && !gone; i++) {      /* bounded: 5 s */
    t_sleep_ms(100);
    gone = tmp_files() == 0;
  }
  ok(gone && ux_objstore_stat(os, B, "k/cut", &m) == UX_OBJ_ENOENT,
     "an upload cut off mid-body leaves no version and no file");
  fetch(port, "GET", "/k/none", NULL, NULL, 0, 0, &R);
  ok(R.status == 404, "a missing object: 404");
}

int main(void) {
  char err[256], url[128];
  snprintf(data, sizeof data, "/tmp/objxfer-test-XXXXXX");
  if (!mkdtemp(data)) return 1;
  st = ux_store_open(data, err, sizeof err);
  os = st ? ux_objstore_open(st, data, err, sizeof err) : NULL;
  ux_http_config cfg;
  ux_http_config_default(&cfg, ux_http_raise_nofile(), 1);
  cfg.listen = "127.0.0.1:0";
  cfg.max_body = 1 << 20;
  cfg.router = (ux_http_router){ .handle = handle, .admit = admit };
  ux_http *h = os ? ux_http_start(&cfg, url, sizeof url, err, sizeof err) : NULL;
  ok(h != NULL, "store and listener start (%s)", h ? url : err);
  if (!h) return tap_done();
  unsigned port = (unsigned)atoi(strrchr(url, ':') + 1);
  round_trip(port);
  refusals(port);
  free(R.body);
  ok(ux_http_stop(h, ux_now_ms() + 2000) == 0, "the listener stops");
  ux_objstore_close(os);
  ux_store_close(st);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", data);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", data);
  return tap_done();
}
