/*
** Generic statements (see db.h). Binding walks the type string with a
** va_list; a result row becomes a JSON object, so callers never touch
** sqlite3_column_* themselves.
*/
#include "server/store/db.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/store/store_int.h"
#include "server/mem.h"

static __thread int last_broken;

static int bind_all(sqlite3_stmt *s, const char *types, va_list ap) {
  int i = 1;
  for (const char *t = types; *t; t++, i++) {
    int rc;
    if (*t == 's') {
      const char *v = va_arg(ap, const char *);
      rc = v ? sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, i);
    } else if (*t == 'i') {
      rc = sqlite3_bind_int64(s, i, (sqlite3_int64)va_arg(ap, long long));
    } else if (*t == 'b') {
      const void *v = va_arg(ap, const void *);
      size_t n = va_arg(ap, size_t);
      rc = sqlite3_bind_blob(s, i, v, (int)n, SQLITE_TRANSIENT);
    } else return -1;
    if (rc != SQLITE_OK) return -1;
  }
  return 0;
}

static json_t *column(sqlite3_stmt *s, int c) {
  static const char hex[] = "0123456789abcdef";
  switch (sqlite3_column_type(s, c)) {
  case SQLITE_INTEGER: return json_integer((json_int_t)sqlite3_column_int64(s, c));
  case SQLITE_FLOAT: return json_real(sqlite3_column_double(s, c));
  case SQLITE_TEXT:
    return json_stringn((const char *)sqlite3_column_text(s, c), (size_t)sqlite3_column_bytes(s, c));
  case SQLITE_BLOB: {
    const unsigned char *b = sqlite3_column_blob(s, c);
    int n = sqlite3_column_bytes(s, c);
    char *h = ux_xmalloc(2 * (size_t)n + 1);
    for (int k = 0; k < n; k++) { h[2 * k] = hex[b[k] >> 4]; h[2 * k + 1] = hex[b[k] & 15]; }
    h[2 * n] = '\0';
    json_t *j = json_string(h);
    free(h);
    return j;
  }
  default: return json_null();
  }
}

static void note_failure(ux_store *st, int rc) {
  int base = rc & 0xff;
  last_broken = base != SQLITE_CONSTRAINT;
  fprintf(stderr, "unsandboxd: store: %s\n", sqlite3_errmsg(st->db));
}

/* The prepared statement of sql, from the cache or prepared and kept
** there (the least recently used one making room). Locked. */
static int prepared(ux_store *st, const char *sql, sqlite3_stmt **out) {
  ux_stmt_cache *slot = &st->cache[0];
  for (int i = 0; i < UX_STORE_CACHE; i++) {
    ux_stmt_cache *c = &st->cache[i];
    if (c->sql && !strcmp(c->sql, sql)) {
      c->used = ++st->ticks;
      *out = c->stmt;
      return SQLITE_OK;
    }
    if (c->used < slot->used) slot = c;
  }
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
  if (rc != SQLITE_OK) return rc;
  if (slot->stmt) sqlite3_finalize(slot->stmt);
  free(slot->sql);
  *slot = (ux_stmt_cache){ ux_xstrdup(sql), s, ++st->ticks };
  *out = s;
  return SQLITE_OK;
}

void ux_db_cache_clear(ux_store *st) {
  for (int i = 0; i < UX_STORE_CACHE; i++) {
    if (st->cache[i].stmt) sqlite3_finalize(st->cache[i].stmt);
    free(st->cache[i].sql);
    st->cache[i] = (ux_stmt_cache){ NULL, NULL, 0 };
  }
}

