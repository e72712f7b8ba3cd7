/*
** The files a sandbox can touch (see tree.h for the rules). This process
** is root and a tree may hold anything sandboxed code left there, or be
** changing under us: symlinks to /etc/shadow, FIFOs, deep trees, a
** directory that becomes a symlink between two calls. Every lookup is
** one openat2 step from a directory fd that refuses symlinks, magic
** links and escapes, so a path is never resolved as a whole and a
** symlink is only ever treated as itself; what a step returns is checked
** with fstat before it is used.
*/
#include "server/sandbox/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/file.h"
#include "core/validate.h"
#include "server/ids.h"
#include "server/mem.h"
#include "server/sandbox/limits.h"

int ux_tree_openat(int dirfd, const char *rel, int flags, mode_t mode) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (unsigned long long)(flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  int tries = 0;   /* EAGAIN: a rename or mount anywhere raced the walk; bounded */
  do fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
  while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 1000)));
  return (int)fd;
}

static int open_dir(int dirfd, const char *name) {
  return ux_tree_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
}

#define MAX_DEPTH   64
#define MAX_ENTRIES 100000   /* a listing stops here (artifacts only) */
#define MAX_NAME    (UNSB_RELPATH_MAX + 1)   /* a name and its NUL */

/* ---------------------------------------------------------------------
** Input file names
** ------------------------------------------------------------------- */

int ux_tree_check_name(const char *name, char *err, size_t errlen) {
  /* the rule is the core's, shared with the request validation and the
  ** client (core/validate.h); only the message is worded here */
  const char *why = unsb_relpath_check(name, name ? strlen(name) : 0);
  if (!why) return 0;
  char shown[201];   /* the name as quoted in the message: no control bytes */
  size_t k = 0;
  for (const char *p = name ? name : ""; *p && k < sizeof shown - 1; p++)
    shown[k++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? '?' : *p;
  shown[k] = '\0';
  snprintf(err, errlen, "bad file name '%s': %s", shown, why);
  return -1;
}

/* Opens (creating as needed, 0755, owned by uid:gid) the directory that
** holds the last component of name, which is cut off at its '/'. */
static int open_parent(int dirfd, char *name, char **last, uid_t uid, gid_t gid) {
  int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  char *comp = name, *slash;
  while (fd >= 0 && (slash = strchr(comp, '/'))) {
    *slash = '\0';
    if (mkdirat(fd, comp, 0755) == 0) {
      if (fchownat(fd, comp, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) { close(fd); return -1; }
    } else if (errno != EEXIST) { close(fd); return -1; }
    int sub = open_dir(fd, comp);
    close(fd);
    fd = sub;
    comp = slash + 1;
  }
  *last = comp;
  return fd;
}

int ux_tree_place_file(int dirfd, const char *name, const void *data,
                       size_t len, mode_t mode, uid_t uid, gid_t gid,
                       char *err, size_t errlen) {
  if (ux_tree_check_name(name, err, errlen) != 0) return -1;
  const char *step = "open the directory of";
  char *copy = ux_xstrdup(name), *last = NULL;
  int rc = -1, dir = open_parent(dirfd, copy, &last, uid, gid);
  /* the parent was reached by open_parent's rules; inside it the core's
  ** writer creates its temporary O_EXCL | O_NOFOLLOW and renames it over
  ** the last component as an entry (a symlink there is replaced, never
  ** followed; a directory there makes it fail) */
  mode = mode ? mode & 0777 : 0644;                   /* never a set-id bit */
  if (dir >= 0) rc = unsb_file_write_at(dir, last, data, len, mode, uid, gid, 0, &step);
  if (rc != 0) snprintf(err, errlen, "cannot place file '%.200s': cannot %s it: %s",
                        name, step, strerror(errno));
  if (dir >= 0) close(dir);
  free(copy);
  return rc;
}

int ux_tree_make_dirs(int dirfd, const char *const *dirs, uid_t uid, gid_t gid,
                      char *err, size_t errlen) {
  for (size_t i = 0; dirs[i]; i++) {
    char path[MAX_NAME + 2], *last;
    if (ux_tree_check_name(dirs[i], err, errlen) != 0) return -1;
    snprintf(path, sizeof path, "%s/", dirs[i]);     /* every component a parent */
    int fd = open_parent(dirfd, path, &last, uid, gid);
    if (fd < 0) {
      snprintf(err, errlen, "cannot make directory '%.200s': %s", dirs[i], strerror(errno));
      return -1;
    }
    close(fd);
  }
  return 0;
}

/* ---------------------------------------------------------------------
** Walks
** ------------------------------------------------------------------- */

/* Deeper than WALK_DEPTH levels (one open fd each), entries keep their
** owner: the program that nested them so deep loses write access there,
** rather than the whole session becoming unusable. */
#define WALK_DEPTH 256

static int chown_below(int fd, uid_t uid, gid_t gid, int depth) {
  if (depth > WALK_DEPTH) { close(fd); return 0; }
  DIR *d = fdopendir(fd);
  if (!d) { close(fd); return -1; }
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (fchownat(dirfd(d), e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) rc = -1;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      int sub = open_dir(dirfd(d), e->d_name);
      if (sub < 0 || chown_below(sub, uid, gid, depth + 1) != 0) rc = -1;
    }
  }
  closedir(d);
  return rc;
}

int ux_tree_chown(int dirfd, uid_t uid, gid_t gid) {
  if (fchown(dirfd, uid, gid) != 0) return -1;
  int fd = open_dir(dirfd, ".");
  if (fd < 0) return -1;
  return chown_below(fd, uid, gid, 0);
}

/*
** Iterative, so any depth works with two fds: empty what can be emptied,
** descend into the first directory that cannot be removed yet, and come
** back up through ".." once a directory is empty. Only used when no
** process of the run is left, so nothing moves directories meanwhile.
*/
int ux_tree_remove(int parentfd, const char *name) {
  if (unlinkat(parentfd, name, 0) == 0 || errno == ENOENT) return 0;
  int top = open_dir(parentfd, name);
  if (top < 0) return -1;
  struct stat tst;
  if (fstat(top, &tst) != 0) { close(top); return -1; }
  int fd = fcntl(top, F_DUPFD_CLOEXEC, 0), rc = 0;
  for (long guard = 0; fd >= 0 && guard < 10000000; guard++) {
    DIR *d = fdopendir(fd);
    if (!d) { close(fd); fd = -1; rc = -1; break; }
    int sub = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      if (unlinkat(dirfd(d), e->d_name, 0) == 0) continue;
      if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0) continue;
      sub = open_dir(dirfd(d), e->d_name);
      if (sub >= 0) break;
      rc = -1;      /* neither removable nor a directory to empty */
    }
    struct stat st;
    int at_top = fstat(dirfd(d), &st) == 0 && st.st_dev == tst.st_dev && st.st_ino == tst.st_ino;
    int up = sub < 0 && !at_top
             ? openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    closedir(d);
    if (sub >= 0) fd = sub;
    else if (at_top || rc != 0 || up < 0) { if (up >= 0) close(up); fd = -1; }
    else fd = up;
  }
  close(top);
  if (unlinkat(parentfd, name, AT_REMOVEDIR) != 0) rc = -1;
  return rc;
}

