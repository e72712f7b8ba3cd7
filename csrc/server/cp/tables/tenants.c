/*
** cp_tenants and cp_owner_tenants (see cp/tables/tenants.h).
*/
#include "server/cp/tables/tenants.h"

#include <string.h>

#include "server/store/db.h"

int ux_tenants_create(ux_store *st) {
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_tenants(id TEXT PRIMARY KEY, display_name TEXT NOT NULL,"
    "  status TEXT NOT NULL, max_workspaces INTEGER NOT NULL, max_runtimes INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cp_owner_tenants(tenant_id TEXT NOT NULL, owner_tenant TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL, created_by TEXT, PRIMARY KEY(tenant_id, owner_tenant));", "");
}

int ux_tenants_add(ux_store *st, const char *id, const char *display_name,
                   long long max_workspaces, long long max_runtimes, long long now) {
  return ux_db_exec(st, "INSERT OR IGNORE INTO cp_tenants(id, display_name, status, max_workspaces,"
                    " max_runtimes, created_at) VALUES(?1, ?2, 'active', ?3, ?4, ?5)", "ssiii",
                    id, display_name, max_workspaces, max_runtimes, now);
}

#define VIEW_SQL "SELECT t.id, t.display_name, t.status, t.max_workspaces, t.max_runtimes," \
  " (SELECT count(*) FROM cp_workspaces w WHERE w.tenant = t.id) AS workspaces_in_use" \
  " FROM cp_tenants t"

json_t *ux_tenants_view(ux_store *st, const char *id) {
  return ux_db_row(st, VIEW_SQL " WHERE t.id = ?1", "s", id);
}

json_t *ux_tenants_views(ux_store *st) {
  return ux_db_rows(st, VIEW_SQL " ORDER BY t.id", "");
}

json_t *ux_tenants_usage(ux_store *st, const char *id) {
  return ux_db_row(st, "SELECT id AS name, status, max_workspaces, (SELECT count(*) FROM"
                   " cp_workspaces w WHERE w.tenant = t.id) AS used_workspaces FROM cp_tenants t"
                   " WHERE id = ?1", "s", id);
}

int ux_tenants_set_status(ux_store *st, const char *id, const char *status) {
  return ux_db_exec(st, "UPDATE cp_tenants SET status = ?1 WHERE id = ?2", "ss", status, id);
}

ux_tenant_state ux_tenants_state(ux_store *st, const char *id) {
  json_t *row = ux_db_row(st, "SELECT status FROM cp_tenants WHERE id = ?1", "s", id);
  if (!row) return ux_db_unavailable(st) ? UX_TENANT_BROKEN : UX_TENANT_UNKNOWN;
  const char *status = json_string_value(json_object_get(row, "status"));
  ux_tenant_state s = status && !strcmp(status, "active") ? UX_TENANT_ACTIVE : UX_TENANT_SUSPENDED;
  json_decref(row);
  return s;
}

json_t *ux_owner_tenants_list(ux_store *st, const char *tenant) {
  return ux_db_rows(st, "SELECT owner_tenant, created_at, created_by FROM cp_owner_tenants"
                    " WHERE tenant_id = ?1 ORDER BY owner_tenant", "s", tenant);
}

int ux_owner_tenants_add(ux_store *st, const char *tenant, const char *owner,
                         const char *created_by, long long now) {
  return ux_db_exec(st, "INSERT OR IGNORE INTO cp_owner_tenants(tenant_id, owner_tenant, created_at,"
                    " created_by) VALUES(?1, ?2, ?3, ?4)", "ssis", tenant, owner, now,
                    created_by) < 0 ? -1 : 0;
}

int ux_owner_tenants_remove(ux_store *st, const char *tenant, const char *owner) {
  return ux_db_exec(st, "DELETE FROM cp_owner_tenants WHERE tenant_id = ?1 AND owner_tenant = ?2",
                    "ss", tenant, owner);
}
