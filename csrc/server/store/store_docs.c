/*
** The execution API's documents (jobs, sessions, services, snapshots).
** No function here reads a row and then writes what it read: a creation
** is an INSERT (never "OR REPLACE", which would bring a deleted row back),
** a change is one conditional UPDATE or DELETE whose row count says
** whether it applied, and where an answer needs the row afterwards the
** statement and the read share one transaction (ux_db_tx). SQLite's JSON
** functions edit a document in place, so a field changes without the rest
** of the document being read into C and written back.
*/
#include "server/store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/db.h"
#include "server/store/store_int.h"

/* Table names come from the code, never from a request; still, only
** these may be spliced into SQL. */
int ux_store_known_table(const char *t) {
  return t && (!strcmp(t, "jobs") || !strcmp(t, "sessions") || !strcmp(t, "services") ||
               !strcmp(t, "snapshots") || !strcmp(t, "images"));
}
#define known_table ux_store_known_table

/* "$.<field>" for a field name from the code (letters and '_'). */
static int field_path(const char *field, char *out, size_t len) {
  if (!field || !*field || strspn(field, "abcdefghijklmnopqrstuvwxyz_") != strlen(field)) return -1;
  int n = snprintf(out, len, "$.%s", field);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

static char *dump(const json_t *v) {
  return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

int ux_store_insert(ux_store *st, const char *table, const char *id,
                    const char *owner, const char *status, const json_t *doc) {
  char sql[160];
  if (!known_table(table)) return -1;
  snprintf(sql, sizeof sql, "INSERT INTO %s(id, owner, status, created_at, doc)"
           " VALUES(?1, ?2, ?3, ?4, ?5)", table);
  char *text = dump(doc);
  if (!text) return -1;
  int rc = ux_db_exec(st, sql, "sssis", id, owner, status,
                      (long long)json_integer_value(json_object_get(doc, "created_at")), text);
  free(text);
  return rc == 1 ? 0 : -1;
}

int ux_store_insert_child(ux_store *st, const char *table, const char *id, const char *owner,
                          const char *status, const json_t *doc,
                          const char *parent_table, const char *parent_id) {
  char sql[320];
  if (!known_table(table) || !known_table(parent_table)) return -1;
  snprintf(sql, sizeof sql, "INSERT INTO %s(id, owner, status, created_at, doc)"
           " SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS"
           " (SELECT 1 FROM %s WHERE id = ?6 AND owner = ?2)", table, parent_table);
  char *text = dump(doc);
  if (!text) return -1;
  int rc = ux_db_exec(st, sql, "sssiss", id, owner, status,
                      (long long)json_integer_value(json_object_get(doc, "created_at")),
                      text, parent_id);
  free(text);
  return rc;
}

int ux_store_update(ux_store *st, const char *table, const char *id, const char *owner,
                    const char *status, const json_t *doc, const char *const *from) {
  char sql[300];
  if (!known_table(table)) return -1;
  /* the allowed current statuses travel as one JSON array parameter */
  json_t *allowed = NULL;
  if (from) {
    allowed = json_array();
    for (size_t i = 0; from[i]; i++) json_array_append_new(allowed, json_string(from[i]));
  }
  char *list = allowed ? dump(allowed) : NULL, *text = dump(doc);
  json_decref(allowed);
  int rc = -1;
  snprintf(sql, sizeof sql, "UPDATE %s SET status = ?3, doc = ?4 WHERE id = ?1"
           " AND (?2 IS NULL OR owner = ?2)"
           " AND (?5 IS NULL OR status IN (SELECT value FROM json_each(?5)))", table);
  if (text && (list || !from)) rc = ux_db_exec(st, sql, "sssss", id, owner, status, text, list);
  free(list);
  free(text);
  return rc;
}

typedef struct {
  const char *table, *id, *owner, *path, *value;
  json_t *doc;            /* the document after the change */
  int changed;
} field_change;

static int set_field_tx(ux_store *st, void *ctx) {
  field_change *c = ctx;
  char sql[200];
  snprintf(sql, sizeof sql, "UPDATE %s SET doc = json_set(doc, ?3, json(?4))"
           " WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)", c->table);
  c->changed = ux_db_exec(st, sql, "ssss", c->id, c->owner, c->path, c->value);
  if (c->changed != 1) return c->changed < 0 ? -1 : 0;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE id = ?1", c->table);
  json_t *row = ux_db_row(st, sql, "s", c->id);
  const char *text = json_string_value(json_object_get(row, "doc"));
  c->doc = text ? json_loads(text, 0, NULL) : NULL;
  json_decref(row);
  return c->doc ? 0 : -1;
}

int ux_store_set_field(ux_store *st, const char *table, const char *id, const char *owner,
                       const char *field, const json_t *value, json_t **out) {
  char path[64];
  *out = NULL;
  if (!known_table(table) || field_path(field, path, sizeof path) != 0) return -1;
  char *text = dump(value);
  if (!text) return -1;
  field_change c = { table, id, owner, path, text, NULL, 0 };
  int rc = ux_db_tx(st, set_field_tx, &c);
  free(text);
  if (rc != 0) { json_decref(c.doc); return -1; }
  *out = c.doc;
  return c.changed;
}

typedef struct {
  const char *table, *id, *owner, *path;
  int result;
} guarded_delete;

static int delete_tx(ux_store *st, void *ctx) {
  guarded_delete *d = ctx;
  char sql[200];
  /* a JSON true reads as the integer 1; false, null or a missing field do not */
  snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)"
           " AND json_extract(doc, ?3) IS NOT 1", d->table);
  int n = ux_db_exec(st, sql, "sss", d->id, d->owner, d->path);
  if (n < 0) return -1;
  if (n == 1) { d->result = UX_STORE_DELETED; return 0; }
  snprintf(sql, sizeof sql, "SELECT 1 AS found FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)",
           d->table);
  json_t *rows = ux_db_rows(st, sql, "ss", d->id, d->owner);
  if (!rows) return -1;
  d->result = json_array_size(rows) ? UX_STORE_REFUSED : UX_STORE_ABSENT;
  json_decref(rows);
  return 0;
}

