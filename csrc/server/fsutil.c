/*
** File-system helpers. Directory removal uses nftw with FTW_PHYS so a
** symlink a sandboxed program left in its work directory is removed, not
** followed: deleting a session must never delete anything outside it.
*/
#include "server/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)ftw;
  int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);
  return (rc < 0 && errno != ENOENT) ? -1 : 0;
}

int ux_rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0) return errno == ENOENT ? 0 : -1;
  return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

char *ux_read_tail(const char *path, size_t cap, size_t *len) {
  char *buf = malloc(cap + 1);
  *len = 0;
  if (!buf) return NULL;
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return buf;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    off_t start = st.st_size > (off_t)cap ? st.st_size - (off_t)cap : 0;
    ssize_t n = pread(fd, buf, cap, start);
    if (n > 0) *len = (size_t)n;
  }
  close(fd);
  buf[*len] = '\0';
  return buf;
}

long ux_now(void) { return (long)time(NULL); }

long ux_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}
