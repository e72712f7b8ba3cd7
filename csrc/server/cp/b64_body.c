/*
** A head, a file's bytes as base64, a tail (see b64_body.h). The base64
** part is produced a run of whole quads at a time from the bytes they
** encode (3 per quad), so any position and any max work: a read that
** starts inside a quad encodes that quad again and skips its first chars.
*/
#include "server/cp/b64_body.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "server/mem.h"

struct ux_b64_body {
  int fd;
  unsigned long long bytes, b64;   /* the file's bytes; their base64 length */
  char *head, *tail;
  size_t head_len, tail_len;
};

ux_b64_body *ux_b64_body_new(int fd, unsigned long long n, char *head, size_t head_len,
                             char *tail, size_t tail_len) {
  ux_b64_body *b = ux_xcalloc(1, sizeof *b);
  b->fd = fd;
  b->bytes = n;
  b->b64 = UNSB_BASE64_LEN(n);
  b->head = head;
  b->head_len = head_len;
  b->tail = tail;
  b->tail_len = tail_len;
  return b;
}

unsigned long long ux_b64_body_length(const ux_b64_body *b) { return b->head_len + b->b64 + b->tail_len; }

void ux_b64_body_free(void *ctx) {
  ux_b64_body *b = ctx;
  close(b->fd);
  free(b->head);
  free(b->tail);
  free(b);
}

/* Base64 text at offset o (< b64) into buf, at most max (> 0): > 0, or -1
** when the file no longer holds the bytes. */
static ssize_t b64_at(ux_b64_body *b, unsigned long long o, char *buf, size_t max) {
  enum { QUADS = 4096 };
  unsigned char in[3 * QUADS];
  char out[4 * QUADS + 1];
  unsigned long long at = o / 4 * 3;
  size_t skip = (size_t)(o % 4), quads = (max + skip + 3) / 4, want, got = 0;
  if (quads > QUADS) quads = QUADS;
  want = b->bytes - at < 3 * quads ? (size_t)(b->bytes - at) : 3 * quads;
  while (got < want) {
    ssize_t n = pread(b->fd, in + got, want - got, (off_t)(at + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  size_t len = unsb_base64_encode_into(in, got, out) - skip;
  if (len > max) len = max;
  memcpy(buf, out + skip, len);
  return (ssize_t)len;
}

/* Copies what of text[0..len) lies at p (relative to the text) into buf. */
static size_t part(const char *text, size_t len, unsigned long long p, char *buf, size_t max) {
  size_t k = len - (size_t)p < max ? len - (size_t)p : max;
  memcpy(buf, text + p, k);
  return k;
}

ssize_t ux_b64_body_read(void *ctx, unsigned long long pos, char *buf, size_t max) {
  ux_b64_body *b = ctx;
  size_t n = 0;
  while (n < max) {
    unsigned long long p = pos + n;
    if (p < b->head_len) {
      n += part(b->head, b->head_len, p, buf + n, max - n);
    } else if (p < b->head_len + b->b64) {
      ssize_t got = b64_at(b, p - b->head_len, buf + n, max - n);
      if (got < 0) return -1;
      n += (size_t)got;
    } else if (p < ux_b64_body_length(b)) {
      n += part(b->tail, b->tail_len, p - b->head_len - b->b64, buf + n, max - n);
    } else {
      break;
    }
  }
  return n > 0 ? (ssize_t)n : -1;
}
