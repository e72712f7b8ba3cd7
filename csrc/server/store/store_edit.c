/*
** Edits that need the document in C (a list with items added or
** removed, an access list, a change of owner): the read and the write
** share one transaction (ux_db_tx holds the store's lock and BEGIN
** IMMEDIATE), so an edit racing a DELETE either comes first or finds no
** row, and two edits never lose each other's change.
*/
#include "server/store/store.h"

#include <stdio.h>
#include <stdlib.h>

#include "server/store/db.h"
#include "server/store/store_int.h"

typedef struct {
  const char *table, *id, *owner;
  int (*fn)(json_t *doc, void *ctx);
  void *ctx;
  int result;
  json_t *doc;
} edit;

static int edit_tx(ux_store *st, void *ctx) {
  edit *e = ctx;
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT doc FROM %s WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)",
           e->table);
  json_t *row = ux_db_row(st, sql, "ss", e->id, e->owner);
  const char *text = json_string_value(json_object_get(row, "doc"));
  e->doc = text ? json_loads(text, 0, NULL) : NULL;
  json_decref(row);
  if (!text) { e->result = 0; return 0; }
  if (!e->doc) return -1;
  if (e->fn(e->doc, e->ctx) != 0) { e->result = 2; return 0; }
  char *out = json_dumps(e->doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!out) return -1;
  snprintf(sql, sizeof sql, "UPDATE %s SET doc = ?2 WHERE id = ?1", e->table);
  int n = ux_db_exec(st, sql, "ss", e->id, out);
  free(out);
  if (n != 1) return -1;
  e->result = 1;
  return 0;
}

int ux_store_modify(ux_store *st, const char *table, const char *id, const char *owner,
                    int (*fn)(json_t *doc, void *ctx), void *ctx, json_t **out) {
  if (out) *out = NULL;
  if (!ux_store_known_table(table) || !fn) return -1;
  edit e = { table, id, owner, fn, ctx, -1, NULL };
  if (ux_db_tx(st, edit_tx, &e) != 0) {
    json_decref(e.doc);
    return -1;
  }
  if (out && e.result == 1) *out = e.doc;
  else json_decref(e.doc);
  return e.result;
}

int ux_store_set_owner(ux_store *st, const char *table, const char *id, const char *owner,
                       const char *new_owner) {
  char sql[200];
  if (!ux_store_known_table(table) || !owner || !new_owner) return -1;
  snprintf(sql, sizeof sql, "UPDATE %s SET owner = ?3,"
           " doc = json_set(doc, '$.owner_api_key', ?3) WHERE id = ?1 AND owner = ?2", table);
  return ux_db_exec(st, sql, "sss", id, owner, new_owner);
}
