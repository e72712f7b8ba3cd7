/*
** file_list (one directory, sorted, at most AG_LIST_MAX entries) and
** file_glob (matching files of a tree, newest first). A symlink is listed
** as "other" and is never descended into; glob matches regular files and
** symlinks (not directories) and returns paths relative to the root.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/conn.h"
#include "agent/files.h"
#include "agent/fsfd.h"
#include "agent/walk.h"

int ag_op_file_list(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", NULL };
  char norm[AG_PATH_MAX], real[AG_PATH_MAX], s[AG_SHOW_MAX];
  const char *path;
  size_t plen, n = 0, shown = 0;
  char **names = NULL;
  json_t *entries;
  int fd;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", ".", 1, &path, &plen, e) < 0 ||
      ag_path_norm(path, plen, 1, norm, e) < 0)
    return -1;
  if ((fd = ag_path_open(fs, norm, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK, real, e)) < 0) return -1;
  if (ag_dir_names(fd, AG_WALK_SCAN_MAX, &names, &n) < 0) {
    int err = errno;
    close(fd);
    if (err == E2BIG) return ag_fail(e, AG_INVALID, "path '%s': more than %d entries", ag_show(path, s, sizeof s), AG_WALK_SCAN_MAX);
    return ag_path_fail(path, err, e);
  }
  if (!(entries = json_array())) { close(fd); ag_names_free(names, n); return ag_fail(e, AG_INTERNAL, "out of memory"); }
  for (size_t i = 0; i < n && shown <= AG_LIST_MAX; i++) {
    struct stat st;
    const char *type = "other";
    if (!strcmp(real, ".") && !strcmp(names[i], ".sandbox")) continue;
    if (shown == AG_LIST_MAX) { shown++; break; }   /* one more: truncated */
    if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
      type = S_ISDIR(st.st_mode) ? "directory" : S_ISREG(st.st_mode) ? "file" : "other";
    /* names are bytes; JSON needs UTF-8: a name that is not is shown
    ** with U+FFFD, as `ls` would show '?' */
    json_t *name = ag_json_text(names[i], strlen(names[i]));
    if (!name || json_array_append_new(entries, json_pack("{s:o, s:s}", "name", name, "type", type)) < 0) {
      close(fd); ag_names_free(names, n); json_decref(entries);
      return ag_fail(e, AG_INTERNAL, "out of memory");
    }
    shown++;
  }
  close(fd);
  ag_names_free(names, n);
  *result = json_pack("{s:s, s:o, s:b}", "path", path, "entries", entries, "truncated", shown > AG_LIST_MAX);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

typedef struct {
  char *rel;
  struct timespec mtime;
} match;

typedef struct {
  ag_glob glob;
  match *m;
  size_t n, cap;
} glob_run;

static int glob_visit(void *ud, const ag_walk_entry *ent, ag_err *e) {
  glob_run *g = ud;
  if (!S_ISREG(ent->st.st_mode) && !S_ISLNK(ent->st.st_mode)) return 0;
  if (!ag_glob_match(&g->glob, ent->sub)) return 0;
  if (g->n == g->cap) {
    size_t nc = g->cap ? g->cap * 2 : 64;
    match *nm = realloc(g->m, nc * sizeof *nm);
    if (!nm) return ag_fail(e, AG_INTERNAL, "out of memory");
    g->m = nm; g->cap = nc;
  }
  if (!(g->m[g->n].rel = strdup(ent->rel))) return ag_fail(e, AG_INTERNAL, "out of memory");
  g->m[g->n++].mtime = ent->st.st_mtim;
  return 0;
}

static int newest_first(const void *a, const void *b) {
  const match *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
  return strcmp(x->rel, y->rel);
}

static json_t *glob_result(const char *pattern, glob_run *g, const ag_walk_state *ws, long long limit) {
  json_t *matches = json_array();
  size_t keep = g->n < (size_t)limit ? g->n : (size_t)limit;
  const char *reason = ws->stopped ? ws->stopped : g->n > keep ? "limit" : NULL;
  if (!matches) return NULL;
  for (size_t i = 0; i < keep; i++)
    if (json_array_append_new(matches, ag_json_text(g->m[i].rel, strlen(g->m[i].rel))) < 0) {
      json_decref(matches);
      return NULL;
    }
  return json_pack("{s:s, s:o, s:I, s:I, s:b, s:s?}", "pattern", pattern, "matches", matches,
                   "total", (json_int_t)g->n, "scanned", (json_int_t)ws->scanned,
                   "truncated", reason != NULL, "truncated_reason", reason);
}

int ag_op_file_glob(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "pattern", "limit", NULL };
  char norm[AG_PATH_MAX];
  const char *path, *pattern;
  size_t plen, patlen;
  long long limit;
  glob_run g = { { 0 }, NULL, 0, 0 };
  ag_walk_state ws;
  int rc = -1;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", ".", 1, &path, &plen, e) < 0 ||
      ag_arg_str(req, "pattern", NULL, 1, &pattern, &patlen, e) < 0 ||
      ag_arg_int(req, "limit", 0, 0, 1LL << 31, &limit, e) < 0 ||
      ag_path_norm(path, plen, 1, norm, e) < 0 ||
      ag_glob_compile(&g.glob, pattern, patlen, "pattern", e) < 0)
    return -1;
  if (limit == 0 || limit > AG_GLOB_MAX) limit = AG_GLOB_MAX;
  if (ag_walk(fs, norm, path, &ws, glob_visit, &g, e) == 0) {
    if (g.n) qsort(g.m, g.n, sizeof *g.m, newest_first);
    *result = glob_result(pattern, &g, &ws, limit);
    rc = *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
  }
  for (size_t i = 0; i < g.n; i++) free(g.m[i].rel);
  free(g.m);
  ag_glob_free(&g.glob);
  return rc;
}
