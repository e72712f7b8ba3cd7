/*
** cp_audit (see cp/tables/audit.h).
*/
#include "server/cp/tables/audit.h"

#include "server/store/db.h"

int ux_audit_create(ux_store *st) {
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_audit(id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT,"
    "  actor_kind TEXT, actor_id TEXT, action TEXT NOT NULL, target TEXT, outcome TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);", "");
}

typedef struct {
  const char *tenant, *actor_kind, *actor_id, *action, *target, *outcome;
  long long now, keep;
} audit_row;

static int add_tx(ux_store *st, void *ctx) {
  const audit_row *a = ctx;
  if (ux_db_exec(st, "INSERT INTO cp_audit(tenant, actor_kind, actor_id, action, target, outcome,"
                 " created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", "ssssssi", a->tenant,
                 a->actor_kind, a->actor_id, a->action, a->target, a->outcome, a->now) != 1)
    return -1;
  /* a range of the primary key: usually no row, or one */
  if (a->keep > 0 && ux_db_exec(st, "DELETE FROM cp_audit WHERE id <= (SELECT max(id) FROM cp_audit)"
                                " - ?1", "i", a->keep) < 0)
    return -1;
  return 0;
}

int ux_audit_add(ux_store *st, const char *tenant, const char *actor_kind, const char *actor_id,
                 const char *action, const char *target, const char *outcome, long long now,
                 long long keep) {
  audit_row a = { tenant, actor_kind, actor_id, action, target, outcome, now, keep };
  return ux_db_tx(st, add_tx, &a) == 0 ? 0 : -1;
}

json_t *ux_audit_latest(ux_store *st, long long limit) {
  return ux_db_rows(st, "SELECT id, tenant, actor_kind, actor_id, action, target, outcome,"
                    " created_at FROM cp_audit ORDER BY id DESC LIMIT ?1", "i", limit);
}
