/*
** checkpoint, restore and the tree remover.
**
** Restore first extracts into a fresh directory .sandbox/restore-<hex>
** (same filesystem, so the final moves are renames). Only if the whole
** archive was accepted are the root's entries (all but .sandbox) removed
** and the new ones renamed in; a refused archive leaves the root as it
** was and its partial extraction is removed. A top-level .sandbox inside
** the archive is dropped. Removal goes by fd: each directory is opened
** with AG_RES_STRICT, made writable (0700: it is ours) and emptied before
** unlinkat(AT_REMOVEDIR).
*/
#include "agent/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/fsfd.h"
#include "agent/tar.h"

#define RM_DEPTH 256

static int rm_at(int dirfd, const char *name, int depth, ag_err *e) {
  char s[AG_SHOW_MAX];
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : ag_sysfail(e, "remove %s", ag_show(name, s, sizeof s));
  if (S_ISDIR(st.st_mode)) {
    char **names = NULL;
    size_t n = 0;
    int fd, rc = 0;
    if (depth > RM_DEPTH) return ag_fail(e, AG_INTERNAL, "remove %s: deeper than %d", ag_show(name, s, sizeof s), RM_DEPTH);
    fd = ag_openat2(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT);
    if (fd < 0) return ag_sysfail(e, "remove %s: open", ag_show(name, s, sizeof s));
    if (fchmod(fd, 0700) < 0 || ag_dir_names(fd, (size_t)1 << 30, &names, &n) < 0) {
      rc = ag_sysfail(e, "remove %s", ag_show(name, s, sizeof s));
      close(fd);
      return rc;
    }
    for (size_t i = 0; i < n && rc == 0; i++) rc = rm_at(fd, names[i], depth + 1, e);
    ag_names_free(names, n);
    close(fd);
    if (rc < 0) return -1;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
      return ag_sysfail(e, "remove %s", ag_show(name, s, sizeof s));
    return 0;
  }
  if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
    return ag_sysfail(e, "remove %s", ag_show(name, s, sizeof s));
  return 0;
}

int ag_rm_tree_at(int dirfd, const char *name, ag_err *e) {
  return rm_at(dirfd, name, 0, e);
}

/* Optional limits of checkpoint / restore (an extension of the spec). */
static int tar_limits(json_t *req, ag_tar_limits *lim, int extract, ag_err *e) {
  long long v;
  ag_tar_limits_default(lim);
  if (ag_arg_int(req, "max_bytes", (long long)lim->max_bytes, 1, 1LL << 62, &v, e) < 0) return -1;
  lim->max_bytes = (unsigned long long)v;
  if (ag_arg_int(req, "max_entries", (long long)lim->max_entries, 1, 1LL << 62, &v, e) < 0) return -1;
  lim->max_entries = (unsigned long long)v;
  if (extract) {
    if (ag_arg_int(req, "max_file_bytes", (long long)lim->max_file_bytes, 1, 1LL << 62, &v, e) < 0) return -1;
    lim->max_file_bytes = (unsigned long long)v;
  }
  return 0;
}

/* A name-list argument of checkpoint (exclude, only): at most 64 names
** without '/' or NUL, into names[*n...]; absent leaves *n as it is. */
static int name_list(json_t *req, const char *key, const char **names, size_t *n, ag_err *e) {
  json_t *arr = json_object_get(req, key), *v;
  size_t i;
  if (!arr) return 0;
  if (!json_is_array(arr) || json_array_size(arr) > 64)
    return ag_fail(e, AG_INVALID, "argument '%s' must be an array of at most 64 names", key);
  json_array_foreach(arr, i, v) {
    const char *name = json_string_value(v);
    if (!name || !*name || strchr(name, '/') || strlen(name) != json_string_length(v))
      return ag_fail(e, AG_INVALID, "argument '%s' must hold names without '/' or NUL", key);
    names[(*n)++] = name;
  }
  return 0;
}

