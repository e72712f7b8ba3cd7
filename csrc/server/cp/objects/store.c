/*
** The object store's tables (cp_object_versions, cp_ticket_jtis: every
** statement on them is here), metadata, reads, deletes, the ticket ledger
** and the transfer gate (cp/objects/store.h); writing a version's content
** is cp/objects/put.c. Every change is one conditional statement or one
** transaction (store/db.h): ordinals come from the INSERT that commits a
** version, a delete marker is only added by a statement that sees a live
** latest version, a jti is burned by an INSERT OR IGNORE whose row count
** says who was first.
*/
#include "server/cp/objects/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/store/db.h"

static const char SCHEMA[] =
  "CREATE TABLE IF NOT EXISTS cp_object_versions("
  "  bucket TEXT NOT NULL, key TEXT NOT NULL, ordinal INTEGER NOT NULL,"
  "  version_id TEXT NOT NULL UNIQUE, delete_marker INTEGER NOT NULL,"
  "  bytes INTEGER NOT NULL, sha256 TEXT, etag TEXT, content_type TEXT,"
  "  last_modified INTEGER NOT NULL, PRIMARY KEY(bucket, key, ordinal));"
  /* what a list reads of each version, newest first: a list is one scan
  ** of this index, with no lookup of the table's rows */
  "CREATE INDEX IF NOT EXISTS cp_object_versions_list ON cp_object_versions("
  "  bucket, key, ordinal DESC, delete_marker, bytes, last_modified);"
  "CREATE TABLE IF NOT EXISTS cp_ticket_jtis(jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);"
  "CREATE INDEX IF NOT EXISTS cp_ticket_jtis_exp ON cp_ticket_jtis(expires_at);";

/* A burned jti is kept this long past its ticket's expiry, so a clock
** stepped back a little cannot revive a ticket whose jti was forgotten. */
#define JTI_KEEP_S 3600

static void copy_str(char *dst, size_t cap, const json_t *v) {
  const char *s = json_string_value(v);
  snprintf(dst, cap, "%s", s ? s : "");
}

void ux_objstore_row_meta(const json_t *row, ux_obj_meta *m) {
  memset(m, 0, sizeof *m);
  copy_str(m->bucket, sizeof m->bucket, json_object_get(row, "bucket"));
  copy_str(m->key, sizeof m->key, json_object_get(row, "key"));
  copy_str(m->version_id, sizeof m->version_id, json_object_get(row, "version_id"));
  copy_str(m->sha256, sizeof m->sha256, json_object_get(row, "sha256"));
  copy_str(m->etag, sizeof m->etag, json_object_get(row, "etag"));
  copy_str(m->content_type, sizeof m->content_type, json_object_get(row, "content_type"));
  m->ordinal = json_integer_value(json_object_get(row, "ordinal"));
  m->bytes = (unsigned long long)json_integer_value(json_object_get(row, "bytes"));
  m->last_modified = json_integer_value(json_object_get(row, "last_modified"));
  m->delete_marker = json_integer_value(json_object_get(row, "delete_marker")) != 0;
  m->is_latest = json_integer_value(json_object_get(row, "is_latest")) != 0;
}

/* The ordinal comes from the INSERT itself: one more than the key's
** highest, under the transaction's lock, so parallel commits of one key
** get 1, 2, 3 ... and none overwrites another. */
static int add_version_tx(ux_store *st, void *arg) {
  ux_obj_meta *m = arg;
  int n = ux_db_exec(st,
    "INSERT INTO cp_object_versions(bucket, key, ordinal, version_id, delete_marker, bytes,"
    "   sha256, etag, content_type, last_modified)"
    " SELECT ?1, ?2, COALESCE(MAX(ordinal), 0) + 1, ?3, 0, ?4, ?5, ?6, ?7, ?8"
    " FROM cp_object_versions WHERE bucket = ?1 AND key = ?2",
    "sssisssi", m->bucket, m->key, m->version_id, (long long)m->bytes, m->sha256, m->etag,
    m->content_type, m->last_modified);
  if (n != 1) return -1;
  json_t *row = ux_db_row(st, "SELECT ordinal FROM cp_object_versions WHERE version_id = ?1",
                          "s", m->version_id);
  m->ordinal = json_integer_value(json_object_get(row, "ordinal"));
  json_decref(row);
  return m->ordinal > 0 ? 0 : -1;
}

