/*
** The one module of unsandboxd that touches files a sandbox can write
** (ARCHITECTURE.md, "Files a sandbox can touch"). Sandboxed code controls
** the content of its work tree and may swap any directory in it for a
** symlink at any instant, so nothing here resolves a path as a whole:
** every step is relative to a directory fd, with openat2(RESOLVE_BENEATH |
** RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) and O_NOFOLLOW | O_NONBLOCK,
** types are checked with fstat on what was opened, and ownership changes
** use AT_SYMLINK_NOFOLLOW. What is left for root to do is small: place
** input files, hand a tree to a slot uid, collect artifacts after a run,
** and remove a tree in the plain-directory fallback. Archives (snapshots,
** checkpoints) and restores run inside a sandbox, as the tree's own user,
** by unsandboxd-agent.
*/
#ifndef UX_TREE_H
#define UX_TREE_H

#include <stddef.h>
#include <sys/types.h>

#include "server/sandbox/runner.h"

/* openat2 relative to dirfd that never follows a symlink, never leaves
** dirfd and never blocks on a FIFO; O_CLOEXEC is added. fd or -1. */
int ux_tree_openat(int dirfd, const char *rel, int flags, mode_t mode);

/* 0 when `name` is an acceptable relative path for an input file, else
** -1 with a message naming the file. */
int ux_tree_check_name(const char *name, char *err, size_t errlen);

/* Creates or replaces dirfd/name (mode: its permission bits, 0 meaning
** 0644; missing parents 0755), owned by uid:gid ((uid_t)-1 keeps root).
** The file is written under a temporary name and renamed into place, so a
** reader of the tree sees the old content or the new one. 0, or -1 with a
** message. */
int ux_tree_place_file(int dirfd, const char *name, const void *data,
                       size_t len, mode_t mode, uid_t uid, gid_t gid,
                       char *err, size_t errlen);

/* Makes each relative directory of dirs (NULL-terminated; parents
** first), mode 0755, owned by uid:gid, keeping ones that exist; never
** through a symlink. 0, or -1 with a message. */
int ux_tree_make_dirs(int dirfd, const char *const *dirs, uid_t uid, gid_t gid,
                      char *err, size_t errlen);

/* Hands the whole tree below (and including) dirfd to uid:gid. Only
** while no process of the tree runs (the slot that runs it is being
** taken). 0 or -1. */
int ux_tree_chown(int dirfd, uid_t uid, gid_t gid);

/* rm -rf of parentfd/name by descriptors only; a missing name is fine.
** Only while nothing runs in the tree. 0 or -1. */
int ux_tree_remove(int parentfd, const char *name);

/* Listing of the regular files below a directory, for artifacts. */
typedef struct ux_tree_entry {
  char *path;                 /* relative */
  dev_t dev; ino_t ino; off_t size;
  long long mtime_ns;
} ux_tree_entry;

typedef struct ux_tree_list {
  ux_tree_entry *v; size_t n, cap;
} ux_tree_list;

int ux_tree_list_files(int dirfd, ux_tree_list *out);
void ux_tree_list_free(ux_tree_list *l);

/* Regular files of `after` that are not in `before` (same path, inode,
** size and mtime) and whose path is not one of `skip` (input files):
** read into a malloc'd array, capped by UX_SB_ART_FILES/BYTES. */
int ux_tree_collect(int dirfd, const ux_tree_list *before,
                    const ux_tree_list *after, const ux_file *skip,
                    size_t n_skip, ux_file **out, size_t *n_out);

#endif
