/*
** Path rules and resolution for the file ops. Where a path really leads
** (after symlinks) is read back from /proc/self/fd (the sandbox mounts a
** fresh /proc): the kernel already resolved it beneath the root, we only
** need its first segment to refuse .sandbox.
*/
#include "agent/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/fsfd.h"

static int fd_path(int fd, char *out, size_t outlen) {
  char link[64];
  ssize_t n;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink(link, out, outlen - 1);
  if (n < 0) return -1;
  if ((size_t)n >= outlen - 1) { errno = ENAMETOOLONG; return -1; }
  out[n] = '\0';
  return 0;
}

int ag_fs_open(ag_fs *fs, const char *dir, ag_err *e) {
  if ((fs->root = ag_open_root(dir)) < 0) return ag_sysfail(e, "root %s", dir);
  if (fd_path(fs->root, fs->root_path, sizeof fs->root_path) < 0) {
    ag_sysfail(e, "root %s: reading /proc/self/fd", dir);
    close(fs->root);
    fs->root = -1;
    return -1;
  }
  return 0;
}

int ag_path_norm(const char *path, size_t len, int allow_root, char out[AG_PATH_MAX],
                 ag_err *e) {
  char shown[AG_SHOW_MAX];
  size_t o = 0;
  ag_show(path, shown, sizeof shown);
  if (strlen(path) != len) return ag_fail(e, AG_INVALID, "path '%s': must not contain a NUL byte", shown);
  if (len >= AG_PATH_MAX) return ag_fail(e, AG_INVALID, "path '%s': longer than %d bytes", shown, AG_PATH_MAX - 1);
  if (path[0] == '/') return ag_fail(e, AG_INVALID, "path '%s': must be relative to the workspace, not absolute", shown);
  for (const char *seg = path; *seg;) {
    const char *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if (n == 2 && seg[0] == '.' && seg[1] == '.')
      return ag_fail(e, AG_INVALID, "path '%s': '..' components are not allowed", shown);
    if (n > 0 && !(n == 1 && seg[0] == '.')) {
      if (o == 0 && n == 8 && !memcmp(seg, ".sandbox", 8))
        return ag_fail(e, AG_INVALID, "path '%s': .sandbox is reserved", shown);
      if (o) out[o++] = '/';
      memcpy(out + o, seg, n);
      o += n;
    }
    seg += n;
    if (*seg == '/') seg++;
  }
  if (o == 0) {
    if (!allow_root) return ag_fail(e, AG_INVALID, "path '%s': must name a file, not the workspace", shown);
    out[o++] = '.';
  }
  out[o] = '\0';
  return 0;
}

int ag_path_where(const ag_fs *fs, int fd, const char *shown, char *real, ag_err *e) {
  char where[AG_PATH_MAX + 8], s[AG_SHOW_MAX];
  size_t rl = strlen(fs->root_path);
  const char *rest;
  if (fd_path(fd, where, sizeof where) < 0)
    return ag_sysfail(e, "path '%s': reading /proc/self/fd", ag_show(shown, s, sizeof s));
  if (!strcmp(where, fs->root_path)) rest = "";
  else if (!strncmp(where, fs->root_path, rl) && (where[rl] == '/' || rl == 1)) rest = where + rl + (rl == 1 ? 0 : 1);
  else return ag_fail(e, AG_INVALID, "path '%s': resolves outside the workspace", ag_show(shown, s, sizeof s));
  if (!strcmp(rest, ".sandbox") || !strncmp(rest, ".sandbox/", 9))
    return ag_fail(e, AG_INVALID, "path '%s': resolves into .sandbox, which is reserved", ag_show(shown, s, sizeof s));
  if (real) snprintf(real, AG_PATH_MAX, "%s", *rest ? rest : ".");
  return 0;
}

int ag_path_fail(const char *shown, int err, ag_err *e) {
  char s[AG_SHOW_MAX];
  ag_show(shown, s, sizeof s);
  errno = err;
  switch (err) {
  case ENOENT: return ag_fail(e, AG_INVALID, "path '%s': does not exist", s);
  case EXDEV: return ag_fail(e, AG_INVALID, "path '%s': resolves outside the workspace", s);
  case ENOTDIR: return ag_fail(e, AG_INVALID, "path '%s': a parent is not a directory", s);
  case ELOOP: return ag_fail(e, AG_INVALID, "path '%s': too many levels of symlinks", s);
  case EACCES: case EPERM: return ag_fail(e, AG_INVALID, "path '%s': permission denied", s);
  case ENAMETOOLONG: return ag_fail(e, AG_INVALID, "path '%s': name too long", s);
  case EISDIR: return ag_fail(e, AG_INVALID, "path '%s': is a directory", s);
  case ENOSPC: case EDQUOT: return ag_fail(e, AG_INVALID, "path '%s': no space left", s);
  case EROFS: return ag_fail(e, AG_INVALID, "path '%s': read-only file system", s);
  default: return ag_sysfail(e, "path '%s'", s);
  }
}

int ag_path_open(const ag_fs *fs, const char *norm, const char *shown, int flags,
                 char *real, ag_err *e) {
  int fd = ag_openat2(fs->root, norm, flags, 0, AG_RES_INSIDE);
  if (fd < 0) return ag_path_fail(shown, errno, e);
  if (ag_path_where(fs, fd, shown, real, e) < 0) { close(fd); return -1; }
  return fd;
}
