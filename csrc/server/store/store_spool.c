/*
** Documents sent in pieces (store.h, ux_store_spool). A finished job's
** document can be tens of MB (artifacts); reading it whole for every
** reader, parsing it and serialising it again cost each slow reader two
** or three copies, held for as long as the reader took. Here it is read
** once through SQLite's incremental blob API, in one read transaction of
** a connection of its own (so the copy never holds the writers' mutex, and
** the rowid it found is the row it copies), into an unlinked file of
** DATA/tmp, which the transport then reads from in small pieces on its
** event thread. Every concurrent reader of the same document shares that
** one file (by table and id: ids are never reused, and only documents
** that never change are spooled), so a crowd of readers costs one copy on
** disk and a small buffer each. The blob cannot be read piece by piece
** straight from the store instead: each reopen walks the row's overflow
** pages from the start (measured: 3 s of CPU for one 20 MB document in
** 64 KiB pieces, against 18 ms for one pass), and a handle kept open
** would hold a read transaction (and the WAL) for as long as a client
** dawdles. A job's document written to a file of its own (jobdocs.h) is
** not copied at all: its spool reads that file.
*/
#include "server/store/store.h"

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
#include "server/store/jobdocs.h"
#include "server/store/store_int.h"

struct ux_spool {
  ux_store *st;
  char table[16], id[128];
  unsigned long long len;
  int fd;                     /* the unlinked copy, or -1 for mem */
  char *mem;                  /* a small document, this reader's own */
  int refs;                   /* under st->spool_mu */
  int listed;
  ux_spool *next;
};

#define PIECE 65536

/* The reading connection, opened on first use; under ro_mu. */
static sqlite3 *reader(ux_store *st) {
  char path[4200];
  if (st->ro) return st->ro;
  if (ux_path(path, sizeof path, "%s/unsandboxd.db", st->dir) < 0) return NULL;
  if (sqlite3_open_v2(path, &st->ro, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
      sqlite3_busy_timeout(st->ro, 5000) != SQLITE_OK) {
    fprintf(stderr, "unsandboxd: store: cannot open a reading connection: %s\n",
            st->ro ? sqlite3_errmsg(st->ro) : "out of memory");
    sqlite3_close(st->ro);
    st->ro = NULL;
  }
  return st->ro;
}

/* The rowid of id of owner, and for a job whose document is a file of
** its own (jobdocs.h) that file's length in *file_bytes (else -1): 1, 0
** none, -1 error. */
static int row_of(sqlite3 *db, const char *table, const char *id, const char *owner,
                  sqlite3_int64 *rowid, long long *file_bytes) {
  char sql[200];
  sqlite3_stmt *s = NULL;
  snprintf(sql, sizeof sql, "SELECT rowid, %s FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)",
           strcmp(table, "jobs") ? "NULL" : "file_bytes", table);
  int rc = -1;
  *file_bytes = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
      sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
      (owner ? sqlite3_bind_text(s, 2, owner, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, 2)) == SQLITE_OK) {
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
      *rowid = sqlite3_column_int64(s, 0);
      if (sqlite3_column_type(s, 1) == SQLITE_INTEGER) *file_bytes = sqlite3_column_int64(s, 1);
      rc = 1;
    } else if (step == SQLITE_DONE) rc = 0;
  }
  if (rc < 0) fprintf(stderr, "unsandboxd: store: %s\n", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  return rc;
}

/* An unlinked file in DATA/tmp (0600, gone when its last fd closes). */
static int unlinked_file(const ux_store *st) {
  char dir[4200], tmpl[4300];
  if (ux_path(dir, sizeof dir, "%s/tmp", st->dir) < 0) return -1;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
  int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR)) return fd;
  if (ux_path(tmpl, sizeof tmpl, "%s/spool-XXXXXX", dir) < 0) return -1;
  fd = mkostemp(tmpl, O_CLOEXEC);            /* a file system without O_TMPFILE */
  if (fd >= 0) unlink(tmpl);
  return fd;
}

static ux_spool *new_spool(ux_store *st, const char *table, const char *id) {
  ux_spool *sp = ux_xcalloc(1, sizeof *sp);
  sp->st = st;
  sp->fd = -1;
  sp->refs = 1;
  snprintf(sp->table, sizeof sp->table, "%s", table);
  snprintf(sp->id, sizeof sp->id, "%s", id);
  return sp;
}

/* Copies the blob into a file or into memory; 0 or -1. */
static int copy_blob(ux_store *st, sqlite3_blob *b, ux_spool *sp) {
  if (sp->len <= UX_SPOOL_MEM_MAX) {
    sp->mem = ux_xmalloc(sp->len ? sp->len : 1);
    return sqlite3_blob_read(b, sp->mem, (int)sp->len, 0) == SQLITE_OK ? 0 : -1;
  }
  char buf[PIECE];
  if ((sp->fd = unlinked_file(st)) < 0) return -1;
  for (unsigned long long at = 0; at < sp->len; ) {
    int n = sp->len - at < PIECE ? (int)(sp->len - at) : PIECE;
    if (sqlite3_blob_read(b, buf, n, (int)at) != SQLITE_OK || unsb_write_all(sp->fd, buf, (size_t)n) != 0)
      return -1;
    at += (unsigned long long)n;
  }
  return 0;
}

