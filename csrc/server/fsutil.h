/* Small helpers for the server's own paths and clocks (never a tree a
** sandbox can write: that is sandbox/tree.h). */
#ifndef UX_FSUTIL_H
#define UX_FSUTIL_H

#include <stddef.h>

/* mkdir -p with the given mode for every created level; 0 or -1 (errno). */
int ux_mkdir_p(const char *path, int mode);

/* snprintf that reports truncation as -1 (paths must never be cut short). */
int ux_path(char *out, size_t outlen, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

long ux_now(void);        /* unix seconds */
long ux_now_ms(void);     /* monotonic milliseconds */

#endif
