/* Small file-system helpers that never go through a shell. */
#ifndef UX_FSUTIL_H
#define UX_FSUTIL_H

#include <stddef.h>

/* mkdir -p with the given mode for every created level; 0 or -1 (errno). */
int ux_mkdir_p(const char *path, int mode);

/* rm -rf without following symlinks; 0 or -1. A missing path is fine. */
int ux_rm_rf(const char *path);

/* Reads at most the last `cap` bytes of a file into a malloc'd buffer
** (NUL-terminated, length in *len). Missing file => empty buffer. */
char *ux_read_tail(const char *path, size_t cap, size_t *len);

/* snprintf that reports truncation as -1 (paths must never be cut short). */
int ux_path(char *out, size_t outlen, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

long ux_now(void);        /* unix seconds */
long ux_now_ms(void);     /* monotonic milliseconds */

#endif
