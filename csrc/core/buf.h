/*
** A growable byte buffer with a hard ceiling, for everything of the
** Control Plane core that builds or accumulates bytes from input it does
** not control (SSE lines and events, quoted commands, query strings). The
** ceiling is part of the type so "allocation-bounded" is one rule in one
** place: an append past it fails without allocating.
*/
#ifndef UNSB_BUF_H
#define UNSB_BUF_H

#include <stddef.h>

typedef struct {
  char *p;        /* NUL-terminated when non-NULL; NULL until the first append */
  size_t len;
  size_t cap;     /* allocated bytes, > len once allocated */
  size_t max;     /* len never exceeds max */
} unsb_buf;

enum { UNSB_BUF_OK = 0, UNSB_BUF_NOMEM = -1, UNSB_BUF_FULL = -2 };

void unsb_buf_init(unsb_buf *b, size_t max);

/* Appends n bytes. UNSB_BUF_FULL when len + n would exceed max (nothing is
** appended), UNSB_BUF_NOMEM when realloc fails (nothing is appended). */
int unsb_buf_append(unsb_buf *b, const void *data, size_t n);
int unsb_buf_append_str(unsb_buf *b, const char *s);

/* Empties the buffer but keeps its memory. */
void unsb_buf_reset(unsb_buf *b);

/* The bytes as a string: "" when nothing was ever appended. */
const char *unsb_buf_str(const unsb_buf *b);

/* Hands the malloc'd string to the caller (NULL if nothing was appended)
** and leaves the buffer empty. */
char *unsb_buf_take(unsb_buf *b);

/* Frees the memory; wipe overwrites it first (for secrets). */
void unsb_buf_free(unsb_buf *b);
void unsb_buf_wipe(unsb_buf *b);

#endif
