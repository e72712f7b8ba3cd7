/*
** Generic statements (db.h). Each call prepares, binds from the type
** string, steps and finalises under the store's lock; the lock is
** recursive, so ux_db_tx can hold it across the statements of its
** transaction while they take it again. Rows come back as JSON objects:
** the Control Plane's handlers build JSON replies anyway, and a module
** with tables of its own then needs no sqlite3 types at all.
*/
#include "server/store/db.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/store_int.h"

/* Records what kind of failure this was and logs it; returns -1. */
static int failed(ux_store *st, int rc, const char *sql) {
  int code = rc & 0xff;
  st->broken = code != SQLITE_CONSTRAINT;
  fprintf(stderr, "unsandboxd: store: %s (%.60s)\n", sqlite3_errmsg(st->db), sql);
  return -1;
}

static int bind_args(sqlite3_stmt *s, const char *types, va_list ap) {
  int rc = SQLITE_OK;
  for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
    switch (types[i]) {
    case 's': {
      const char *v = va_arg(ap, const char *);
      rc = v ? sqlite3_bind_text(s, i + 1, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i + 1);
      break;
    }
    case 'i': rc = sqlite3_bind_int64(s, i + 1, (sqlite3_int64)va_arg(ap, long long)); break;
    case 'b': {
      const void *p = va_arg(ap, const void *);
      size_t n = va_arg(ap, size_t);
      rc = sqlite3_bind_blob64(s, i + 1, p, (sqlite3_uint64)n, SQLITE_TRANSIENT);
      break;
    }
    default: rc = SQLITE_MISUSE;
    }
  }
  return rc;
}

/* Prepares sql and binds the arguments; the caller holds the lock. */
static sqlite3_stmt *prepare(ux_store *st, const char *sql, const char *types, va_list ap) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) rc = bind_args(s, types, ap);
  if (rc != SQLITE_OK) {
    failed(st, rc, sql);
    sqlite3_finalize(s);
    return NULL;
  }
  return s;
}

int ux_db_exec(ux_store *st, const char *sql, const char *types, ...) {
  int n = -1, rc;
  pthread_mutex_lock(&st->mu);
  if (!*types) {
    char *msg = NULL;
    rc = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
    sqlite3_free(msg);
    n = rc == SQLITE_OK ? sqlite3_changes(st->db) : failed(st, rc, sql);
  } else {
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *s = prepare(st, sql, types, ap);
    va_end(ap);
    if (s) {
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {}
      n = rc == SQLITE_DONE ? sqlite3_changes(st->db) : failed(st, rc, sql);
      sqlite3_finalize(s);
    }
  }
  pthread_mutex_unlock(&st->mu);
  return n;
}

static json_t *column(sqlite3_stmt *s, int i) {
  static const char hex[] = "0123456789abcdef";
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_INTEGER: return json_integer((json_int_t)sqlite3_column_int64(s, i));
  case SQLITE_FLOAT: return json_real(sqlite3_column_double(s, i));
  case SQLITE_TEXT: {
    json_t *v = json_stringn((const char *)sqlite3_column_text(s, i),
                             (size_t)sqlite3_column_bytes(s, i));
    return v ? v : json_null();   /* not UTF-8: never stored by our code */
  }
  case SQLITE_BLOB: {
    const unsigned char *p = sqlite3_column_blob(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    char *t = malloc(2 * n + 1);
    if (!t) return NULL;
    for (size_t k = 0; k < n; k++) { t[2 * k] = hex[p[k] >> 4]; t[2 * k + 1] = hex[p[k] & 15]; }
    t[2 * n] = '\0';
    json_t *v = json_string(t);
    free(t);
    return v;
  }
  default: return json_null();
  }
}

/* Steps s to its end (or to its first row when one is set), collecting
** rows; NULL on error or out of memory. */
static json_t *collect(ux_store *st, sqlite3_stmt *s, const char *sql, int one) {
  json_t *rows = json_array();
  int rc;
  while (rows && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    json_t *row = json_object();
    int n = sqlite3_column_count(s);
    for (int i = 0; row && i < n; i++) {
      json_t *v = column(s, i);
      if (!v || json_object_set_new(row, sqlite3_column_name(s, i), v) < 0) {
        json_decref(row);
        row = NULL;
      }
    }
    if (!row || json_array_append_new(rows, row) < 0) { json_decref(rows); return NULL; }
    if (one) return rows;
  }
  if (rows && rc != SQLITE_DONE) {
    failed(st, rc, sql);
    json_decref(rows);
    return NULL;
  }
  return rows;
}

static json_t *query(ux_store *st, const char *sql, const char *types, va_list ap, int one) {
  json_t *rows = NULL;
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = prepare(st, sql, types, ap);
  if (s) {
    rows = collect(st, s, sql, one);
    sqlite3_finalize(s);
  }
  pthread_mutex_unlock(&st->mu);
  return rows;
}

json_t *ux_db_rows(ux_store *st, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  json_t *rows = query(st, sql, types, ap, 0);
  va_end(ap);
  return rows;
}

json_t *ux_db_row(ux_store *st, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  json_t *rows = query(st, sql, types, ap, 1);
  va_end(ap);
  json_t *row = json_incref(json_array_get(rows, 0));
  json_decref(rows);
  return row;
}

int ux_db_tx(ux_store *st, int (*fn)(ux_store *st, void *ctx), void *ctx) {
  pthread_mutex_lock(&st->mu);
  int rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    failed(st, rc, "BEGIN IMMEDIATE");
    pthread_mutex_unlock(&st->mu);
    return -1;
  }
  int ret = fn(st, ctx);
  if (ret == 0 && (rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK) {
    ret = failed(st, rc, "COMMIT");
  }
  if (ret != 0 && sqlite3_get_autocommit(st->db) == 0)
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  pthread_mutex_unlock(&st->mu);
  return ret;
}

int ux_db_unavailable(ux_store *st) {
  pthread_mutex_lock(&st->mu);
  int b = st->broken;
  pthread_mutex_unlock(&st->mu);
  return b;
}
