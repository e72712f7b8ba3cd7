/*
** Test-only routes (with --enable-faults) that exercise the transport's
** streaming, since no production route streams yet:
**   PUT  /_faults/echo-hash  a streaming-body route: reads the body piece
**        by piece and answers its length and SHA-256, so a test can send a
**        body far larger than memory growth allows; to make the server the
**        bottleneck it can read slowly (X-Fault-Read-Ms: 0-1000 ms between
**        16 KiB reads) or stall once after its first read
**        (X-Fault-Stall-Ms: 0-20000);
**   POST /_faults/stream     {"chunks","ms","size"}: a text/event-stream
**        reply of `chunks` events of about `size` bytes, `ms` apart; the
**        wait between events notices a client that went away;
**   GET  /_faults/stats      counters of those streams and when a writer
**        last saw -1 (ux_now_ms, the CLOCK_MONOTONIC milliseconds a test
**        on the same machine can compare with its own).
*/
#include "server/http/faults.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/http/stream.h"
#include "server/mem.h"

#define READ_PIECE (16 * 1024)

/* A header of milliseconds, 0..max; anything else is 0. */
static long header_ms(const ux_req *r, const char *name, long max) {
  const char *v = ux_req_header(r, name);
  if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 6) return 0;
  long ms = atol(v);
  return ms <= max ? ms : 0;
}

static void nap(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

/* Reads the whole body into the digest; its length, or -1. */
static long long digest_body(ux_req *r, EVP_MD_CTX *md, long delay, long stall) {
  char *buf = ux_xmalloc(READ_PIECE);
  long long total = 0;
  ssize_t n;
  while ((n = ux_req_read_body(r, buf, READ_PIECE)) > 0) {
    if (EVP_DigestUpdate(md, buf, (size_t)n) != 1) { n = -1; break; }
    if (total == 0 && stall) nap(stall);
    total += n;
    if (delay) nap(delay);
  }
  free(buf);
  return n < 0 ? -1 : total;
}

int ux_faults_echo_hash(ux_req *r, const char *id) {
  (void)id;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned char sum[EVP_MAX_MD_SIZE];
  unsigned sumlen = 0;
  if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(md);
    return ux_reply_error(r, 500, "internal_error", "no digest");
  }
  long long total = digest_body(r, md, header_ms(r, "X-Fault-Read-Ms", 1000),
                                header_ms(r, "X-Fault-Stall-Ms", 20000));
  int ok = total >= 0 && EVP_DigestFinal_ex(md, sum, &sumlen) == 1;
  EVP_MD_CTX_free(md);
  if (!ok && r->body_overflow)
    return ux_reply_error(r, 413, "payload_too_large", "request body exceeds %llu bytes",
                          UX_FAULTS_STREAM_MAX);
  if (!ok) return ux_reply_error(r, 400, "bad_request", "the body ended early");
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  for (unsigned i = 0; i < sumlen; i++) snprintf(hex + 2 * i, 3, "%02x", sum[i]);
  json_t *j = json_object();
  json_object_set_new(j, "length", json_integer(total));
  json_object_set_new(j, "sha256", json_string(hex));
  return ux_reply_json(r, 200, j);
}

/* Writes the events; returns 1 when the client went away. */
static int emit(ux_stream *s, char *buf, long chunks, long size, long ms) {
  for (long i = 0; i < chunks; i++) {
    int n = snprintf(buf, (size_t)size + 64, "data: %ld ", i);
    memset(buf + n, 'x', (size_t)size);
    memcpy(buf + n + size, "\n\n", 2);
    if (ux_stream_write(s, buf, (size_t)(n + size + 2)) < 0) return 1;
    /* waiting is where a writer notices an idle client going away; the
    ** next write then fails */
    if (i + 1 < chunks && ux_stream_wait(s, ms)) {
      if (ux_stream_write(s, "\n", 1) < 0) return 1;
    }
  }
  return 0;
}

int ux_faults_stream(ux_req *r, const char *id) {
  (void)id;
  long chunks, ms, size;
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  int bad = ux_get_int(r, body, "chunks", 1, 1000, 5, &chunks) < 0 ||
            ux_get_int(r, body, "ms", 0, 60000, 200, &ms) < 0 ||
            ux_get_int(r, body, "size", 1, 1 << 20, 16, &size) < 0;
  json_decref(body);
  if (bad) return -1;
  char *buf = ux_xmalloc((size_t)size + 64);
  ux_stream *s = ux_reply_stream(r, 200, "text/event-stream", -1);
  if (!s) {
    free(buf);
    return ux_reply_error(r, 500, "internal_error", "cannot open a stream");
  }
  ux_faults *f = r->srv->faults;
  ux_faults_count(f, UX_FAULTS_STARTED);
  int gone = emit(s, buf, chunks, size, ms);
  free(buf);
  ux_faults_count(f, gone ? UX_FAULTS_GONE : UX_FAULTS_COMPLETED);
  if (gone) fprintf(stderr, "unsandboxd: stream fault: the client went away; writer saw -1\n");
  ux_stream_close(s);
  return 0;
}

int ux_faults_stats(ux_req *r, const char *id) {
  (void)id;
  json_t *j = ux_faults_stats_json(r->srv->faults);
  if (!j) return ux_reply_error(r, 500, "internal_error", "out of memory");
  return ux_reply_json(r, 200, j);
}
