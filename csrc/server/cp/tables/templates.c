/*
** cp_templates (see cp/tables/templates.h).
*/
#include "server/cp/tables/templates.h"

#include "server/store/db.h"

int ux_templates_create(ux_store *st) {
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_templates(tenant_id TEXT NOT NULL, template_id TEXT NOT NULL,"
    "  image TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT,"
    "  PRIMARY KEY(tenant_id, template_id));", "");
}

json_t *ux_templates_of(ux_store *st, const char *tenant) {
  return ux_db_rows(st, "SELECT DISTINCT template_id, image FROM cp_templates WHERE tenant_id = '*'"
                    " OR tenant_id = ?1", "s", tenant ? tenant : "");
}

json_t *ux_templates_all(ux_store *st) {
  return ux_db_rows(st, "SELECT tenant_id, template_id, image, created_at, created_by FROM"
                    " cp_templates ORDER BY tenant_id, template_id", "");
}

int ux_templates_put(ux_store *st, const char *tenant, const char *id, const char *image,
                     long long now, const char *created_by) {
  return ux_db_exec(st, "INSERT OR REPLACE INTO cp_templates(tenant_id, template_id, image,"
                    " created_at, created_by) VALUES(?1, ?2, ?3, ?4, ?5)", "sssis", tenant, id,
                    image, now, created_by) == 1 ? 1 : -1;
}

int ux_templates_remove(ux_store *st, const char *tenant, const char *id) {
  return ux_db_exec(st, "DELETE FROM cp_templates WHERE tenant_id = ?1 AND template_id = ?2", "ss",
                    tenant, id);
}
