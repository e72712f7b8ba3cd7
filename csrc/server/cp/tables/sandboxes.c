/*
** cp_sandboxes (see cp/tables/sandboxes.h).
*/
#include "server/cp/tables/sandboxes.h"

#include "server/store/db.h"

int ux_sandboxes_create(ux_store *st) {
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_sandboxes(id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,"
    "  template TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL, ended_at INTEGER);"
    "CREATE INDEX IF NOT EXISTS cp_sandboxes_ws ON cp_sandboxes(workspace_id);", "");
}

typedef struct {
  const char *id, *ws, *template_id, *tenant;
  long long now, expires_at;
  int added, ws_live;
} add_ctx;

/* The insert decides; when it refused, the same transaction says why. */
static int add_tx(ux_store *st, void *ctx) {
  add_ctx *x = ctx;
  x->added = ux_db_exec(st,
    "INSERT INTO cp_sandboxes(id, workspace_id, template, status, created_at, expires_at)"
    " SELECT ?1, ?2, ?3, 'live', ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM cp_sandboxes WHERE"
    " workspace_id = ?2 AND status = 'live') AND (SELECT count(*) FROM cp_sandboxes s JOIN"
    " cp_workspaces w ON w.id = s.workspace_id WHERE w.tenant = ?6 AND s.status = 'live') <"
    " coalesce((SELECT max_runtimes FROM cp_tenants WHERE id = ?6), 1 << 62)",
    "sssiis", x->id, x->ws, x->template_id, x->now, x->expires_at, x->tenant);
  if (x->added != 0) return x->added < 0 ? -1 : 0;
  json_t *live = ux_db_row(st, "SELECT id FROM cp_sandboxes WHERE workspace_id = ?1 AND"
                           " status = 'live'", "s", x->ws);
  x->ws_live = live != NULL;
  json_decref(live);
  return !live && ux_db_unavailable(st) ? -1 : 0;
}

int ux_sandboxes_add_live(ux_store *st, const char *id, const char *ws, const char *template_id,
                          const char *tenant, long long now, long long expires_at, int *ws_live) {
  add_ctx x = { id, ws, template_id, tenant, now, expires_at, 0, 0 };
  if (ux_db_tx(st, add_tx, &x) != 0) return -1;
  *ws_live = x.ws_live;
  return x.added;
}

int ux_sandboxes_end(ux_store *st, const char *id, const char *status, long long now) {
  return ux_db_exec(st, "UPDATE cp_sandboxes SET status = ?1, ended_at = ?2 WHERE id = ?3"
                    " AND status = 'live'", "sis", status, now, id);
}

int ux_sandboxes_end_all(ux_store *st, long long now) {
  return ux_db_exec(st, "UPDATE cp_sandboxes SET status = 'released', ended_at = ?1"
                    " WHERE status = 'live'", "i", now);
}

int ux_sandboxes_remove(ux_store *st, const char *id) {
  return ux_db_exec(st, "DELETE FROM cp_sandboxes WHERE id = ?1", "s", id);
}

int ux_sandboxes_forget_workspace(ux_store *st, const char *ws) {
  return ux_db_exec(st, "DELETE FROM cp_sandboxes WHERE workspace_id = ?1", "s", ws);
}

json_t *ux_sandboxes_get(ux_store *st, const char *id) {
  return ux_db_row(st, "SELECT * FROM cp_sandboxes WHERE id = ?1", "s", id);
}

json_t *ux_sandboxes_live(ux_store *st) {
  return ux_db_rows(st, "SELECT s.id, w.id AS wid, w.tenant, w.subject FROM cp_sandboxes s JOIN"
                    " cp_workspaces w ON w.id = s.workspace_id WHERE s.status = 'live'"
                    " ORDER BY s.created_at, s.rowid", "");
}

long long ux_sandboxes_live_count(ux_store *st) {
  json_t *n = ux_db_row(st, "SELECT count(*) AS n FROM cp_sandboxes WHERE status = 'live'", "");
  long long v = (long long)json_integer_value(json_object_get(n, "n"));
  json_decref(n);
  return v;
}