/* Prepares (or reuses), binds and steps; rows go to out (NULL: counted only). */
static int run(ux_store *st, const char *sql, const char *types, va_list ap, json_t *out) {
  sqlite3_stmt *s = NULL;
  int rc = -1, step;
  last_broken = 0;
  pthread_mutex_lock(&st->mu);
  if (!*types && !out && strchr(sql, ';') && strchr(sql, ';')[1]) {
    char *msg = NULL;                              /* several statements (schemas) */
    step = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
    if (step != SQLITE_OK) note_failure(st, step);
    sqlite3_free(msg);
    pthread_mutex_unlock(&st->mu);
    return step == SQLITE_OK ? 0 : -1;
  }
  if ((step = prepared(st, sql, &s)) != SQLITE_OK || bind_all(s, types, ap) != 0) {
    note_failure(st, step == SQLITE_OK ? SQLITE_MISUSE : step);
    goto done;
  }
  while ((step = sqlite3_step(s)) == SQLITE_ROW) {
    if (!out) continue;
    json_t *row = json_object();
    for (int c = 0; c < sqlite3_column_count(s); c++)
      json_object_set_new(row, sqlite3_column_name(s, c), column(s, c));
    json_array_append_new(out, row);
  }
  if (step == SQLITE_DONE) rc = out ? 0 : sqlite3_changes(st->db);
  else note_failure(st, step);
done:
  if (s) { sqlite3_reset(s); sqlite3_clear_bindings(s); }   /* kept for the next run */
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_db_exec(ux_store *st, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  int rc = run(st, sql, types, ap, NULL);
  va_end(ap);
  return rc;
}

/* A cursor is the statement itself, seen through the accessors only. */
long long ux_db_int(ux_db_cursor *row, int col) {
  return (long long)sqlite3_column_int64((sqlite3_stmt *)row, col);
}

const char *ux_db_text(ux_db_cursor *row, int col, size_t *len) {
  sqlite3_stmt *s = (sqlite3_stmt *)row;
  const char *t = (const char *)sqlite3_column_text(s, col);
  if (len) *len = t ? (size_t)sqlite3_column_bytes(s, col) : 0;
  return t;
}

int ux_db_each(ux_store *st, const char *sql, const char *types,
               int (*fn)(void *ctx, ux_db_cursor *row), void *ctx, ...) {
  sqlite3_stmt *s = NULL;
  int n = -1, step;
  va_list ap;
  va_start(ap, ctx);
  last_broken = 0;
  pthread_mutex_lock(&st->mu);
  if ((step = prepared(st, sql, &s)) != SQLITE_OK || bind_all(s, types, ap) != 0) {
    note_failure(st, step == SQLITE_OK ? SQLITE_MISUSE : step);
  } else {
    n = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      n++;
      if (fn(ctx, (ux_db_cursor *)s) != 0) { step = SQLITE_DONE; break; }
    }
    if (step != SQLITE_DONE) { note_failure(st, step); n = -1; }
  }
  if (s) { sqlite3_reset(s); sqlite3_clear_bindings(s); }
  pthread_mutex_unlock(&st->mu);
  va_end(ap);
  return n;
}

json_t *ux_db_rows(ux_store *st, const char *sql, const char *types, ...) {
  json_t *rows = json_array();
  va_list ap;
  va_start(ap, types);
  int rc = rows ? run(st, sql, types, ap, rows) : -1;
  va_end(ap);
  if (rc != 0) { json_decref(rows); return NULL; }
  return rows;
}

json_t *ux_db_row(ux_store *st, const char *sql, const char *types, ...) {
  json_t *rows = json_array();
  va_list ap;
  va_start(ap, types);
  int rc = rows ? run(st, sql, types, ap, rows) : -1;
  va_end(ap);
  json_t *row = rc == 0 ? json_incref(json_array_get(rows, 0)) : NULL;
  json_decref(rows);
  return row;
}

int ux_db_tx(ux_store *st, int (*fn)(ux_store *st, void *ctx), void *ctx) {
  pthread_mutex_lock(&st->mu);
  int rc = -1;
  if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
    rc = fn(st, ctx);
    if (sqlite3_exec(st->db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK && rc == 0) {
      note_failure(st, sqlite3_errcode(st->db));
      sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
      rc = -1;
    }
  } else {
    note_failure(st, sqlite3_errcode(st->db));
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_db_ping(ux_store *st) {
  json_t *one = ux_db_row(st, "SELECT 1 AS one", "");
  int rc = one ? 0 : -1;
  json_decref(one);
  return rc;
}

int ux_db_unavailable(ux_store *st) {
  (void)st;
  return last_broken;
}
