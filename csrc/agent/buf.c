/*
** Buffers and UTF-8. The decoder follows RFC 3629 table 3-7 (well-formed
** byte sequences); an ill-formed byte is replaced by one U+FFFD and
** decoding resumes at the next byte.
*/
#include "agent/buf.h"

#include <stdlib.h>
#include <string.h>

int ag_buf_add(ag_buf *b, const void *data, size_t len) {
  if (b->oom) return -1;
  if (len == 0) return 0;
  if (b->len + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + len + 1) {
      if (cap > ((size_t)1 << 40)) { b->oom = 1; return -1; }
      cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, len);
  b->len += len;
  b->p[b->len] = '\0';
  return 0;
}

void ag_buf_free(ag_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void ag_buf_reset(ag_buf *b) {
  b->len = 0;
  b->oom = 0;
  if (b->p) b->p[0] = '\0';
}

void ag_buf_shift(ag_buf *b, size_t n) {
  if (n >= b->len) { ag_buf_reset(b); return; }
  memmove(b->p, b->p + n, b->len - n);
  b->len -= n;
  b->p[b->len] = '\0';
}

int ag_utf8_seq(const unsigned char *s, size_t len) {
  unsigned char c = s[0], lo = 0x80, hi = 0xBF;
  int need;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;          /* no overlongs */
    if (c == 0xED) hi = 0x9F;          /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;          /* nothing above U+10FFFF */
  } else return -1;
  for (int i = 1; i <= need; i++) {
    if ((size_t)i >= len) return 0;
    if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF)) return -1;
  }
  return need + 1;
}

int ag_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    if (p[i] < 0x80) { i++; continue; }
    int n = ag_utf8_seq(p + i, len - i);
    if (n <= 0) return 0;
    i += (size_t)n;
  }
  return 1;
}

size_t ag_utf8_chars(const char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
  return n;
}

size_t ag_utf8_prefix(const char *s, size_t len, size_t max_chars) {
  size_t chars = 0, i = 0;
  for (; i < len; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      if (chars == max_chars) break;
      chars++;
    }
  }
  return i;
}

static const char fffd[] = "\xEF\xBF\xBD";

int ag_utf8_clean(ag_utf8_state *st, const char *in, size_t len, int final,
                  int flush_partial, ag_buf *out) {
  /* complete a carried sequence first, one byte at a time */
  while (st->n > 0 && len > 0) {
    int n;
    st->carry[st->n++] = (unsigned char)*in++;
    len--;
    n = ag_utf8_seq(st->carry, st->n);
    if (n > 0) {
      if (ag_buf_add(out, st->carry, (size_t)n) < 0) return -1;
      st->n = 0;
    } else if (n < 0) {
      /* the first byte is bad: replace it, re-scan the rest */
      unsigned char rest[4];
      size_t rn = st->n - 1;
      memcpy(rest, st->carry + 1, rn);
      st->n = 0;
      if (ag_buf_add(out, fffd, 3) < 0) return -1;
      if (ag_utf8_clean(st, (const char *)rest, rn, 0, 0, out) < 0) return -1;
    }
  }
  const unsigned char *p = (const unsigned char *)in;
  size_t i = 0, run = 0;
  while (i < len) {
    int n = p[i] < 0x80 ? 1 : ag_utf8_seq(p + i, len - i);
    if (n > 0) { i += (size_t)n; continue; }
    if (ag_buf_add(out, p + run, i - run) < 0) return -1;
    if (n == 0) {                     /* incomplete at the end: carry it */
      memcpy(st->carry, p + i, len - i);
      st->n = len - i;
      run = i = len;
      break;
    }
    if (ag_buf_add(out, fffd, 3) < 0) return -1;
    run = ++i;
  }
  if (ag_buf_add(out, p + run, i - run) < 0) return -1;
  if (final && st->n > 0) {
    st->n = 0;
    if (flush_partial && ag_buf_add(out, fffd, 3) < 0) return -1;
  }
  return 0;
}
