/*
** A growable byte buffer with a hard cap, and UTF-8 helpers. Output of
** programs is arbitrary bytes but every JSON string the agent sends must
** be valid UTF-8: bad sequences become U+FFFD, and a sequence split across
** two reads is carried over (ag_utf8_state) instead of being damaged.
*/
#ifndef AG_BUF_H
#define AG_BUF_H

#include <stddef.h>

typedef struct {
  char *p;
  size_t len, cap;
  int oom;            /* an append failed: the content is incomplete */
} ag_buf;

int ag_buf_add(ag_buf *b, const void *data, size_t len);  /* 0 or -1 (oom) */
void ag_buf_free(ag_buf *b);
void ag_buf_reset(ag_buf *b);                             /* len = 0, keeps memory */
void ag_buf_shift(ag_buf *b, size_t n);                   /* drops the first n bytes */

/* Length of the valid UTF-8 sequence at s (1..4), 0 if s[0..len) is a
** valid but incomplete prefix, -1 if invalid. */
int ag_utf8_seq(const unsigned char *s, size_t len);

/* 1 when all of s is valid UTF-8 (no overlongs, surrogates, > U+10FFFF). */
int ag_utf8_valid(const char *s, size_t len);

/* Code points in valid UTF-8. */
size_t ag_utf8_chars(const char *s, size_t len);

/* Bytes of the longest prefix of s holding at most max_chars code points. */
size_t ag_utf8_prefix(const char *s, size_t len, size_t max_chars);

typedef struct {
  unsigned char carry[4];
  size_t n;
} ag_utf8_state;

/* Appends in[0..len) to out with invalid bytes replaced by U+FFFD; an
** incomplete sequence at the end is kept in st for the next call, or, when
** final, replaced (flush_partial 1) or dropped (0). Returns 0 or -1 (oom). */
int ag_utf8_clean(ag_utf8_state *st, const char *in, size_t len, int final,
                  int flush_partial, ag_buf *out);

#endif
