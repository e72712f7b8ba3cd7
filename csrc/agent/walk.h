/*
** The tree walk of file_glob and file_grep, and the glob matcher. The walk
** goes by fd (every directory opened relative to its parent with
** AG_RES_STRICT, so it never follows a symlink nor leaves the tree), lists
** each directory sorted, hides .sandbox at the root, and stops at a scan
** limit or a deadline, saying which.
*/
#ifndef AG_WALK_H
#define AG_WALK_H

#include <sys/stat.h>

#include "agent/err.h"
#include "agent/paths.h"

#define AG_WALK_SCAN_MAX 100000        /* entries looked at */
#define AG_WALK_DEPTH 64
#define AG_WALK_SECONDS 20.0

typedef struct {
  const char *rel;      /* path relative to the root (what results show) */
  const char *sub;      /* path relative to the walk's start (what patterns see) */
  const char *name;
  int dirfd;            /* the parent directory */
  struct stat st;       /* lstat of the entry */
} ag_walk_entry;

/* Called for every entry that is not a directory. Returns 0 to go on, 1 to
** stop the walk, -1 on error (e set). */
typedef int (*ag_walk_fn)(void *ud, const ag_walk_entry *ent, ag_err *e);

typedef struct {
  unsigned long scanned;
  const char *stopped;  /* NULL, "scan_limit" or "time_limit" */
} ag_walk_state;

/* Walks the directory start (normalised path, "." = root). */
int ag_walk(const ag_fs *fs, const char *start, const char *shown, ag_walk_state *ws,
            ag_walk_fn fn, void *ud, ag_err *e);

double ag_now(void);

/* A compiled glob: segments split at '/', "**" crosses segments, `*` and
** `?` (fnmatch) stay within one; a pattern without '/' matches at any
** depth. */
typedef struct {
  char *buf;
  char **seg;
  size_t nseg;
} ag_glob;

int ag_glob_compile(ag_glob *g, const char *pattern, size_t len, const char *arg, ag_err *e);
int ag_glob_match(const ag_glob *g, const char *path);
void ag_glob_free(ag_glob *g);

#endif