int ux_objstore_add_version(ux_objstore *os, ux_obj_meta *m) {
  return ux_db_tx(os->st, add_version_tx, m) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------
** Opening: directories, tables, and what a crash left behind
** ---------------------------------------------------------------- */

static int open_dir(const char *base, const char *name, char *err, size_t errlen) {
  char path[4200];
  if (ux_path(path, sizeof path, "%s/objects/%s", base, name) < 0 || ux_mkdir_p(path, 0700) < 0) {
    snprintf(err, errlen, "cannot create %s/objects/%s: %s", base, name, strerror(errno));
    return -1;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || fchmod(fd, 0700) < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

/* Removes every entry of dirfd for which keep() says no. 0 or -1. */
static int sweep(ux_objstore *os, int dirfd, int (*keep)(ux_objstore *, const char *)) {
  int dfd = dup(dirfd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) { if (dfd >= 0) close(dfd); return -1; }
  rewinddir(d);
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (keep && keep(os, e->d_name)))
      continue;
    if (unlinkat(dirfd, e->d_name, 0) < 0 && errno != ENOENT) rc = -1;
  }
  closedir(d);
  return rc;
}

/* A blob stays when a version row names it (or when the store cannot
** say: never delete content on a failed lookup). */
static int blob_known(ux_objstore *os, const char *name) {
  json_t *rows = ux_db_rows(os->st, "SELECT 1 AS x FROM cp_object_versions WHERE version_id = ?1",
                            "s", name);
  int keep = !rows || json_array_size(rows) > 0;
  json_decref(rows);
  return keep;
}

ux_objstore *ux_objstore_open(ux_store *st, const char *data_dir, char *err, size_t errlen) {
  ux_objstore *os = calloc(1, sizeof *os);
  if (!os) { snprintf(err, errlen, "out of memory"); return NULL; }
  os->st = st;
  os->tmpfd = os->blobfd = -1;
  os->max_transfers = UX_OBJ_TRANSFERS;
  os->per_party = (int)ux_share_default(UX_OBJ_TRANSFERS);
  os->parties = ux_shares_new(0);       /* the share is checked here, under mu */
  if (pthread_mutex_init(&os->mu, NULL) != 0) {
    snprintf(err, errlen, "cannot create the object store's lock");
    free(os);
    return NULL;
  }
  if ((os->tmpfd = open_dir(data_dir, "tmp", err, errlen)) < 0 ||
      (os->blobfd = open_dir(data_dir, "blobs", err, errlen)) < 0) {
    ux_objstore_close(os);
    return NULL;
  }
  if (ux_db_exec(st, SCHEMA, "") < 0) {
    snprintf(err, errlen, "cannot create the object tables");
    ux_objstore_close(os);
    return NULL;
  }
  if (sweep(os, os->tmpfd, NULL) < 0 || sweep(os, os->blobfd, blob_known) < 0)
    fprintf(stderr, "unsandboxd: objects: could not remove every leftover file\n");
  return os;
}

void ux_objstore_close(ux_objstore *os) {
  if (!os) return;
  if (os->tmpfd >= 0) close(os->tmpfd);
  if (os->blobfd >= 0) close(os->blobfd);
  ux_shares_free(os->parties);
  pthread_mutex_destroy(&os->mu);
  free(os);
}

/* ------------------------------------------------------------------
** The transfer gate
** ---------------------------------------------------------------- */

void ux_objstore_set_max_transfers(ux_objstore *os, int max, int per_party) {
  pthread_mutex_lock(&os->mu);
  os->max_transfers = max < 0 ? 0 : max;
  os->per_party = per_party < 0 ? 0 : per_party;
  pthread_mutex_unlock(&os->mu);
}

/* A party at its share is refused before the gate is looked at: the 429
** is its own, whatever the others hold. A share of the whole gate (a
** gate of one) is no share: the gate's own 503 then. */
int ux_objstore_transfer_begin(ux_objstore *os, const char *party) {
  pthread_mutex_lock(&os->mu);
  int rc = UX_OBJ_OK;
  if (os->per_party && os->per_party < os->max_transfers &&
      ux_shares_held(os->parties, party) >= (unsigned)os->per_party)
    rc = UX_OBJ_ESHARE;
  else if (os->transfers >= os->max_transfers)
    rc = UX_OBJ_EBUSY;
  if (rc == UX_OBJ_OK) {
    os->transfers++;
    ux_shares_take(os->parties, party);
  }
  pthread_mutex_unlock(&os->mu);
  return rc;
}

void ux_objstore_transfer_end(ux_objstore *os, const char *party) {
  pthread_mutex_lock(&os->mu);
  if (os->transfers > 0) os->transfers--;
  ux_shares_give(os->parties, party);
  pthread_mutex_unlock(&os->mu);
}

int ux_objstore_transfers(ux_objstore *os) {
  pthread_mutex_lock(&os->mu);
  int n = os->transfers;
  pthread_mutex_unlock(&os->mu);
  return n;
}

/* ------------------------------------------------------------------
** Reads
** ---------------------------------------------------------------- */

int ux_objstore_stat(ux_objstore *os, const char *bucket, const char *key, ux_obj_meta *meta) {
  json_t *rows = ux_db_rows(os->st, "SELECT *, 1 AS is_latest FROM cp_object_versions"
                            " WHERE bucket = ?1 AND key = ?2 ORDER BY ordinal DESC LIMIT 1",
                            "ss", bucket, key);
  if (!rows) return UX_OBJ_ESTORE;
  json_t *row = json_array_get(rows, 0);
  int rc = UX_OBJ_ENOENT;
  if (row) {
    ux_objstore_row_meta(row, meta);
    if (!meta->delete_marker) rc = UX_OBJ_OK;
  }
  json_decref(rows);
  return rc;
}

int ux_objstore_open_read(ux_objstore *os, const char *bucket, const char *key,
                          int *fd, ux_obj_meta *meta) {
  int rc = ux_objstore_stat(os, bucket, key, meta);
  if (rc != UX_OBJ_OK) return rc;
  int f = openat(os->blobfd, meta->version_id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (f < 0) return errno == ENOENT ? UX_OBJ_ENOENT : UX_OBJ_EIO;   /* purged meanwhile */
  struct stat sb;
  if (fstat(f, &sb) < 0 || !S_ISREG(sb.st_mode) || (unsigned long long)sb.st_size != meta->bytes) {
    fprintf(stderr, "unsandboxd: objects: content of version %s is not as recorded\n",
            meta->version_id);
    close(f);
    return UX_OBJ_EIO;
  }
  *fd = f;
  return UX_OBJ_OK;
}

/* rows (a JSON array) as a malloc'd meta array. */
static int rows_to_meta(json_t *rows, ux_obj_meta **v, size_t *n) {
  size_t count = json_array_size(rows), i;
  json_t *row;
  *v = NULL;
  *n = 0;
  if (count == 0) return UX_OBJ_OK;
  ux_obj_meta *out = calloc(count, sizeof *out);
  if (!out) return UX_OBJ_ESTORE;
  json_array_foreach(rows, i, row) ux_objstore_row_meta(row, &out[i]);
  *v = out;
  *n = count;
  return UX_OBJ_OK;
}

int ux_objstore_versions(ux_objstore *os, const char *bucket, const char *key,
                         ux_obj_meta **v, size_t *n) {
  json_t *rows = ux_db_rows(os->st,
    "SELECT *, ordinal = (SELECT MAX(ordinal) FROM cp_object_versions w"
    "   WHERE w.bucket = ?1 AND w.key = ?2) AS is_latest"
    " FROM cp_object_versions WHERE bucket = ?1 AND key = ?2 ORDER BY ordinal DESC", "ss", bucket, key);
  if (!rows) return UX_OBJ_ESTORE;
  int rc = json_array_size(rows) ? rows_to_meta(rows, v, n) : UX_OBJ_ENOENT;
  json_decref(rows);
  return rc;
}

/* The live objects below a base: keys base, or in [base "/", base "0")
** ('0' follows '/'), whose latest version is not a delete marker, by key.
** ?1 bucket, ?2 base, ?3 and ?4 the range. The keys are searched in
** [base, base "0") of the list index, so a list reads its own rows only,
** not the bucket's, in the index's own order (key, newest first): no sort,
** no seek per key, no grouping (an aggregate per key cost SQLite twice the
** plain scan). The rule is applied to the rows as they come (live_row):
** a key's first row is its latest version, listed unless it is a delete
** marker; its older rows are passed over. Columns: 0 key, 1
** delete_marker, then the caller's. */
#define VERSIONS_BELOW(columns) \
  "SELECT v.key, v.delete_marker, " columns " FROM cp_object_versions v" \
  " WHERE v.bucket = ?1 AND v.key >= ?2 AND v.key < ?4 AND (v.key = ?2 OR v.key >= ?3)" \
  " ORDER BY v.key, v.ordinal DESC"

typedef struct live_scan {
  int (*fn)(void *ctx, ux_db_cursor *row);   /* a live key's latest version */
  void *ctx;
  size_t max, n;
  char prev[UX_OBJ_KEY_MAX + 1];             /* the key of the row before */
  size_t prev_len;
  int started;
} live_scan;

static int live_row(void *arg, ux_db_cursor *row) {
  live_scan *ls = arg;
  size_t klen;
  const char *key = ux_db_text(row, 0, &klen);
  if (!key || klen > UX_OBJ_KEY_MAX) return 0;   /* no key a put accepts */
  if (ls->started && klen == ls->prev_len && !memcmp(key, ls->prev, klen)) return 0;   /* older */
  memcpy(ls->prev, key, klen);
  ls->prev_len = klen;
  ls->started = 1;
  if (ux_db_int(row, 1) != 0) return 0;          /* the key's latest is a delete marker */
  if (ls->fn(ls->ctx, row) != 0) return 1;
  return ++ls->n >= ls->max;
}

/* base "/" and base "0", malloc'd: NULL when out of memory. */
static char *range_end(const char *base, char last) {
  size_t blen = strlen(base);
  char *p = malloc(blen + 2);
  if (!p) return NULL;
  memcpy(p, base, blen);
  p[blen] = last;
  p[blen + 1] = '\0';
  return p;
}

/* Hands at most max live objects below base to fn (VERSIONS_BELOW's
** rows, sql made by it): UX_OBJ_OK, or UX_OBJ_ESTORE. */
static int each_live(ux_objstore *os, const char *sql, const char *bucket, const char *base,
                     size_t max, int (*fn)(void *ctx, ux_db_cursor *row), void *ctx) {
  if (max == 0) return UX_OBJ_OK;
  char *lo = range_end(base, '/'), *hi = range_end(base, '0');
  live_scan *ls = calloc(1, sizeof *ls);
  int n = -1;
  if (lo && hi && ls) {
    ls->fn = fn;
    ls->ctx = ctx;
    ls->max = max;
    n = ux_db_each(os->st, sql, "ssss", live_row, ls, bucket, base, lo, hi);
  }
  free(lo);
  free(hi);
  free(ls);
  return n < 0 ? UX_OBJ_ESTORE : UX_OBJ_OK;
}

/* A text column into dst (cap bytes, "" for NULL). */
static void copy_text(char *dst, size_t cap, ux_db_cursor *row, int col) {
  const char *t = ux_db_text(row, col, NULL);
  snprintf(dst, cap, "%s", t ? t : "");
}

typedef struct { ux_obj_meta *v; size_t n, cap; int oom; } meta_list;

static int list_meta(void *arg, ux_db_cursor *row) {
  meta_list *l = arg;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    ux_obj_meta *v = realloc(l->v, cap * sizeof *v);
    if (!v) return l->oom = 1;
    l->v = v;
    l->cap = cap;
  }
  ux_obj_meta *m = &l->v[l->n++];
  memset(m, 0, sizeof *m);
  copy_text(m->key, sizeof m->key, row, 0);
  copy_text(m->bucket, sizeof m->bucket, row, 2);
  copy_text(m->version_id, sizeof m->version_id, row, 3);
  copy_text(m->sha256, sizeof m->sha256, row, 4);
  copy_text(m->etag, sizeof m->etag, row, 5);
  copy_text(m->content_type, sizeof m->content_type, row, 6);
  m->ordinal = ux_db_int(row, 7);
  m->bytes = (unsigned long long)ux_db_int(row, 8);
  m->last_modified = ux_db_int(row, 9);
  m->is_latest = 1;
  return 0;
}

int ux_objstore_list(ux_objstore *os, const char *bucket, const char *base, size_t max,
                     ux_obj_meta **v, size_t *n) {
  meta_list l = { NULL, 0, 0, 0 };
  int rc = each_live(os, VERSIONS_BELOW("v.bucket, v.version_id, v.sha256, v.etag, v.content_type,"
                                        " v.ordinal, v.bytes, v.last_modified"),
                     bucket, base, max, list_meta, &l);
  if (l.oom) rc = UX_OBJ_ESTORE;              /* a row could not be kept: no list */
  if (rc != UX_OBJ_OK || l.n == 0) {
    free(l.v);
    l.v = NULL;
    l.n = 0;
  }
  *v = l.v;
  *n = l.n;
  return rc;
}

typedef struct { ux_obj_visit fn; void *ctx; } visit_ctx;

static int visit_row(void *arg, ux_db_cursor *row) {
  visit_ctx *vc = arg;
  size_t klen;
  const char *key = ux_db_text(row, 0, &klen);
  return vc->fn(vc->ctx, key, klen, (unsigned long long)ux_db_int(row, 2), ux_db_int(row, 3));
}

int ux_objstore_list_each(ux_objstore *os, const char *bucket, const char *base, size_t max,
                          ux_obj_visit fn, void *ctx) {
  visit_ctx vc = { fn, ctx };
  return each_live(os, VERSIONS_BELOW("v.bytes, v.last_modified"), bucket, base, max, visit_row, &vc);
}

/* ------------------------------------------------------------------
** Deletes
** ---------------------------------------------------------------- */

static int add_marker(ux_objstore *os, const char *bucket, const char *key) {
  char vid[33];
  if (ux_random_id(vid, sizeof vid, "", 16) < 0) return UX_OBJ_ESTORE;
  /* one statement: a marker only on top of a live latest version */
  int n = ux_db_exec(os->st,
    "INSERT INTO cp_object_versions(bucket, key, ordinal, version_id, delete_marker, bytes,"
    "   last_modified)"
    " SELECT bucket, key, ordinal + 1, ?3, 1, 0, ?4 FROM cp_object_versions"
    " WHERE bucket = ?1 AND key = ?2 AND ordinal = (SELECT MAX(ordinal) FROM cp_object_versions"
    "   WHERE bucket = ?1 AND key = ?2) AND delete_marker = 0",
    "sssi", bucket, key, vid, (long long)ux_now());
  return n < 0 ? UX_OBJ_ESTORE : n == 0 ? UX_OBJ_ENOENT : UX_OBJ_OK;
}

typedef struct {
  const char *bucket, *key;
  json_t *gone;           /* version ids whose content is to be removed */
} purge_ctx;

static int purge_tx(ux_store *st, void *arg) {
  purge_ctx *p = arg;
  p->gone = ux_db_rows(st, "SELECT version_id FROM cp_object_versions"
                       " WHERE bucket = ?1 AND key = ?2 AND delete_marker = 0", "ss", p->bucket, p->key);
  if (!p->gone) return -1;
  int n = ux_db_exec(st, "DELETE FROM cp_object_versions WHERE bucket = ?1 AND key = ?2",
                     "ss", p->bucket, p->key);
  return n < 0 ? -1 : n == 0 ? 1 : 0;
}

static int purge(ux_objstore *os, const char *bucket, const char *key) {
  purge_ctx p = { bucket, key, NULL };
  int rc = ux_db_tx(os->st, purge_tx, &p);
  if (rc == 0) {
    size_t i;
    json_t *row;
    json_array_foreach(p.gone, i, row) {
      const char *vid = json_string_value(json_object_get(row, "version_id"));
      if (vid && unlinkat(os->blobfd, vid, 0) < 0 && errno != ENOENT)
        fprintf(stderr, "unsandboxd: objects: cannot remove %s: %s\n", vid, strerror(errno));
    }
  }
  json_decref(p.gone);
  return rc == 0 ? UX_OBJ_OK : rc == 1 ? UX_OBJ_ENOENT : UX_OBJ_ESTORE;
}

int ux_objstore_delete(ux_objstore *os, const char *bucket, const char *key, int do_purge) {
  return do_purge ? purge(os, bucket, key) : add_marker(os, bucket, key);
}

/* ------------------------------------------------------------------
** The ticket ledger
** ---------------------------------------------------------------- */

int ux_objstore_burn(ux_objstore *os, const char *jti, long long exp, long long now) {
  if (ux_db_exec(os->st, "DELETE FROM cp_ticket_jtis WHERE expires_at < ?1", "i",
                 now - JTI_KEEP_S) < 0)
    return UX_OBJ_ESTORE;
  int n = ux_db_exec(os->st, "INSERT OR IGNORE INTO cp_ticket_jtis(jti, expires_at) VALUES(?1, ?2)",
                     "si", jti, exp);
  return n < 0 ? UX_OBJ_ESTORE : n == 1 ? UX_OBJ_OK : UX_OBJ_ENOENT;
}