int ag_op_checkpoint(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "exclude", "only", "max_bytes", "max_entries", NULL };
  const char *ex[64], *only[64];
  ag_tar_limits lim;
  ag_tar_stats st;
  if (ag_args_only(req, keys, e) < 0 || tar_limits(req, &lim, 0, e) < 0) return -1;
  if (datafd < 0) return ag_fail(e, AG_INVALID, "checkpoint needs a data fd to write the archive to");
  if (ag_fd_mode(datafd) != O_WRONLY && ag_fd_mode(datafd) != O_RDWR)
    return ag_fail(e, AG_INVALID, "checkpoint: the data fd is not writable");
  if (!json_object_get(req, "exclude")) ex[lim.n_exclude++] = ".sandbox";
  if (name_list(req, "exclude", ex, &lim.n_exclude, e) < 0 ||
      name_list(req, "only", only, &lim.n_only, e) < 0)
    return -1;
  if (json_object_get(req, "only") && lim.n_only == 0)
    return ag_fail(e, AG_INVALID, "argument 'only' must name at least one entry");
  lim.exclude = ex;
  lim.only = only;
  if (ag_tar_create(fs->root, datafd, &lim, &st, e) < 0) return -1;
  if (fsync(datafd) < 0 && errno != EINVAL && errno != EROFS) return ag_sysfail(e, "checkpoint: fsync");
  *result = json_pack("{s:I, s:s, s:I}", "bytes", (json_int_t)st.out_bytes, "sha256", st.sha256,
                      "files", (json_int_t)st.files);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

/* Moves every entry of fresh into the root (the root was emptied). */
static int move_in(const ag_fs *fs, int fresh, ag_err *e) {
  char **names = NULL, s[AG_SHOW_MAX];
  size_t n = 0;
  int rc = 0;
  if (ag_dir_names(fresh, (size_t)1 << 30, &names, &n) < 0) return ag_sysfail(e, "restore: list");
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (!strcmp(names[i], ".sandbox")) continue;
    /* something of the sandbox's own may have appeared meanwhile: ours wins */
    for (int tries = 0; tries < 3; tries++) {
      if (renameat(fresh, names[i], fs->root, names[i]) == 0) break;
      if ((errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR && errno != ENOTDIR) || tries == 2) {
        rc = ag_sysfail(e, "restore: move %s", ag_show(names[i], s, sizeof s));
        break;
      }
      if (ag_rm_tree_at(fs->root, names[i], e) < 0) { rc = -1; break; }
    }
  }
  ag_names_free(names, n);
  return rc;
}

static int clear_root(const ag_fs *fs, ag_err *e) {
  char **names = NULL;
  size_t n = 0;
  int rc = 0;
  if (ag_dir_names(fs->root, (size_t)1 << 30, &names, &n) < 0) return ag_sysfail(e, "restore: list the root");
  for (size_t i = 0; i < n && rc == 0; i++)
    if (strcmp(names[i], ".sandbox")) rc = ag_rm_tree_at(fs->root, names[i], e);
  ag_names_free(names, n);
  return rc;
}

int ag_op_restore(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "max_bytes", "max_entries", "max_file_bytes", NULL };
  char fresh_name[64];
  unsigned char rnd[8];
  ag_tar_limits lim;
  ag_tar_stats st;
  int sb, fresh, rc;
  if (ag_args_only(req, keys, e) < 0 || tar_limits(req, &lim, 1, e) < 0) return -1;
  if (datafd < 0) return ag_fail(e, AG_INVALID, "restore needs a data fd to read the archive from");
  if (ag_fd_mode(datafd) != O_RDONLY && ag_fd_mode(datafd) != O_RDWR)
    return ag_fail(e, AG_INVALID, "restore: the data fd is not readable");
  if (mkdirat(fs->root, ".sandbox", 0700) < 0 && errno != EEXIST) return ag_sysfail(e, "restore: mkdir .sandbox");
  if ((sb = ag_openat2(fs->root, ".sandbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT)) < 0)
    return ag_sysfail(e, "restore: .sandbox is not a directory");
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) { close(sb); return ag_sysfail(e, "getrandom"); }
  snprintf(fresh_name, sizeof fresh_name, "restore-%02x%02x%02x%02x%02x%02x%02x%02x",
           rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
  if (mkdirat(sb, fresh_name, 0700) < 0 ||
      (fresh = ag_openat2(sb, fresh_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT)) < 0) {
    rc = ag_sysfail(e, "restore: make a fresh directory");
    close(sb);
    return rc;
  }
  rc = ag_tar_extract(datafd, fresh, &lim, &st, e);
  if (rc == 0) rc = clear_root(fs, e);
  if (rc == 0) rc = move_in(fs, fresh, e);
  close(fresh);
  ag_err ignored;
  ag_rm_tree_at(sb, fresh_name, &ignored);   /* leftovers are harmless */
  close(sb);
  if (rc < 0) return -1;
  *result = json_pack("{s:I, s:I, s:I, s:I}", "files", (json_int_t)st.files, "directories",
                      (json_int_t)st.directories, "symlinks", (json_int_t)st.symlinks,
                      "bytes", (json_int_t)st.bytes);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}