/* A new spool of the row (in the caller's read transaction), or NULL. */
static ux_spool *spool_row(ux_store *st, const char *table, const char *id, sqlite3_int64 rowid) {
  sqlite3_blob *b = NULL;
  if (sqlite3_blob_open(st->ro, "main", table, "doc", rowid, 0, &b) != SQLITE_OK) {
    fprintf(stderr, "unsandboxd: store: %s\n", sqlite3_errmsg(st->ro));
    sqlite3_blob_close(b);
    return NULL;
  }
  ux_spool *sp = new_spool(st, table, id);
  sp->len = (unsigned long long)sqlite3_blob_bytes(b);
  int rc = copy_blob(st, b, sp);
  sqlite3_blob_close(b);
  if (rc == 0) return sp;
  fprintf(stderr, "unsandboxd: store: cannot spool %s %s: %s\n", table, id, strerror(errno));
  ux_spool_put(sp);
  return NULL;
}

/* A listed spool of table/id with one more reader, or NULL. */
static ux_spool *shared(ux_store *st, const char *table, const char *id) {
  pthread_mutex_lock(&st->spool_mu);
  ux_spool *sp = st->spools;
  while (sp && (strcmp(sp->table, table) || strcmp(sp->id, id))) sp = sp->next;
  if (sp) sp->refs++;
  pthread_mutex_unlock(&st->spool_mu);
  return sp;
}

static void list_spool(ux_store *st, ux_spool *sp) {
  pthread_mutex_lock(&st->spool_mu);
  sp->next = st->spools;
  st->spools = sp;
  sp->listed = 1;
  pthread_mutex_unlock(&st->spool_mu);
}

ux_spool *ux_spool_of_mem(ux_store *st, char *mem, unsigned long long len) {
  ux_spool *sp = new_spool(st, "", "");
  sp->mem = mem;
  sp->len = len;
  return sp;
}

ux_spool *ux_spool_of_fd(ux_store *st, int fd, unsigned long long len) {
  ux_spool *sp = new_spool(st, "", "");
  sp->fd = fd;
  sp->len = len;
  return sp;
}

/* The document of a job kept in a file of its own: a spool reading that
** file (each reader its own descriptor; the page cache is what they
** share). 1, 0 when the file went with an expiry meanwhile, -1. */
static int spool_file(ux_store *st, const char *id, long long bytes, ux_spool **out) {
  int fd = ux_jobdoc_open(st, id, (unsigned long long)bytes);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  *out = ux_spool_of_fd(st, fd, (unsigned long long)bytes);
  return 1;
}

int ux_store_spool(ux_store *st, const char *table, const char *id, const char *owner,
                   ux_spool **out, unsigned long long *len) {
  *out = NULL;
  if (!ux_store_known_table(table) || strlen(id) >= sizeof ((ux_spool *)0)->id) return -1;
  pthread_mutex_lock(&st->ro_mu);
  sqlite3 *db = reader(st);
  sqlite3_int64 rowid = 0;
  long long file_bytes = -1;
  int rc = db && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
  if (rc == 0) {
    rc = row_of(db, table, id, owner, &rowid, &file_bytes);
    ux_spool *sp = NULL;
    if (rc == 1 && file_bytes >= 0) rc = spool_file(st, id, file_bytes, &sp);
    else if (rc == 1 && !(sp = shared(st, table, id)) && (sp = spool_row(st, table, id, rowid)) &&
             sp->fd >= 0) list_spool(st, sp);
    if (rc == 1 && !sp) rc = -1;
    *out = sp;
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  }
  pthread_mutex_unlock(&st->ro_mu);
  if (*out) *len = (*out)->len;
  return rc;
}

ssize_t ux_spool_read(ux_spool *sp, unsigned long long pos, char *buf, size_t max) {
  if (pos >= sp->len || max == 0) return -1;
  size_t n = sp->len - pos < max ? (size_t)(sp->len - pos) : max;
  if (sp->mem) {
    memcpy(buf, sp->mem + pos, n);
    return (ssize_t)n;
  }
  ssize_t got;
  do got = pread(sp->fd, buf, n, (off_t)pos); while (got < 0 && errno == EINTR);
  return got > 0 ? got : -1;
}

void ux_spool_put(ux_spool *sp) {
  if (!sp) return;
  ux_store *st = sp->st;
  pthread_mutex_lock(&st->spool_mu);
  int last = --sp->refs == 0;
  if (last && sp->listed)
    for (ux_spool **p = &st->spools; *p; p = &(*p)->next)
      if (*p == sp) { *p = sp->next; break; }
  pthread_mutex_unlock(&st->spool_mu);
  if (!last) return;
  if (sp->fd >= 0) close(sp->fd);
  free(sp->mem);
  free(sp);
}

void ux_store_spools_close(ux_store *st) {
  /* readers are gone by now (the transport has stopped); a spool still
  ** listed belongs to a reader that never gave it back */
  while (st->spools) {
    ux_spool *sp = st->spools;
    st->spools = sp->next;
    if (sp->fd >= 0) close(sp->fd);
    free(sp->mem);
    free(sp);
  }
  sqlite3_close(st->ro);
  st->ro = NULL;
}
