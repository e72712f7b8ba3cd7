/*
** SQLite store: opening, keys, recovery after a crash (the documents'
** reads and conditional writes are store_docs.c). The data directory is
** created 0700 and the database file 0600 before SQLite opens it: SQLite
** gives its -wal and -shm files the mode of the database, so the secrets
** never become world-readable.
*/
#include "server/store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"

#include "server/store/db.h"
#include "server/store/store_int.h"
#include "server/mem.h"

static const char SCHEMA[] =
  /* a new database gives deleted rows' pages back to the file system
  ** (incremental_vacuum after expired jobs go); the write-ahead log is
  ** cut back to 4 MiB after each checkpoint */
  "PRAGMA auto_vacuum=INCREMENTAL;"
  "PRAGMA journal_mode=WAL;"
  "PRAGMA synchronous=NORMAL;"
  "PRAGMA journal_size_limit=4194304;"
  "CREATE TABLE IF NOT EXISTS keys(public_key TEXT PRIMARY KEY,"
  "  secret_key TEXT NOT NULL, created_at INTEGER NOT NULL, dev INTEGER DEFAULT 0);"
  /* file_bytes: a document kept in DATA/jobs/<id>.json (jobdocs.h) */
  "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL, file_bytes INTEGER);"
  "CREATE TABLE IF NOT EXISTS sessions(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS services(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS snapshots(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS images(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);"
  /* finished jobs by the time they finished: what retention removes */
  "CREATE INDEX IF NOT EXISTS jobs_completed ON jobs(json_extract(doc, '$.completed_at'));";

/* A database made before jobs' documents could be files gets the column
** (NULL in every old row: their documents are their rows). */
static int add_file_column(sqlite3 *db) {
  sqlite3_stmt *s = NULL;
  int has = sqlite3_prepare_v2(db, "SELECT file_bytes FROM jobs LIMIT 0", -1, &s, NULL) == SQLITE_OK;
  sqlite3_finalize(s);
  return has ? SQLITE_OK : sqlite3_exec(db, "ALTER TABLE jobs ADD COLUMN file_bytes INTEGER", NULL, NULL, NULL);
}

/* SQLite's memory statistics take a process-wide mutex around every
** allocation it makes (a long list's rows make thousands); nothing here
** reads them. The setting only takes before SQLite's first use, so it is
** made once, before the first open; later it is refused and harmless. */
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;
static void sqlite_configure(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

ux_store *ux_store_open(const char *dir, char *err, size_t errlen) {
  pthread_once(&sqlite_once, sqlite_configure);
  char path[4200];
  if (ux_mkdir_p(dir, 0700) < 0 || chmod(dir, 0700) < 0) {
    snprintf(err, errlen, "cannot create data directory %s: %s", dir, strerror(errno));
    return NULL;
  }
  if (ux_path(path, sizeof path, "%s/unsandboxd.db", dir) < 0) {
    snprintf(err, errlen, "data directory path too long");
    return NULL;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || fchmod(fd, 0600) < 0) {
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  close(fd);
  ux_store *st = ux_xcalloc(1, sizeof *st);
  /* recursive: ux_db_tx holds it across the statements of a transaction */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&st->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  /* nothing is refused until ux_ledger_open settles the limits */
  st->budget = st->key_quota = st->tenant_quota = 1ull << 62;
  pthread_mutex_init(&st->ro_mu, NULL);
  pthread_mutex_init(&st->spool_mu, NULL);
  snprintf(st->dir, sizeof st->dir, "%s", dir);
  char *msg = NULL;
  /* no mutex of SQLite's own: every use of st->db holds st->mu (db.c, the
  ** key statements below; ledger_open.c's functions run inside them) */
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
      sqlite3_busy_timeout(st->db, 5000) != SQLITE_OK ||
      sqlite3_exec(st->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK || add_file_column(st->db) != SQLITE_OK ||
      ux_ledger_schema(st) != 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_free(msg);
    ux_store_close(st);
    return NULL;
  }
  return st;
}

void ux_store_close(ux_store *st) {
  if (!st) return;
  free(st->holds);
  ux_db_cache_clear(st);
  ux_store_spools_close(st);
  sqlite3_close(st->db);
  pthread_mutex_destroy(&st->mu);
  pthread_mutex_destroy(&st->ro_mu);
  pthread_mutex_destroy(&st->spool_mu);
  free(st);
}

/* Runs a statement with text parameters (NULL = SQL NULL) and no rows. */
static int exec_text(ux_store *st, const char *sql, int n, const char *const *args) {
  sqlite3_stmt *s = NULL;
  int rc = -1;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    for (int i = 0; i < n; i++)
      sqlite3_bind_text(s, i + 1, args[i], -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_DONE) rc = sqlite3_changes(st->db);
  }
  if (rc < 0) fprintf(stderr, "unsandboxd: store: %s\n", sqlite3_errmsg(st->db));
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_store_key_add(ux_store *st, const char *pk, const char *sk, int dev) {
  char now[32];
  snprintf(now, sizeof now, "%ld", ux_now());
  const char *args[] = { pk, sk, now, dev ? "1" : "0" };
  return exec_text(st, "INSERT INTO keys(public_key, secret_key, created_at, dev)"
                       " VALUES(?1, ?2, ?3, ?4)", 4, args) == 1 ? 0 : -1;
}

int ux_store_dev_key(ux_store *st, char *pk, size_t pklen, char *sk, size_t sklen) {
  sqlite3_stmt *s = NULL;
  int rc = -1;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT public_key, secret_key FROM keys WHERE dev = 1"
                         " ORDER BY created_at, rowid LIMIT 1", -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    const char *p = (const char *)sqlite3_column_text(s, 0);
    const char *k = (const char *)sqlite3_column_text(s, 1);
    if (p && k && strlen(p) < pklen && strlen(k) < sklen) { strcpy(pk, p); strcpy(sk, k); rc = 0; }
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

typedef struct { char *out; size_t outlen; int found; } secret_ctx;

static int copy_secret(void *arg, ux_db_cursor *row) {
  secret_ctx *c = arg;
  size_t len;
  const char *v = ux_db_text(row, 0, &len);
  if (v && len < c->outlen) {
    memcpy(c->out, v, len + 1);
    c->found = 1;
  }
  return 1;
}

/* Every signed request asks this (twice with a body: the header check and
** the full one), so it goes through the store's prepared statements. */
int ux_store_key_secret(ux_store *st, const char *pk, char *out, size_t outlen) {
  secret_ctx c = { out, outlen, 0 };
  if (ux_db_each(st, "SELECT secret_key FROM keys WHERE public_key = ?1", "s", copy_secret, &c, pk) < 0)
    return -1;
  return c.found ? 0 : -1;
}

int ux_store_recover_jobs(ux_store *st, long now) {
  /* one statement: every unfinished job at once, its document edited in
  ** place (json_set keeps the other fields and their order) */
  return ux_db_exec(st, "UPDATE jobs SET status = 'failed', doc = json_set(doc,"
                    " '$.status', 'failed', '$.completed_at', ?1, '$.error', 'server restarted')"
                    " WHERE status IN ('pending', 'running')", "i", (long long)now);
}
