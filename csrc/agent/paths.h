/*
** Workspace paths of the file ops (spec §5.6): relative to the root DIR,
** non-empty (the root itself, "" or ".", only where allowed), no NUL, not
** absolute, no ".." component, and the first segment is not ".sandbox",
** neither as written nor after symlinks are resolved. Resolution uses
** openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the root's fd: a
** symlink inside the tree is followed, nothing resolves outside it.
*/
#ifndef AG_PATHS_H
#define AG_PATHS_H

#include <stddef.h>

#include "agent/err.h"

#define AG_PATH_MAX 4096

typedef struct {
  int root;               /* fd of DIR */
  char root_path[4096];   /* DIR as this process sees it (for resolution checks) */
} ag_fs;

/* Opens DIR and records how /proc names it. 0 or -1. */
int ag_fs_open(ag_fs *fs, const char *dir, ag_err *e);

/* Checks path (len bytes, may hold NUL) and writes its normal form to out
** (no "./", no empty segments; "." for the root). allow_root: "" and "."
** mean the root. Errors name the path and the rule. */
int ag_path_norm(const char *path, size_t len, int allow_root, char out[AG_PATH_MAX],
                 ag_err *e);

/* Opens a normalised path with flags (O_CLOEXEC added) under AG_RES_INSIDE
** and checks that it resolved outside .sandbox. When real is not NULL it
** gets the resolved path relative to the root ("." for the root). Errors
** name `shown` (the path as the caller wrote it). */
int ag_path_open(const ag_fs *fs, const char *norm, const char *shown, int flags,
                 char *real, ag_err *e);

/* The invalid/internal error for errno err from resolving `shown`. -1. */
int ag_path_fail(const char *shown, int err, ag_err *e);

/* Where fd (opened below fs->root) really is, relative to the root, into
** real[AG_PATH_MAX]; fails when that is not below the root or is in
** .sandbox. */
int ag_path_where(const ag_fs *fs, int fd, const char *shown, char *real, ag_err *e);

#endif
