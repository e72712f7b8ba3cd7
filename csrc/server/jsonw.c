/*
** The JSON text writer (jsonw.h). Strings are escaped eight bytes at a
** time where they can be: a word with no control byte, quote, backslash
** or byte over 0x7f is copied as it is, which is nearly all of a
** program's output; the rest goes byte by byte, multi-byte sequences
** through the core's one strict UTF-8 decoder. The escapes are jansson's
** (\b \f \n \r \t, \uXXXX for the other control bytes, DEL and '/' as
** they are), so text from here and from json_dumps reads the same.
*/
#include "server/jsonw.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/utf8.h"
#include "server/mem.h"

#define MIN_CAP 256
/* A text growing past this is on its way to a long reply: it moves into a
** reply buffer (mem.h) instead of doubling on */
#define SHORT_MAX ((size_t)64 << 10)

void ux_jw_init(ux_jw *w) {
  memset(w, 0, sizeof *w);
}

void ux_jw_init_sink(ux_jw *w, size_t block, ux_jw_sink sink, void *ctx) {
  memset(w, 0, sizeof *w);
  w->cap = block < MIN_CAP ? MIN_CAP : block;
  w->p = ux_xmalloc(w->cap);
  w->sink = sink;
  w->sink_ctx = ctx;
}

void ux_jw_free(ux_jw *w) {
  ux_mem_reply_done(w->p);
  memset(w, 0, sizeof *w);
}

unsigned long long ux_jw_length(const ux_jw *w) { return w->flushed + w->len; }

int ux_jw_flush(ux_jw *w) {
  if (w->failed) return -1;
  if (!w->sink || w->len == 0) return 0;
  if (w->sink(w->sink_ctx, w->p, w->len) != 0) {
    w->failed = 1;
    return -1;
  }
  w->flushed += w->len;
  w->len = 0;
  return 0;
}

/* Room for k more bytes at w->p + w->len, in a writer without a sink. */
static void grow(ux_jw *w, size_t k) {
  if (w->len + k <= w->cap) return;
  size_t cap = w->cap ? w->cap : MIN_CAP;
  while (cap < w->len + k) cap *= 2;
  if (cap > SHORT_MAX && w->cap < UX_MEM_REPLY_MIN) {
    char *p = ux_mem_reply_buffer(cap > UX_MEM_REPLY_MIN ? cap : UX_MEM_REPLY_MIN, &cap);
    if (w->len) memcpy(p, w->p, w->len);
    free(w->p);
    w->p = p;
  } else {
    w->p = ux_xrealloc(w->p, cap);
  }
  w->cap = cap;
}

/* A short text mostly empty is shrunk to its length; a reply buffer is
** not (it goes back whole to be kept, mem.h), nor a text that fills most
** of its buffer (a realloc would split or copy it for little). */
char *ux_jw_take(ux_jw *w, size_t *len) {
  char *p;
  if (!w->p) p = ux_xmalloc(1);
  else if (w->cap < UX_MEM_REPLY_MIN && w->cap - w->len > w->len / 4 + 1)
    p = ux_xrealloc(w->p, w->len + 1);
  else {
    grow(w, 1);
    p = w->p;
  }
  p[w->len] = '\0';
  *len = w->len;
  memset(w, 0, sizeof *w);
  return p;
}

void ux_jw_reserve(ux_jw *w, size_t n) {
  if (!w->sink) grow(w, n);
}

/* Appends n bytes when they do not fit the buffer: a writer with a sink
** hands its buffer on each time it is full, one without grows. */
static void put_more(ux_jw *w, const char *s, size_t n) {
  if (!w->sink) {
    grow(w, n);
    memcpy(w->p + w->len, s, n);
    w->len += n;
    return;
  }
  while (n > 0 && !w->failed) {
    if (w->len == w->cap && ux_jw_flush(w) != 0) return;
    size_t k = n < w->cap - w->len ? n : w->cap - w->len;
    memcpy(w->p + w->len, s, k);
    w->len += k;
    s += k;
    n -= k;
  }
}

/* Appends n bytes. Most pieces are a few bytes into a buffer with room,
** so that case is a copy and no call; a failed writer's bytes never leave
** its buffer (flush refuses). */
static inline void put(ux_jw *w, const char *s, size_t n) {
  if (w->len + n <= w->cap && w->p) {
    memcpy(w->p + w->len, s, n);
    w->len += n;
    return;
  }
  put_more(w, s, n);
}

/* The comma before a value, when its array has items already; a value
** after a key is the key's. */
static void before_value(ux_jw *w) {
  if (w->depth == 0) return;
  unsigned char *it = &w->items[w->depth - 1];
  if (*it & 2) { *it &= (unsigned char)~2; return; }     /* after a key */
  if (*it & 1) put(w, ",", 1);
  *it |= 1;
}

void ux_jw_open(ux_jw *w, char bracket) {
  before_value(w);
  put(w, &bracket, 1);
  if (w->depth < UX_JW_DEPTH) w->items[w->depth] = bracket == '{' ? 4 : 0;
  w->depth++;
}

void ux_jw_close(ux_jw *w) {
  /* the bracket that matches (items: bit 0 has items, bit 1 after a
  ** key, bit 2 an object) */
  if (w->depth == 0) return;
  w->depth--;
  unsigned char it = w->depth < UX_JW_DEPTH ? w->items[w->depth] : 0;
  put(w, (it & 4) ? "}" : "]", 1);
}

