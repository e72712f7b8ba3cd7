/*
** cp_workspaces (see cp/tables/workspaces.h).
*/
#include "server/cp/tables/workspaces.h"

#include <stdio.h>

#include "server/cp/tables/sandboxes.h"
#include "server/store/db.h"

int ux_workspaces_create(ux_store *st) {
  /* a tenant's list reads its own rows only, in order; the operator's
  ** (every tenant's) reads the created_at index in order: no sort */
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_workspaces(id TEXT PRIMARY KEY, tenant TEXT NOT NULL,"
    "  subject TEXT NOT NULL, principal_kind TEXT NOT NULL, principal_id TEXT NOT NULL,"
    "  session_id TEXT NOT NULL, owner TEXT, created_at INTEGER NOT NULL,"
    "  last_used_at INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS cp_workspaces_tenant ON cp_workspaces(tenant, created_at);"
    "CREATE INDEX IF NOT EXISTS cp_workspaces_created ON cp_workspaces(created_at);", "");
}

int ux_workspaces_add(ux_store *st, const ux_workspace_row *w, long long now) {
  return ux_db_exec(st,
    "INSERT INTO cp_workspaces(id, tenant, subject, principal_kind, principal_id,"
    " session_id, owner, created_at, last_used_at)"
    " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8 WHERE"
    " (SELECT count(*) FROM cp_workspaces WHERE tenant = ?2) <"
    " coalesce((SELECT max_workspaces FROM cp_tenants WHERE id = ?2), 1 << 62)",
    "sssssssi", w->id, w->tenant, w->subject, w->principal_kind, w->principal_id, w->session_id,
    w->owner, now);
}

int ux_workspaces_touch(ux_store *st, const char *id, long long now, const char *owner) {
  return ux_db_exec(st, "UPDATE cp_workspaces SET last_used_at = ?1, owner = coalesce(?2, owner)"
                    " WHERE id = ?3", "iss", now, owner, id);
}

json_t *ux_workspaces_get(ux_store *st, const char *id) {
  return ux_db_row(st, "SELECT * FROM cp_workspaces WHERE id = ?1", "s", id);
}

typedef struct {
  int (*fn)(void *ctx, const char *id, const char *tenant, long long created_at, long long last_used_at);
  void *ctx;
} each_ctx;

static int each_row(void *arg, ux_db_cursor *row) {
  each_ctx *e = arg;
  return e->fn(e->ctx, ux_db_text(row, 0, NULL), ux_db_text(row, 1, NULL), ux_db_int(row, 2),
               ux_db_int(row, 3));
}

int ux_workspaces_each(ux_store *st, const char *tenant, const char *subject, const char *id,
                       int (*fn)(void *ctx, const char *id, const char *tenant,
                                 long long created_at, long long last_used_at), void *ctx) {
  /* a condition only for the filters given (the others bind NULL), so
  ** that a tenant's list is read by its index, in order, without a sort */
  char sql[300];
  each_ctx e = { fn, ctx };
  snprintf(sql, sizeof sql, "SELECT id, tenant, created_at, last_used_at FROM cp_workspaces"
           " WHERE %s AND %s AND %s ORDER BY created_at, rowid",
           tenant ? "tenant = ?1" : "?1 IS NULL", subject ? "subject = ?2" : "?2 IS NULL",
           id ? "id = ?3" : "?3 IS NULL");
  return ux_db_each(st, sql, "sss", each_row, &e, tenant, subject, id);
}

long long ux_workspaces_count(ux_store *st) {
  json_t *n = ux_db_row(st, "SELECT count(*) AS n FROM cp_workspaces", "");
  long long v = (long long)json_integer_value(json_object_get(n, "n"));
  json_decref(n);
  return v;
}

int ux_workspaces_tenant(ux_store *st, const char *id, char *out, size_t outlen) {
  json_t *row = ux_db_row(st, "SELECT tenant FROM cp_workspaces WHERE id = ?1", "s", id);
  const char *t = json_string_value(json_object_get(row, "tenant"));
  if (t) snprintf(out, outlen, "%s", t);
  json_decref(row);
  return t != NULL;
}

typedef struct {
  const char *id;
  int removed;
} remove_ctx;

static int remove_tx(ux_store *st, void *ctx) {
  remove_ctx *x = ctx;
  x->removed = ux_db_exec(st, "DELETE FROM cp_workspaces WHERE id = ?1", "s", x->id);
  if (x->removed < 0 || ux_sandboxes_forget_workspace(st, x->id) < 0) return -1;
  return 0;
}

int ux_workspaces_remove(ux_store *st, const char *id) {
  remove_ctx x = { id, 0 };
  return ux_db_tx(st, remove_tx, &x) == 0 ? x.removed : -1;
}
