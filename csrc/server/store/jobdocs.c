/*
** Finished jobs' documents (jobdocs.h): written once through a writer
** whose one buffer spills to DATA/jobs/<id>.json when the text outgrows
** it, stored as a row (the text itself, or the job's head and the file's
** length), read back from the file, and removed with their rows when
** they expire. DATA/jobs is the server's own directory (0700): no sandbox
** sees it, so plain paths are safe here; still, every file is opened
** O_NOFOLLOW and checked to be the regular file its row describes.
*/
#include "server/store/jobdocs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "server/fsutil.h"
#include "server/mem.h"
#include "server/store/db.h"
#include "server/store/store_int.h"

struct ux_jobdoc {
  ux_store *st;
  char id[64];
  ux_jw w;
  int fd;                 /* the file, once the text outgrew the buffer */
  int stored;             /* a row names the file: it is the store's */
  long long length;       /* set by ux_jobdoc_end */
};

static int id_ok(const char *id) {
  size_t n = strlen(id);
  return n > 0 && n < 64 && strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == n;
}

static int job_path(const ux_store *st, const char *id, char *out, size_t len) {
  return ux_path(out, len, "%s/jobs/%s.json", st->dir, id);
}

/* The writer's sink: the file is made at the first spill. */
static int spill(void *ctx, const char *p, size_t n) {
  ux_jobdoc *d = ctx;
  if (d->fd < 0) {
    char path[4300], dir[4200];
    if (ux_path(dir, sizeof dir, "%s/jobs", d->st->dir) < 0 || job_path(d->st, d->id, path, sizeof path) < 0)
      return -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
    d->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (d->fd < 0) {
      fprintf(stderr, "unsandboxd: job %s: cannot create its document: %s\n", d->id, strerror(errno));
      return -1;
    }
  }
  return unsb_write_all(d->fd, p, n);
}

ux_jobdoc *ux_jobdoc_begin(ux_store *st, const char *id) {
  if (!id_ok(id)) return NULL;
  ux_jobdoc *d = ux_xcalloc(1, sizeof *d);
  d->st = st;
  d->fd = -1;
  d->length = -1;
  snprintf(d->id, sizeof d->id, "%s", id);
  ux_jw_init_sink(&d->w, UX_JOBDOC_INLINE_MAX, spill, d);
  return d;
}

ux_jw *ux_jobdoc_writer(ux_jobdoc *d) { return &d->w; }

void ux_jobdoc_restart(ux_jobdoc *d) {
  if (d->fd >= 0 && (ftruncate(d->fd, 0) != 0 || lseek(d->fd, 0, SEEK_SET) != 0)) {
    close(d->fd);                     /* made again at the next spill */
    d->fd = -1;
    char path[4300];
    if (job_path(d->st, d->id, path, sizeof path) == 0) unlink(path);
  }
  d->w.len = 0;
  d->w.flushed = 0;
  d->w.failed = 0;
  d->w.depth = 0;
  d->length = -1;
}

long long ux_jobdoc_end(ux_jobdoc *d) {
  /* a text that fits the buffer stays in memory: it will be the row */
  if ((d->w.flushed > 0 && ux_jw_flush(&d->w) != 0) || d->w.failed) return d->length = -1;
  return d->length = (long long)ux_jw_length(&d->w);
}

/* The inline text, NUL-terminated for binding (the buffer has room: it
** is flushed only when full and more comes, and JSON text has no NUL). */
static const char *inline_text(ux_jobdoc *d) {
  if (d->w.len == d->w.cap) {
    d->w.p = ux_xrealloc(d->w.p, d->w.cap + 1);
    d->w.cap++;
  }
  d->w.p[d->w.len] = '\0';
  return d->w.p;
}

int ux_jobdoc_store(ux_jobdoc *d, const char *owner, const char *status, long created_at,
                    const char *head, int insert) {
  if (d->length < 0) return -1;
  int in_file = d->w.flushed > 0;
  const char *doc = in_file ? head : inline_text(d);
  long long bytes = in_file ? d->length : -1;
  int rc;
  /* file_bytes NULL (bound as a NULL text) when the text is the row */
  char nbytes[32];
  snprintf(nbytes, sizeof nbytes, "%lld", bytes);
  if (insert)
    rc = ux_db_exec(d->st, "INSERT INTO jobs(id, owner, status, created_at, doc, file_bytes)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, CAST(?6 AS INTEGER))", "sssiss", d->id, owner, status,
                    (long long)created_at, doc, in_file ? nbytes : NULL);
  else
    rc = ux_db_exec(d->st, "UPDATE jobs SET status = ?3, doc = ?4, file_bytes = CAST(?5 AS INTEGER)"
                    " WHERE id = ?1 AND owner = ?2 AND status IN ('pending', 'running')", "sssss",
                    d->id, owner, status, doc, in_file ? nbytes : NULL);
  if (rc == 1 && in_file) d->stored = 1;
  return rc < 0 ? -1 : rc == 1 ? 1 : 0;
}

