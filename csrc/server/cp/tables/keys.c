/*
** cp_keys (see cp/tables/keys.h).
*/
#include "server/cp/tables/keys.h"

#include "server/store/db.h"

int ux_apikeys_create(ux_store *st) {
  return ux_db_exec(st,
    "CREATE TABLE IF NOT EXISTS cp_keys(id TEXT PRIMARY KEY, tenant_id TEXT, key_prefix TEXT NOT NULL,"
    "  key_hash BLOB NOT NULL, label TEXT NOT NULL, permissions TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL, last_used_at INTEGER, revoked_at INTEGER, expires_at INTEGER);"
    "CREATE INDEX IF NOT EXISTS cp_keys_prefix ON cp_keys(key_prefix);", "");
}

int ux_apikeys_add(ux_store *st, const char *id, const char *tenant, const char *prefix,
                   const void *hash, size_t hashlen, const char *label, const char *permissions,
                   long long now, long long expires_at) {
  return ux_db_exec(st, "INSERT INTO cp_keys(id, tenant_id, key_prefix, key_hash, label, permissions,"
                    " created_at, expires_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, NULLIF(?8, 0))",
                    "sssbssii", id, tenant, prefix, hash, hashlen, label, permissions, now,
                    expires_at) == 1 ? 1 : -1;
}

json_t *ux_apikeys_by_prefix(ux_store *st, const char *prefix, long long now) {
  return ux_db_rows(st, "SELECT id, tenant_id, permissions, lower(hex(key_hash)) AS h, last_used_at"
                    " FROM cp_keys WHERE key_prefix = ?1 AND revoked_at IS NULL"
                    " AND (expires_at IS NULL OR expires_at > ?2)", "si", prefix, now);
}

void ux_apikeys_touch(ux_store *st, const char *id, long long now, long long every) {
  ux_db_exec(st, "UPDATE cp_keys SET last_used_at = ?1 WHERE id = ?2 AND"
             " (last_used_at IS NULL OR last_used_at <= ?3)", "isi", now, id, now - every);
}

json_t *ux_apikeys_list(ux_store *st, const char *tenant) {
  return ux_db_rows(st, "SELECT id, tenant_id, key_prefix, label, created_at, last_used_at,"
                    " revoked_at, permissions, expires_at FROM cp_keys WHERE"
                    " (?1 IS NULL AND tenant_id IS NULL) OR tenant_id = ?1"
                    " ORDER BY created_at, rowid", "s", tenant);
}

int ux_apikeys_revoke(ux_store *st, const char *id, long long now) {
  return ux_db_exec(st, "UPDATE cp_keys SET revoked_at = coalesce(revoked_at, ?1) WHERE id = ?2",
                    "is", now, id);
}
