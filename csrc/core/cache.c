/*
** Cache files (see cache.h). Plain POSIX calls, never a shell; the
** writing itself is file.c's, the one whole-file writer.
*/
#include "core/cache.h"
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

unsb_cache_state unsb_cache_read(const char *path, int64_t ttl_s,
                                 char **data, size_t *len) {
  struct stat st;
  char *buf;
  size_t got = 0;
  int fd;

  *data = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UNSB_CACHE_MISSING;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > UNSB_CACHE_MAX ||
      !(buf = malloc((size_t)st.st_size + 1))) {
    close(fd);
    return UNSB_CACHE_MISSING;
  }
  /* read at most one byte more than fstat said, to notice a file that grew */
  while (got <= (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size + 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  if (got > (size_t)st.st_size) {   /* changed under us: treat as absent */
    free(buf);
    return UNSB_CACHE_MISSING;
  }
  buf[got] = '\0';
  *data = buf;
  *len = got;
  int64_t age = (int64_t)time(NULL) - (int64_t)st.st_mtime;
  return age < ttl_s ? UNSB_CACHE_FRESH : UNSB_CACHE_STALE;
}

/* Creates the parent directory of path (one level) when it is missing. */
static int ensure_parent(const char *path, char *msg, size_t msg_size) {
  const char *slash = strrchr(path, '/');
  struct stat st;
  char *dir;
  int rc = 0;

  if (!slash || slash == path) return 0;       /* cwd or / : exists */
  dir = strndup(path, (size_t)(slash - path));
  if (!dir) {
    snprintf(msg, msg_size, "cache %s: out of memory", path);
    return -1;
  }
  if (stat(dir, &st) != 0) {
    if (errno != ENOENT || mkdir(dir, 0700) != 0) {
      snprintf(msg, msg_size, "cache directory %s: %s", dir, strerror(errno));
      rc = -1;
    }
  } else if (!S_ISDIR(st.st_mode)) {
    snprintf(msg, msg_size, "cache directory %s: not a directory", dir);
    rc = -1;
  }
  free(dir);
  return rc;
}

int unsb_cache_write(const char *path, const char *data, size_t len,
                     char *msg, size_t msg_size) {
  const char *step = "write";
  if (!path || !*path) {
    snprintf(msg, msg_size, "cache: empty path");
    return -1;
  }
  if (ensure_parent(path, msg, msg_size) != 0) return -1;
  if (unsb_file_write(path, data, len, 0600, UNSB_FILE_FSYNC, &step) != 0) {
    snprintf(msg, msg_size, "cache %s: cannot %s: %s", path, step, strerror(errno));
    return -1;
  }
  return 0;
}
