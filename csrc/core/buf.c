/*
** Bounded byte buffer (see buf.h). Capacity doubles from 256 bytes, never
** beyond max + 1 (the terminating NUL), so a buffer's memory is bounded by
** its ceiling whatever the pattern of appends.
*/
#include "core/buf.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

void unsb_buf_init(unsb_buf *b, size_t max) {
  b->p = NULL;
  b->len = b->cap = 0;
  /* so that max + 1 and the doubling below never overflow */
  b->max = max < ((size_t)-1) / 4 ? max : ((size_t)-1) / 4;
}

static int grow(unsb_buf *b, size_t need) {
  size_t cap = b->cap ? b->cap : 256;
  char *p;
  while (cap < need) cap = cap > (b->max + 1) / 2 ? b->max + 1 : cap * 2;
  if (cap > b->max + 1) cap = b->max + 1;
  if (cap < need) cap = need;
  p = realloc(b->p, cap);
  if (!p) return UNSB_BUF_NOMEM;
  b->p = p;
  b->cap = cap;
  return UNSB_BUF_OK;
}

int unsb_buf_append(unsb_buf *b, const void *data, size_t n) {
  if (n > b->max - b->len) return UNSB_BUF_FULL;   /* len <= max always */
  if (b->len + n + 1 > b->cap && grow(b, b->len + n + 1) != UNSB_BUF_OK)
    return UNSB_BUF_NOMEM;
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return UNSB_BUF_OK;
}

int unsb_buf_append_str(unsb_buf *b, const char *s) {
  return unsb_buf_append(b, s, strlen(s));
}

void unsb_buf_reset(unsb_buf *b) {
  b->len = 0;
  if (b->p) b->p[0] = '\0';
}

const char *unsb_buf_str(const unsb_buf *b) { return b->p ? b->p : ""; }

char *unsb_buf_take(unsb_buf *b) {
  char *p = b->p;
  b->p = NULL;
  b->len = b->cap = 0;
  return p;
}

void unsb_buf_free(unsb_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

void unsb_buf_wipe(unsb_buf *b) {
  if (b->p) OPENSSL_cleanse(b->p, b->cap);
  unsb_buf_free(b);
}
