/*
** Walking for glob and grep, and glob matching. Matching is a table over
** (pattern segment, path segment) pairs, so any number of "**" costs
** O(segments^2) fnmatch calls, never an exponential backtrack.
*/
#include "agent/walk.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/buf.h"
#include "agent/fsfd.h"

double ag_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct {
  const ag_fs *fs;
  ag_walk_state *ws;
  ag_walk_fn fn;
  void *ud;
  ag_err *e;
  double deadline;
  struct stat root_st;
} walker;

static int walk_dir(walker *w, int dirfd, const char *rel, const char *sub, int depth) {
  char **names = NULL;
  size_t n = 0;
  struct stat dst;
  int rc = 0, at_root;
  if (fstat(dirfd, &dst) < 0) return ag_sysfail(w->e, "fstat");
  at_root = dst.st_dev == w->root_st.st_dev && dst.st_ino == w->root_st.st_ino;
  if (ag_dir_names(dirfd, AG_WALK_SCAN_MAX + 1, &names, &n) < 0) {
    if (errno == E2BIG) { w->ws->stopped = "scan_limit"; return 1; }
    return 0;                         /* unreadable (permissions): skipped */
  }
  for (size_t i = 0; i < n && rc == 0; i++) {
    ag_walk_entry ent;
    char *r = NULL, *s = NULL;
    if (at_root && !strcmp(names[i], ".sandbox")) continue;
    if (++w->ws->scanned > AG_WALK_SCAN_MAX) { w->ws->stopped = "scan_limit"; rc = 1; break; }
    if ((w->ws->scanned & 63) == 0 && ag_now() > w->deadline) { w->ws->stopped = "time_limit"; rc = 1; break; }
    if (fstatat(dirfd, names[i], &ent.st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    if (asprintf(&r, "%s%s%s", strcmp(rel, ".") ? rel : "", strcmp(rel, ".") ? "/" : "", names[i]) < 0) r = NULL;
    if (asprintf(&s, "%s%s%s", sub, *sub ? "/" : "", names[i]) < 0) s = NULL;
    if (!r || !s) rc = ag_fail(w->e, AG_INTERNAL, "out of memory");
    else if (S_ISDIR(ent.st.st_mode)) {
      int fd = depth < AG_WALK_DEPTH
          ? ag_openat2(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, 0, AG_RES_STRICT) : -1;
      if (fd >= 0) { rc = walk_dir(w, fd, r, s, depth + 1); close(fd); }
    } else {
      ent.rel = r; ent.sub = s; ent.name = names[i]; ent.dirfd = dirfd;
      rc = w->fn(w->ud, &ent, w->e);
    }
    free(r); free(s);
  }
  ag_names_free(names, n);
  return rc;
}

int ag_walk(const ag_fs *fs, const char *start, const char *shown, ag_walk_state *ws,
            ag_walk_fn fn, void *ud, ag_err *e) {
  char real[AG_PATH_MAX];
  walker w = { fs, ws, fn, ud, e, ag_now() + AG_WALK_SECONDS, { 0 } };
  int fd, rc;
  memset(ws, 0, sizeof *ws);
  if (fstat(fs->root, &w.root_st) < 0) return ag_sysfail(e, "fstat root");
  fd = ag_path_open(fs, start, shown, O_RDONLY | O_DIRECTORY | O_NONBLOCK, real, e);
  if (fd < 0) return -1;
  rc = walk_dir(&w, fd, real, "", 0);
  close(fd);
  return rc < 0 ? -1 : 0;
}

int ag_glob_compile(ag_glob *g, const char *pattern, size_t len, const char *arg, ag_err *e) {
  int any_depth = strchr(pattern, '/') == NULL;
  memset(g, 0, sizeof *g);
  if (len == 0) return ag_fail(e, AG_INVALID, "argument '%s' must not be empty", arg);
  if (strlen(pattern) != len) return ag_fail(e, AG_INVALID, "argument '%s' must not contain a NUL byte", arg);
  if (ag_utf8_chars(pattern, len) > 200)
    return ag_fail(e, AG_INVALID, "argument '%s' is longer than 200 characters", arg);
  if (pattern[0] == '/') return ag_fail(e, AG_INVALID, "argument '%s' must be relative, not absolute", arg);
  if (!(g->buf = malloc(len + 4)) || !(g->seg = calloc(len + 2, sizeof *g->seg))) {
    ag_glob_free(g);
    return ag_fail(e, AG_INTERNAL, "out of memory");
  }
  snprintf(g->buf, len + 4, "%s%s", any_depth ? "**/" : "", pattern);
  for (char *tok, *save = NULL, *p = g->buf; (tok = strtok_r(p, "/", &save)); p = NULL) {
    if (!strcmp(tok, ".")) continue;
    if (!strcmp(tok, "..")) {
      ag_glob_free(g);
      return ag_fail(e, AG_INVALID, "argument '%s' must not contain '..'", arg);
    }
    /* a run of "**" means the same as one */
    if (!strcmp(tok, "**") && g->nseg && !strcmp(g->seg[g->nseg - 1], "**")) continue;
    g->seg[g->nseg++] = tok;
  }
  if (g->nseg == 0) { ag_glob_free(g); return ag_fail(e, AG_INVALID, "argument '%s' matches nothing", arg); }
  return 0;
}

int ag_glob_match(const ag_glob *g, const char *path) {
  char *copy = strdup(path), *parts[AG_WALK_DEPTH + 2];
  size_t np = 0, ns = g->nseg;
  int ok = 0;
  if (!copy) return 0;
  for (char *tok, *save = NULL, *p = copy; np <= AG_WALK_DEPTH && (tok = strtok_r(p, "/", &save)); p = NULL)
    parts[np++] = tok;
  /* m[i][j]: pattern segments i.. match path segments j.. */
  unsigned char *m = calloc((ns + 1) * (np + 1), 1);
  if (!m) { free(copy); return 0; }
#define M(i, j) m[(i) * (np + 1) + (j)]
  M(ns, np) = 1;
  for (size_t i = ns; i-- > 0;)
    for (size_t j = np + 1; j-- > 0;) {
      if (!strcmp(g->seg[i], "**")) M(i, j) = M(i + 1, j) || (j < np && M(i, j + 1));
      else M(i, j) = j < np && M(i + 1, j + 1) && fnmatch(g->seg[i], parts[j], 0) == 0;
    }
  ok = M(0, 0);
#undef M
  free(m);
  free(copy);
  return ok;
}

void ag_glob_free(ag_glob *g) {
  free(g->buf);
  free(g->seg);
  memset(g, 0, sizeof *g);
}
