/*
** File-system helpers for the server's own paths (the data directory and
** what it holds). Trees a sandbox can write are sandbox/tree.c's alone.
*/
#include "server/fsutil.h"

#include "core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ux_path(char *out, size_t outlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, outlen, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= outlen) { errno = ENAMETOOLONG; return -1; }
  return 0;
}

int ux_mkdir_p(const char *path, int mode) {
  char buf[4096];
  if (ux_path(buf, sizeof buf, "%s", path) < 0) return -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST) return -1;
  return 0;
}

long ux_now(void) { return (long)time(NULL); }

/* the core's clock: one monotonic clock for client, host and server */
long ux_now_ms(void) { return (long)unsb_monotonic_ms(); }
