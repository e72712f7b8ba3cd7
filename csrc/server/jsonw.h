/*
** JSON text written straight from bytes, for the replies that are mostly
** data: a job's document (megabytes of program output), a list of
** thousands of rows. Building a jansson tree first costs a copy per value,
** a UTF-8 check when the string is made and an escape pass when it is
** dumped, and holds the whole tree; here each byte is looked at once, as
** it is escaped into the text. The output is what jansson writes with
** JSON_COMPACT (the same escapes), so a reader cannot tell which wrote it.
**
** A writer either grows in memory or, given a sink, hands its buffer to
** the sink each time it fills (a file of the data directory), so a
** document of any size costs one buffer. Running out of memory aborts,
** as everywhere in unsandboxd (mem.h).
*/
#ifndef UX_JSONW_H
#define UX_JSONW_H

#include <stddef.h>
#include <jansson.h>

/* Takes n bytes of text off a full writer: 0, or -1 (the writer is then
** failed, and writes nothing more). */
typedef int (*ux_jw_sink)(void *ctx, const char *p, size_t n);

#define UX_JW_DEPTH 16

typedef struct ux_jw {
  char *p;
  size_t len, cap;
  unsigned long long flushed;   /* bytes handed to the sink so far */
  ux_jw_sink sink;              /* NULL: the text stays in memory */
  void *sink_ctx;
  int failed;                   /* the sink failed */
  int depth;
  unsigned char items[UX_JW_DEPTH];  /* per open object or array: has items */
} ux_jw;

/* An empty writer in memory. */
void ux_jw_init(ux_jw *w);
/* A writer whose text goes to sink in pieces of at most `block` bytes. */
void ux_jw_init_sink(ux_jw *w, size_t block, ux_jw_sink sink, void *ctx);
void ux_jw_free(ux_jw *w);

/* The text so far: its length (flushed bytes included). */
unsigned long long ux_jw_length(const ux_jw *w);
/* Hands what is buffered to the sink: 0 or -1. */
int ux_jw_flush(ux_jw *w);
/* The text as a malloc'd NUL-terminated string (a writer without a sink),
** its length in *len; the writer is left empty. */
char *ux_jw_take(ux_jw *w, size_t *len);
/* Room for n more bytes at once, in a writer without a sink: a reply whose
** size is about known grows once, not by doubling (each step a copy of
** the text so far into memory touched for the first time). A text that
** grows long, by this or by writing, moves into a reply buffer (mem.h). */
void ux_jw_reserve(ux_jw *w, size_t n);

/* Structure: '{' / '[' and their ends; a key (with the comma before it
** when the object has items already); values. A value after a key is the
** key's; in an array, a comma is written before every value but the
** first. */
void ux_jw_open(ux_jw *w, char bracket);
void ux_jw_close(ux_jw *w);
void ux_jw_key(ux_jw *w, const char *key);
/* A string of bytes: invalid UTF-8 becomes U+FFFD, as ux_json_bytes. */
void ux_jw_str(ux_jw *w, const char *s, size_t n);
void ux_jw_cstr(ux_jw *w, const char *s);      /* NULL writes null */
void ux_jw_int(ux_jw *w, long long v);
void ux_jw_int_string(ux_jw *w, long long v);  /* the decimal digits, quoted */
void ux_jw_bool(ux_jw *w, int v);
void ux_jw_null(ux_jw *w);
/* A jansson value, dumped compactly (small values: a row's fields). */
void ux_jw_json(ux_jw *w, const json_t *v);
/* Text that is already JSON (a stored document), as one value. */
void ux_jw_raw_value(ux_jw *w, const char *text, size_t n);
/* Bytes as base64 (a string value), encoded straight into the text. */
void ux_jw_base64(ux_jw *w, const unsigned char *s, size_t n);

#endif