/* ---------------------------------------------------------------------
** Listings and artifacts
** ------------------------------------------------------------------- */

void ux_tree_list_free(ux_tree_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i].path);
  free(l->v);
  l->v = NULL; l->n = l->cap = 0;
}

static int list_push(ux_tree_list *l, const char *path, const struct stat *st) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    ux_tree_entry *v = ux_xrealloc(l->v, cap * sizeof *v);
    l->v = v; l->cap = cap;
  }
  char *p = ux_xstrdup(path);
  l->v[l->n++] = (ux_tree_entry){ p, st->st_dev, st->st_ino, st->st_size,
    (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec };
  return 0;
}

static int list_below(int fd, const char *prefix, ux_tree_list *out, int depth) {
  if (depth > MAX_DEPTH) { close(fd); return 0; }
  DIR *d = fdopendir(fd);
  if (!d) { close(fd); return -1; }
  int rc = 0;
  struct dirent *e;
  char path[MAX_NAME];
  while (rc == 0 && out->n < MAX_ENTRIES && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    int n = snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", e->d_name);
    if (n < 0 || (size_t)n >= sizeof path) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) rc = list_push(out, path, &st);
    else if (S_ISDIR(st.st_mode)) {
      int sub = open_dir(dirfd(d), e->d_name);
      if (sub >= 0) rc = list_below(sub, path, out, depth + 1);
    }
  }
  closedir(d);
  return rc;
}

int ux_tree_list_files(int dirfd, ux_tree_list *out) {
  int fd = open_dir(dirfd, ".");
  if (fd < 0) return -1;
  return list_below(fd, "", out, 0);
}

static int unchanged(const ux_tree_list *before, const ux_tree_entry *e) {
  for (size_t i = 0; before && i < before->n; i++) {
    const ux_tree_entry *b = &before->v[i];
    if (strcmp(b->path, e->path) == 0)
      return b->ino == e->ino && b->dev == e->dev && b->size == e->size &&
             b->mtime_ns == e->mtime_ns;
  }
  return 0;
}

static int read_file(int dirfd, const char *rel, size_t max, ux_file *out) {
  int fd = ux_tree_openat(dirfd, rel, O_RDONLY, 0);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
    close(fd); return -1;
  }
  size_t len = (size_t)st.st_size, got = 0;
  unsigned char *data = ux_xmalloc(len ? len : 1);
  char *name = ux_xstrdup(rel);
  while (got < len) {
    ssize_t r = read(fd, data + got, len - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  *out = (ux_file){ name, data, got, 0 };
  return 0;
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const ux_file *)a)->name, ((const ux_file *)b)->name);
}

int ux_tree_collect(int dirfd, const ux_tree_list *before,
                  const ux_tree_list *after, const ux_file *skip,
                  size_t n_skip, ux_file **out, size_t *n_out) {
  *out = NULL; *n_out = 0;
  ux_file *v = ux_xcalloc(UX_SB_ART_FILES, sizeof *v);
  size_t n = 0, total = 0;
  for (size_t i = 0; i < after->n && n < UX_SB_ART_FILES; i++) {
    const ux_tree_entry *e = &after->v[i];
    int is_input = 0;
    for (size_t k = 0; k < n_skip && !is_input; k++)
      is_input = skip[k].name && strcmp(skip[k].name, e->path) == 0;
    if (is_input || unchanged(before, e)) continue;
    if ((size_t)e->size > UX_SB_ART_BYTES - total) continue;
    if (read_file(dirfd, e->path, UX_SB_ART_BYTES - total, &v[n]) == 0)
      total += v[n++].len;
  }
  if (n == 0) { free(v); return 0; }
  qsort(v, n, sizeof *v, by_path);
  *out = v; *n_out = n;
  return 0;
}
