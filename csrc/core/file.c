/*
** The whole-file writer (see file.h): plain *at() calls on a directory
** fd, never a path walked twice, never a shell; and a file's first bytes.
*/
#include "core/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/digest.h"

int unsb_write_all(int fd, const void *buf, size_t len) {
  const char *data = buf;
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) { errno = EIO; return -1; }
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* ".unsb-<16 hex>.tmp": random, so two writers never share one, and
** short, so any valid name leaves room for it. */
static int temp_name(char out[32]) {
  unsigned char raw[8];
  if (unsb_random_bytes(raw, sizeof raw) != 0) { errno = EAGAIN; return -1; }
  memcpy(out, ".unsb-", 6);
  unsb_hex(raw, sizeof raw, out + 6);
  memcpy(out + 22, ".tmp", 5);
  return 0;
}

static int fail(int fd, int dirfd, const char *tmp, const char **step, const char *what) {
  int e = errno;
  if (fd >= 0) close(fd);
  if (tmp) unlinkat(dirfd, tmp, 0);
  if (step) *step = what;
  errno = e;
  return -1;
}

int unsb_file_write_at(int dirfd, const char *name, const void *data, size_t len,
                       mode_t mode, uid_t uid, gid_t gid, int flags, const char **step) {
  char tmp[32];
  if (!name || !*name || strchr(name, '/')) { errno = EINVAL; return fail(-1, dirfd, NULL, step, "create"); }
  if (temp_name(tmp) != 0) return fail(-1, dirfd, NULL, step, "create");
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return fail(-1, dirfd, NULL, step, "create");
  if (unsb_write_all(fd, data, len) != 0) return fail(fd, dirfd, tmp, step, "write");
  if (uid != (uid_t)-1 && fchown(fd, uid, gid) != 0) return fail(fd, dirfd, tmp, step, "chown");
  if ((flags & UNSB_FILE_FSYNC) && fsync(fd) != 0) return fail(fd, dirfd, tmp, step, "sync");
  int rc = close(fd);
  if (rc != 0) return fail(-1, dirfd, tmp, step, "write");
  /* renameat replaces a file, a symlink or a FIFO of that name as an
  ** entry and never follows one; a directory there makes it fail */
  if (renameat(dirfd, tmp, dirfd, name) != 0) return fail(-1, dirfd, tmp, step, "rename");
  return 0;
}

int unsb_file_write(const char *path, const void *data, size_t len, mode_t mode,
                    int flags, const char **step) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  char *dir = NULL;
  if (!path || !*path) { errno = EINVAL; if (step) *step = "open directory"; return -1; }
  if (slash) {
    dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    if (!dir) { if (step) *step = "open directory"; return -1; }
  }
  int dfd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int e = errno;
  free(dir);
  if (dfd < 0) { errno = e; if (step) *step = "open directory"; return -1; }
  int rc = unsb_file_write_at(dfd, slash ? slash + 1 : path, data, len, mode,
                              (uid_t)-1, (gid_t)-1, flags, step);
  e = errno;
  close(dfd);
  errno = e;
  return rc;
}

/* One component: made, or already a directory (stat follows a symlink, as
** mkdir -p does for a user's own output directory). */
static int mkdir_one(const char *path, mode_t mode) {
  struct stat st;
  if (mkdir(path, mode) == 0) return 0;
  if (errno != EEXIST) return -1;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  return 0;
}

int unsb_mkdirs(const char *path, mode_t mode) {
  char buf[PATH_MAX];
  size_t len = path ? strlen(path) : 0;
  if (len == 0) { errno = EINVAL; return -1; }
  if (len >= sizeof buf) { errno = ENAMETOOLONG; return -1; }
  memcpy(buf, path, len + 1);
  /* each prefix that ends before a '/' (not the root's own '/'), then the whole */
  for (size_t i = 1; i < len; i++) {
    if (buf[i] != '/' || buf[i - 1] == '/') continue;
    buf[i] = '\0';
    int rc = mkdir_one(buf, mode);
    buf[i] = '/';
    if (rc != 0) return -1;
  }
  return mkdir_one(buf, mode);
}

ssize_t unsb_file_head(const char *path, char *buf, size_t max) {
  struct stat st;
  ssize_t n;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = fstat(fd, &st) != 0 ? errno : EINVAL;
    close(fd);
    errno = e;
    return -1;
  }
  do n = read(fd, buf, max); while (n < 0 && errno == EINTR);
  int saved = errno;
  close(fd);
  errno = saved;
  return n;
}

static char dirent_type(mode_t m) {
  if (S_ISREG(m)) return 'f';
  if (S_ISDIR(m)) return 'd';
  if (S_ISLNK(m)) return 'l';
  return 'o';
}

void unsb_dirents_free(unsb_dirent *e, size_t n) {
  for (size_t i = 0; e && i < n; i++) free(e[i].name);
  free(e);
}

/* Appends name with its lstat to *list (growing it); 0, or -1 (ENOMEM). */
static int dirent_add(unsb_dirent **list, size_t *n, size_t *cap, const char *name,
                      const struct stat *st) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 32;
    unsb_dirent *grown = realloc(*list, c * sizeof **list);
    if (!grown) return -1;
    *list = grown;
    *cap = c;
  }
  unsb_dirent *e = &(*list)[*n];
  if (!(e->name = strdup(name))) return -1;
  e->type = dirent_type(st->st_mode);
  e->mode = (unsigned)(st->st_mode & 07777);
  e->size = (long long)st->st_size;
  e->mtime = (long long)st->st_mtime;
  (*n)++;
  return 0;
}

int unsb_read_dir(const char *path, size_t max_entries, unsb_dirent **out, size_t *n) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  unsb_dirent *list = NULL;
  size_t count = 0, cap = 0;
  int err = 0;
  if (!d) {
    err = errno;
    if (fd >= 0) close(fd);
    errno = err;
    return -1;
  }
  for (;;) {
    errno = 0;
    struct dirent *de = readdir(d);
    if (!de) { err = errno; break; }
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    struct stat st;
    if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      err = errno;
      break;
    }
    if (count == max_entries) { err = E2BIG; break; }
    if (dirent_add(&list, &count, &cap, de->d_name, &st) != 0) { err = ENOMEM; break; }
  }
  closedir(d);
  if (err) {
    unsb_dirents_free(list, count);
    errno = err;
    return -1;
  }
  *out = list;
  *n = count;
  return 0;
}
