/*
** The allocation wrappers (see mem.h). ux_oom writes with write(2), not
** stdio: stdio may itself need memory, and the message must get out.
*/
#include "server/mem.h"

#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void ux_oom(size_t n) {
  char line[96];
  int len = snprintf(line, sizeof line, "unsandboxd: out of memory (%zu bytes)\n", n);
  if (len > 0 && write(2, line, (size_t)len) < 0) { /* nothing left to tell */ }
  abort();
}

void ux_mem_return(void) {
  malloc_trim(0);
}

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static void *kept;   /* the last long reply's buffer, or NULL */

void *ux_mem_reply_buffer(size_t n, size_t *cap) {
  pthread_mutex_lock(&kept_mu);
  void *p = kept && malloc_usable_size(kept) >= n ? kept : NULL;
  if (p) kept = NULL;
  pthread_mutex_unlock(&kept_mu);
  if (!p) p = ux_xmalloc(n);
  *cap = malloc_usable_size(p);
  return p;
}

void ux_mem_reply_done(void *p) {
  size_t n = p ? malloc_usable_size(p) : 0;
  if (n >= UX_MEM_REPLY_MIN && n <= UX_MEM_REPLY_KEEP) {
    pthread_mutex_lock(&kept_mu);
    int keep = !kept;
    if (keep) kept = p;
    pthread_mutex_unlock(&kept_mu);
    if (keep) return;
  }
  free(p);
  /* a short text's memory is the heap's to reuse; a long one raised the
  ** heap, which gives it back */
  if (n >= UX_MEM_REPLY_MIN) ux_mem_return();
}

void *ux_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) ux_oom(n);
  return p;
}

void *ux_xcalloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) ux_oom(SIZE_MAX);
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) ux_oom(n * size);
  return p;
}

void *ux_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) ux_oom(n);
  return q;
}

char *ux_xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(ux_xmalloc(n), s, n);
}

char *ux_xstrndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *p = ux_xmalloc(len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *ux_xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) ux_oom(strlen(fmt));
  return s;
}

void ux_mem_init(void) { json_set_alloc_funcs(ux_xmalloc, free); }