/* Whether any of the 8 bytes of x needs a look of its own: a control
** byte (< 0x20), '"', '\\', or a byte over 0x7f. Exact (no byte that
** needs none is reported alone: a false alarm only costs the slow path). */
static int word_special(uint64_t x) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t lt20 = (x - ones * 0x20) & ~x;
  uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
  uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b;
  return ((lt20 | zq | zb) & highs) != 0 || (x & highs) != 0;
}

/* The escape of control byte c (< 0x20) or of '"' / '\\'. */
static size_t escape(unsigned char c, char out[8]) {
  switch (c) {
  case '"':  memcpy(out, "\\\"", 2); return 2;
  case '\\': memcpy(out, "\\\\", 2); return 2;
  case '\b': memcpy(out, "\\b", 2); return 2;
  case '\f': memcpy(out, "\\f", 2); return 2;
  case '\n': memcpy(out, "\\n", 2); return 2;
  case '\r': memcpy(out, "\\r", 2); return 2;
  case '\t': memcpy(out, "\\t", 2); return 2;
  default:   snprintf(out, 8, "\\u%04X", c); return 6;
  }
}

/* The length of s's first bytes that go into the text as they are. */
static size_t plain_run(const unsigned char *u, size_t n) {
  size_t run = 0;
  while (run + 8 <= n) {
    uint64_t x;
    memcpy(&x, u + run, 8);
    if (word_special(x)) break;
    run += 8;
  }
  while (run < n && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\') run++;
  return run;
}

/* The quoted, escaped string, with no comma before it. A string with
** nothing to escape (keys, ids, most values) that fits the buffer is
** written in one go. */
static void quoted(ux_jw *w, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t run = plain_run(u, n);                   /* bytes that go as they are */
  if (run == n && w->len + n + 2 <= w->cap) {
    char *d = w->p + w->len;
    d[0] = '"';
    memcpy(d + 1, s, n);
    d[n + 1] = '"';
    w->len += n + 2;
    return;
  }
  put(w, "\"", 1);
  for (size_t i = 0;;) {
    if (run > i) put(w, s + i, run - i);
    i = run;
    if (i >= n) break;
    if (u[i] < 0x80) {
      char esc[8];
      put(w, esc, escape(u[i], esc));
      i++;
    } else {
      uint32_t cp;
      size_t l = unsb_utf8_next(u + i, n - i, &cp);
      if (l) { put(w, s + i, l); i += l; }
      else { put(w, "\xef\xbf\xbd", 3); i++; }    /* U+FFFD */
    }
    run = i + plain_run(u + i, n - i);
  }
  put(w, "\"", 1);
}

void ux_jw_key(ux_jw *w, const char *key) {
  if (w->depth > 0 && w->depth <= UX_JW_DEPTH) {
    unsigned char *it = &w->items[w->depth - 1];
    if (*it & 1) put(w, ",", 1);
    *it |= 1;
  }
  quoted(w, key, strlen(key));
  put(w, ":", 1);
  if (w->depth > 0 && w->depth <= UX_JW_DEPTH) w->items[w->depth - 1] |= 2;
}

void ux_jw_str(ux_jw *w, const char *s, size_t n) {
  before_value(w);
  quoted(w, s, n);
}

void ux_jw_cstr(ux_jw *w, const char *s) {
  if (s) ux_jw_str(w, s, strlen(s));
  else ux_jw_null(w);
}

/* v in decimal at the end of out[24] (a quote after the digits when
** quoted, one before them): the text's start; *n its length. A list's
** numbers are most of its fields, and snprintf's format parsing was a
** visible share of writing one. */
static const char *decimal(long long v, int quoted, char out[24], size_t *n) {
  char *end = out + 23, *p = end;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  if (quoted) *--p = '"';
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *--p = '-';
  if (quoted) *--p = '"';
  *n = (size_t)(end - p);
  return p;
}

static void number(ux_jw *w, long long v, int quoted) {
  char buf[24];
  size_t n;
  const char *s = decimal(v, quoted, buf, &n);
  before_value(w);
  put(w, s, n);
}

void ux_jw_int(ux_jw *w, long long v) { number(w, v, 0); }
void ux_jw_int_string(ux_jw *w, long long v) { number(w, v, 1); }

void ux_jw_bool(ux_jw *w, int v) {
  before_value(w);
  put(w, v ? "true" : "false", v ? 4 : 5);
}

void ux_jw_null(ux_jw *w) {
  before_value(w);
  put(w, "null", 4);
}

static int dump_piece(const char *buf, size_t size, void *ctx) {
  put(ctx, buf, size);
  return 0;
}

void ux_jw_json(ux_jw *w, const json_t *v) {
  before_value(w);
  json_dump_callback(v, dump_piece, w, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

void ux_jw_raw_value(ux_jw *w, const char *text, size_t n) {
  before_value(w);
  put(w, text, n);
}

void ux_jw_base64(ux_jw *w, const unsigned char *s, size_t n) {
  enum { IN = 3 * 1024 };
  char out[UNSB_BASE64_LEN(IN) + 1];
  before_value(w);
  if (!w->sink) {                 /* in memory: one allocation, encoded in place */
    grow(w, UNSB_BASE64_LEN(n) + 2);
    w->p[w->len++] = '"';
    w->len += unsb_base64_encode_into(s, n, w->p + w->len);
    w->p[w->len++] = '"';
    return;
  }
  put(w, "\"", 1);
  for (size_t at = 0; at < n; at += IN) {
    size_t k = n - at < IN ? n - at : IN;
    put(w, out, unsb_base64_encode_into(s + at, k, out));
  }
  put(w, "\"", 1);
}