int ux_store_delete_unless(ux_store *st, const char *table, const char *id,
                           const char *owner, const char *field) {
  char path[64];
  if (!known_table(table) || field_path(field, path, sizeof path) != 0) return -1;
  guarded_delete d = { table, id, owner, path, -1 };
  return ux_db_tx(st, delete_tx, &d) == 0 ? d.result : -1;
}

/* ---------------------------------------------------------------------
** reads and plain deletes
** ------------------------------------------------------------------- */

json_t *ux_store_get(ux_store *st, const char *table, const char *id, const char *owner) {
  char sql[160];
  if (!known_table(table)) return NULL;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)", table);
  json_t *row = ux_db_row(st, sql, "ss", id, owner);
  const char *text = json_string_value(json_object_get(row, "doc"));
  json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
  json_decref(row);
  return doc;
}

json_t *ux_store_list(ux_store *st, const char *table, const char *owner) {
  char sql[200];
  json_t *arr = json_array(), *row;
  size_t i;
  if (!known_table(table)) return arr;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE (?1 IS NULL OR owner = ?1)"
           " ORDER BY created_at, rowid", table);
  json_t *rows = ux_db_rows(st, sql, "s", owner);
  json_array_foreach(rows, i, row) {
    const char *text = json_string_value(json_object_get(row, "doc"));
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    if (doc) json_array_append_new(arr, doc);
  }
  json_decref(rows);
  return arr;
}

typedef struct { int (*fn)(void *ctx, const char *doc, size_t len); void *ctx; } each_ctx;

static int each_doc(void *arg, ux_db_cursor *row) {
  each_ctx *e = arg;
  size_t len;
  const char *doc = ux_db_text(row, 0, &len);
  return doc ? e->fn(e->ctx, doc, len) : 0;
}

int ux_store_each(ux_store *st, const char *table, const char *owner,
                  int (*fn)(void *ctx, const char *doc, size_t len), void *ctx) {
  char sql[200];
  each_ctx e = { fn, ctx };
  if (!known_table(table)) return -1;
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE (?1 IS NULL OR owner = ?1)"
           " ORDER BY created_at, rowid", table);
  return ux_db_each(st, sql, "s", each_doc, &e, owner);
}

int ux_store_delete(ux_store *st, const char *table, const char *id, const char *owner) {
  char sql[160];
  if (!known_table(table)) return -1;
  snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)", table);
  return ux_db_exec(st, sql, "ss", id, owner);
}
