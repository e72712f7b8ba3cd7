/*
** SQLite store. The data directory is created 0700 and the database file
** 0600 before SQLite opens it: SQLite gives its -wal and -shm files the
** mode of the database, so the secrets never become world-readable.
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

#include "server/store/store_int.h"

static const char SCHEMA[] =
  "PRAGMA journal_mode=WAL;"
  "PRAGMA synchronous=NORMAL;"
  "CREATE TABLE IF NOT EXISTS keys(public_key TEXT PRIMARY KEY,"
  "  secret_key TEXT NOT NULL, created_at INTEGER NOT NULL, dev INTEGER DEFAULT 0);"
  "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS sessions(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS services(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS snapshots(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
  "  status TEXT, created_at INTEGER, doc TEXT NOT NULL);"
  "CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status);";

/* Table names come from the code, never from a request; still, only
** these four may be spliced into SQL. */
static int known_table(const char *t) {
  return !strcmp(t, "jobs") || !strcmp(t, "sessions") ||
         !strcmp(t, "services") || !strcmp(t, "snapshots");
}

ux_store *ux_store_open(const char *dir, char *err, size_t errlen) {
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
  ux_store *st = calloc(1, sizeof *st);
  if (!st) { snprintf(err, errlen, "out of memory"); return NULL; }
  /* recursive: ux_db_tx holds it across the statements of a transaction */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&st->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  char *msg = NULL;
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
      sqlite3_busy_timeout(st->db, 5000) != SQLITE_OK ||
      sqlite3_exec(st->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
    snprintf(err, errlen, "cannot open %s: %s", path, msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_free(msg);
    ux_store_close(st);
    return NULL;
  }
  return st;
}

void ux_store_close(ux_store *st) {
  if (!st) return;
  sqlite3_close(st->db);
  pthread_mutex_destroy(&st->mu);
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

int ux_store_key_secret(ux_store *st, const char *pk, char *out, size_t outlen) {
  sqlite3_stmt *s = NULL;
  int rc = -1;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT secret_key FROM keys WHERE public_key = ?1",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, pk, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) {
      const char *v = (const char *)sqlite3_column_text(s, 0);
      if (v && strlen(v) < outlen) { strcpy(out, v); rc = 0; }
    }
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_store_put(ux_store *st, const char *table, const char *id,
                 const char *owner, const char *status, const json_t *doc) {
  char sql[160], created[32];
  if (!known_table(table)) return -1;
  json_t *c = json_object_get(doc, "created_at");
  snprintf(created, sizeof created, "%lld", (long long)json_integer_value(c));
  snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO %s(id, owner, status, created_at, doc)"
           " VALUES(?1, ?2, ?3, ?4, ?5)", table);
  char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!text) return -1;
  const char *args[] = { id, owner, status, created, text };
  int rc = exec_text(st, sql, 5, args);
  free(text);
  return rc == 1 ? 0 : -1;
}

static json_t *parse_doc(sqlite3_stmt *s, int col) {
  const char *text = (const char *)sqlite3_column_text(s, col);
  return text ? json_loads(text, 0, NULL) : NULL;
}

json_t *ux_store_get(ux_store *st, const char *table, const char *id, const char *owner) {
  char sql[160];
  sqlite3_stmt *s = NULL;
  json_t *doc = NULL;
  if (!known_table(table)) return NULL;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)", table);
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, owner, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) doc = parse_doc(s, 0);
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return doc;
}

json_t *ux_store_list(ux_store *st, const char *table, const char *owner) {
  char sql[200];
  sqlite3_stmt *s = NULL;
  json_t *arr = json_array();
  if (!known_table(table)) return arr;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE (?1 IS NULL OR owner = ?1)"
           " ORDER BY created_at, rowid", table);
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, owner, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *doc = parse_doc(s, 0);
      if (doc) json_array_append_new(arr, doc);
    }
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return arr;
}

int ux_store_delete(ux_store *st, const char *table, const char *id, const char *owner) {
  char sql[160];
  if (!known_table(table)) return -1;
  snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)", table);
  const char *args[] = { id, owner };
  return exec_text(st, sql, 2, args);
}

int ux_store_recover_jobs(ux_store *st, long now) {
  sqlite3_stmt *s = NULL;
  json_t *docs = json_array();
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT doc, owner FROM jobs WHERE status IN"
                         " ('pending', 'running')", -1, &s, NULL) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *doc = parse_doc(s, 0);
      const char *owner = (const char *)sqlite3_column_text(s, 1);
      if (doc && owner) {
        json_object_set_new(doc, "_owner", json_string(owner));
        json_array_append_new(docs, doc);
      } else json_decref(doc);
    }
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);

  size_t i;
  json_t *doc;
  json_array_foreach(docs, i, doc) {
    char *owner = strdup(json_string_value(json_object_get(doc, "_owner")));
    json_object_del(doc, "_owner");
    json_object_set_new(doc, "status", json_string("failed"));
    json_object_set_new(doc, "completed_at", json_integer(now));
    json_object_set_new(doc, "error", json_string("server restarted"));
    ux_store_put(st, "jobs", json_string_value(json_object_get(doc, "job_id")),
                 owner, "failed", doc);
    free(owner);
  }
  int n = (int)json_array_size(docs);
  json_decref(docs);
  return n;
}
