/*
** Control Plane schema and secrets (see cp/store.h).
*/
#include "server/cp/store.h"

#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "server/fsutil.h"
#include "server/store/db.h"

static const char SCHEMA[] =
  /* secrets made once per data directory */
  "CREATE TABLE IF NOT EXISTS cp_meta(name TEXT PRIMARY KEY, value BLOB NOT NULL);"
  "CREATE TABLE IF NOT EXISTS cp_tenants(id TEXT PRIMARY KEY, display_name TEXT NOT NULL,"
  "  status TEXT NOT NULL, max_workspaces INTEGER NOT NULL, max_runtimes INTEGER NOT NULL,"
  "  created_at INTEGER NOT NULL);"
  /* API keys: the SHA-256 of the plaintext, found by its first 12 characters;
  ** tenant_id NULL for admin keys; permissions a JSON array */
  "CREATE TABLE IF NOT EXISTS cp_keys(id TEXT PRIMARY KEY, tenant_id TEXT, key_prefix TEXT NOT NULL,"
  "  key_hash BLOB NOT NULL, label TEXT NOT NULL, permissions TEXT NOT NULL,"
  "  created_at INTEGER NOT NULL, last_used_at INTEGER, revoked_at INTEGER, expires_at INTEGER);"
  "CREATE INDEX IF NOT EXISTS cp_keys_prefix ON cp_keys(key_prefix);"
  "CREATE TABLE IF NOT EXISTS cp_owner_tenants(tenant_id TEXT NOT NULL, owner_tenant TEXT NOT NULL,"
  "  created_at INTEGER NOT NULL, created_by TEXT, PRIMARY KEY(tenant_id, owner_tenant));"
  "CREATE TABLE IF NOT EXISTS cp_audit(id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT,"
  "  actor_kind TEXT, actor_id TEXT, action TEXT NOT NULL, target TEXT, outcome TEXT NOT NULL,"
  "  created_at INTEGER NOT NULL);"
  "CREATE TABLE IF NOT EXISTS cp_templates(tenant_id TEXT NOT NULL, template_id TEXT NOT NULL,"
  "  image TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT,"
  "  PRIMARY KEY(tenant_id, template_id));"
  /* a workspace belongs to a tenant ('management' for the tenant-less admin)
  ** and, when one was bound, an acting subject ('' when none) */
  "CREATE TABLE IF NOT EXISTS cp_workspaces(id TEXT PRIMARY KEY, tenant TEXT NOT NULL,"
  "  subject TEXT NOT NULL, principal_kind TEXT NOT NULL, principal_id TEXT NOT NULL,"
  "  session_id TEXT NOT NULL, owner TEXT, created_at INTEGER NOT NULL,"
  "  last_used_at INTEGER NOT NULL);"
  "CREATE TABLE IF NOT EXISTS cp_sandboxes(id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,"
  "  template TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,"
  "  expires_at INTEGER NOT NULL, ended_at INTEGER);"
  "CREATE INDEX IF NOT EXISTS cp_sandboxes_ws ON cp_sandboxes(workspace_id);";

/* Loads secret `name` into out, making and storing it the first time
** (INSERT OR IGNORE, then read back: two servers starting on one data
** directory agree on the one that won). */
static int secret(ux_cp *cp, const char *name, unsigned char *out, size_t len) {
  unsigned char fresh[UX_CP_KEY_LEN];
  if (len != sizeof fresh || RAND_bytes(fresh, (int)len) != 1) return -1;
  ux_store *st = cp->srv->store;
  int rc = ux_db_exec(st, "INSERT OR IGNORE INTO cp_meta(name, value) VALUES(?1, ?2)", "sb",
                      name, (const void *)fresh, len);
  OPENSSL_cleanse(fresh, sizeof fresh);
  json_t *row = rc < 0 ? NULL : ux_db_row(st, "SELECT hex(value) AS v FROM cp_meta WHERE name = ?1",
                                          "s", name);
  const char *hex = json_string_value(json_object_get(row, "v"));
  int ok = hex && strlen(hex) == 2 * len;
  for (size_t i = 0; ok && i < len; i++) {
    unsigned v;
    ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
    out[i] = (unsigned char)v;
  }
  json_decref(row);
  return ok ? 0 : -1;
}

int ux_cp_store_init(ux_cp *cp, char *err, size_t errlen) {
  if (ux_db_exec(cp->srv->store, SCHEMA, "") < 0) {
    snprintf(err, errlen, "cannot create the Control Plane tables");
    return -1;
  }
  if (secret(cp, "signing_key", cp->signing_key, sizeof cp->signing_key) < 0 ||
      secret(cp, "workspace_key", cp->ws_key, sizeof cp->ws_key) < 0) {
    snprintf(err, errlen, "cannot load the Control Plane keys");
    return -1;
  }
  return 0;
}

int ux_cp_store_recover(ux_cp *cp) {
  return ux_db_exec(cp->srv->store,
                    "UPDATE cp_sandboxes SET status = 'released', ended_at = ?1"
                    " WHERE status = 'live'", "i", (long long)ux_now());
}