int ux_jobdoc_spool(ux_jobdoc *d, ux_spool **out, unsigned long long *len) {
  *out = NULL;
  if (d->length < 0) return -1;
  *len = (unsigned long long)d->length;
  if (d->w.flushed == 0) {
    char *copy = ux_xmalloc(d->w.len ? d->w.len : 1);
    memcpy(copy, d->w.p, d->w.len);
    *out = ux_spool_of_mem(d->st, copy, d->w.len);
    return 0;
  }
  int fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return -1;
  *out = ux_spool_of_fd(d->st, fd, *len);
  return 0;
}

void ux_jobdoc_free(ux_jobdoc *d) {
  if (!d) return;
  if (d->fd >= 0) {
    close(d->fd);
    char path[4300];
    if (!d->stored && job_path(d->st, d->id, path, sizeof path) == 0) unlink(path);
  }
  ux_jw_free(&d->w);
  free(d);
}

int ux_jobdoc_open(ux_store *st, const char *id, unsigned long long bytes) {
  char path[4300];
  struct stat sb;
  if (!id_ok(id) || job_path(st, id, path, sizeof path) < 0) { errno = EINVAL; return -1; }
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (unsigned long long)sb.st_size != bytes) {
    fprintf(stderr, "unsandboxd: job %s: its document file is not the one its row describes\n", id);
    close(fd);
    errno = EIO;
    return -1;
  }
  return fd;
}

/* Removes the file of each row of `gone` (rows {id, file_bytes}) that
** had one. */
static void unlink_files(ux_store *st, json_t *gone) {
  size_t i;
  json_t *row;
  json_array_foreach(gone, i, row) {
    char path[4300];
    const char *id = json_string_value(json_object_get(row, "id"));
    if (!json_is_integer(json_object_get(row, "file_bytes")) || !id || !id_ok(id) ||
        job_path(st, id, path, sizeof path) < 0) continue;
    if (unlink(path) != 0 && errno != ENOENT)
      fprintf(stderr, "unsandboxd: cannot remove %s: %s\n", path, strerror(errno));
  }
}

int ux_store_expire_jobs(ux_store *st, long before) {
  /* final rows only: a pending row has no completed_at; their files go
  ** once the rows are gone (a crash in between: leftovers) */
  json_t *gone = ux_db_rows(st, "DELETE FROM jobs WHERE json_extract(doc, '$.completed_at') <= ?1"
                            " AND status NOT IN ('pending', 'running') RETURNING id, file_bytes",
                            "i", (long long)before);
  if (!gone) return -1;
  int n = (int)json_array_size(gone);
  unlink_files(st, gone);
  json_decref(gone);
  if (n > 0) ux_db_exec(st, "PRAGMA incremental_vacuum", "");
  return n;
}

int ux_store_expire_job(ux_store *st, const char *id, long before) {
  json_t *gone = ux_db_rows(st, "DELETE FROM jobs WHERE id = ?1 AND json_extract(doc, '$.completed_at') <= ?2"
                            " AND status NOT IN ('pending', 'running') RETURNING id, file_bytes",
                            "si", id, (long long)before);
  if (!gone) return -1;
  int n = (int)json_array_size(gone);
  unlink_files(st, gone);
  json_decref(gone);
  return n;
}

int ux_jobdoc_sweep(ux_store *st) {
  char dir[4200], path[4400], id[64];
  int n = 0;
  if (ux_path(dir, sizeof dir, "%s/jobs", st->dir) < 0) return 0;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dh) { if (fd >= 0) close(fd); return 0; }
  struct dirent *e;
  while ((e = readdir(dh))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.') continue;
    int named = len > 5 && len - 5 < sizeof id && !strcmp(e->d_name + len - 5, ".json");
    if (named) { memcpy(id, e->d_name, len - 5); id[len - 5] = '\0'; }
    /* kept when a row names it, or when the store cannot say */
    json_t *rows = named && id_ok(id) ? ux_db_rows(st, "SELECT 1 AS x FROM jobs WHERE id = ?1"
                                                   " AND file_bytes IS NOT NULL", "s", id) : json_array();
    int keep = !rows || json_array_size(rows) > 0;
    json_decref(rows);
    if (keep || ux_path(path, sizeof path, "%s/%s", dir, e->d_name) < 0) continue;
    fprintf(stderr, "unsandboxd: removing %s: no job row names it (left by a crash)\n", path);
    if (unlinkat(fd, e->d_name, 0) == 0) n++;
  }
  closedir(dh);
  return n;
}
