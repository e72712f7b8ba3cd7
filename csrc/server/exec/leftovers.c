/*
** The start's sweep of half-made things (leftovers.h). Each directory of
** the data directory that holds volumes or archives is listed, and each
** entry is kept only when a row names it; a failed lookup keeps it too
** (never delete on a store error). Volumes go through volume.h, which
** never walks a tree a sandbox wrote.
*/
#include "server/exec/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/volume.h"
#include "server/store/db.h"
#include "server/store/jobdocs.h"

/* 1 when table has a row id, 0 when it surely has none, -1 when the
** store cannot say. */
static int has_row(ux_server *srv, const char *table, const char *id) {
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT 1 AS x FROM %s WHERE id = ?1", table);
  json_t *rows = ux_db_rows(srv->store, sql, "s", id);
  int rc = rows ? json_array_size(rows) > 0 : -1;
  json_decref(rows);
  return rc;
}

/* DATA/<sub> (its path in dir), opened without following a link, for
** listing; NULL when it is not there. These directories are the
** server's own: no sandbox can write them. */
static DIR *list_of(ux_server *srv, const char *sub, char *dir, size_t len) {
  if (ux_path(dir, len, "%s/%s", srv->cfg.data, sub) < 0) return NULL;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0) close(fd);
  return d;
}

/* The volumes of DATA/<sub>/: those without a row of table go, the
** others lose what a cut-short restore left. */
static int sweep_volumes(ux_server *srv, const char *sub, const char *table) {
  char dir[4200], path[4500];
  int n = 0;
  DIR *d = list_of(srv, sub, dir, sizeof dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || ux_path(path, sizeof path, "%s/%s", dir, e->d_name) < 0) continue;
    int row = has_row(srv, table, e->d_name);
    if (row == 1) ux_volume_tidy(path);
    if (row != 0) continue;
    fprintf(stderr, "unsandboxd: removing %s: no %s row names it (left by a crash)\n", path, table);
    ux_volume_destroy(path);
    n++;
  }
  closedir(d);
  return n;
}

/* The archives of DATA/<sub>/ (<id>.tar.gz): temporaries and archives
** without a row of table go. */
static int sweep_archives(ux_server *srv, const char *sub, const char *table) {
  char dir[4200], id[256];
  int n = 0;
  DIR *d = list_of(srv, sub, dir, sizeof dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.') continue;
    int tmp = len > 4 && !strcmp(e->d_name + len - 4, ".tmp");
    int arch = len > 7 && len - 7 < sizeof id && !strcmp(e->d_name + len - 7, ".tar.gz");
    if (!tmp && !arch) continue;
    snprintf(id, sizeof id, "%.*s", (int)(len - 7), e->d_name);
    if (!tmp && has_row(srv, table, id) != 0) continue;
    fprintf(stderr, "unsandboxd: removing %s/%s: %s (left by a crash)\n", dir, e->d_name,
            tmp ? "an archive never finished" : "no row names it");
    if (unlinkat(dirfd(d), e->d_name, 0) == 0) n++;
  }
  closedir(d);
  return n;
}

int ux_leftovers_sweep(ux_server *srv) {
  return sweep_volumes(srv, "sessions", "sessions") + sweep_volumes(srv, "services", "services") +
         sweep_volumes(srv, "workspaces", "cp_workspaces") + sweep_archives(srv, "snapshots", "snapshots") +
         sweep_archives(srv, "images", "images") + ux_jobdoc_sweep(srv->store);
}
