/*
** Administration (spec §4.4): tenants, API keys, owner tenants and the
** audit log. The router has already refused anything but an admin key or
** the break-glass token without X-Sandbox-Tenant. Every change writes its
** audit row; reading the audit log does not.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cp/audit.h"
#include "server/cp/admin/admin.h"
#include "server/cp/auth/keys.h"
#include "core/cpshapes.h"
#include "server/cp/tables/audit.h"
#include "server/cp/tables/keys.h"
#include "server/cp/tables/tenants.h"
#include "server/fsutil.h"
#include "server/store/db.h"

static const char *actor(const ux_cp_call *c) {
  return c->id.kind == UX_ID_BREAK_GLASS ? "break-glass" : c->id.key_id;
}

/* The tenant row for the reply, or NULL after a 404 (503). */
static json_t *tenant_or_404(ux_cp_call *c, const char *id) {
  json_t *t = ux_tenants_view(c->cp->srv->store, id);
  if (t) return t;
  if (ux_db_unavailable(c->cp->srv->store)) ux_cp_store_failed(c, "tenant lookup failed");
  else ux_cp_fail(c, 404, "unknown tenant: %s", id);
  return NULL;
}

int ux_cp_tenants_list(ux_cp_call *c) {
  json_t *rows = ux_tenants_views(c->cp->srv->store);
  if (!rows) return ux_cp_store_failed(c, "tenant list failed");
  return ux_cp_ok(c, 200, json_pack("{s:o}", "tenants", rows));
}

int ux_cp_tenants_create(ux_cp_call *c) {
  const char *id, *name;
  long long maxw, maxr;
  if (ux_cp_str(c, "id", 1, NULL, 0, &id) || ux_cp_str(c, "display_name", 0, NULL, 256, &name) ||
      ux_cp_int(c, "max_workspaces", 1, 100000, 64, &maxw) ||
      ux_cp_int(c, "max_runtimes", 1, 10000, 4, &maxr))
    return -1;
  if (!unsb_valid_tenant_id(id)) return ux_cp_fail(c, 409, "invalid tenant id: %s", id);
  if (!strcmp(id, "management")) return ux_cp_fail(c, 409, "tenant id is reserved: %s", id);
  int n = ux_tenants_add(c->cp->srv->store, id, name ? name : id, maxw, maxr, (long long)ux_now());
  if (n < 0) return ux_cp_store_failed(c, "tenant write failed");
  if (n == 0) return ux_cp_fail(c, 409, "tenant already exists: %s", id);
  ux_cp_audit(c->cp, &c->id, "tenant.create", id, "ok");
  json_t *t = tenant_or_404(c, id);
  return t ? ux_cp_ok(c, 201, t) : -1;
}

static int set_status(ux_cp_call *c, const char *id, const char *status, const char *action) {
  int n = ux_tenants_set_status(c->cp->srv->store, id, status);
  if (n < 0) return ux_cp_store_failed(c, "tenant write failed");
  if (n == 0) return ux_cp_fail(c, 404, "unknown tenant: %s", id);
  ux_cp_audit(c->cp, &c->id, action, id, "ok");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:s}", "id", id, "status", status));
}

/* DELETE suspends: a tenant's data is kept, its credentials stop working. */
int ux_cp_tenant_suspend(ux_cp_call *c) {
  return set_status(c, c->param[0], "suspended", "tenant.suspend");
}

int ux_cp_tenant_status(ux_cp_call *c) {
  const char *status;
  if (ux_cp_str(c, "status", 1, NULL, 32, &status)) return -1;
  if (strcmp(status, "active") != 0 && strcmp(status, "suspended") != 0)
    return ux_cp_fail(c, 400, "status must be active or suspended");
  return set_status(c, c->param[0], status, "tenant.status");
}

/* ------------------------------------------------------------------
** Keys
** ---------------------------------------------------------------- */

int ux_cp_tenant_keys_list(ux_cp_call *c) {
  json_t *t = tenant_or_404(c, c->param[0]);
  if (!t) return -1;
  json_decref(t);
  json_t *keys = ux_cp_key_list(c->cp, c->param[0]);
  if (!keys) return ux_cp_store_failed(c, "key list failed");
  return ux_cp_ok(c, 200, json_pack("{s:o}", "keys", keys));
}

int ux_cp_admin_keys_list(ux_cp_call *c) {
  json_t *keys = ux_cp_key_list(c->cp, NULL);
  if (!keys) return ux_cp_store_failed(c, "key list failed");
  return ux_cp_ok(c, 200, json_pack("{s:o}", "keys", keys));
}

/* {label?, permissions?, expires_in_seconds?} → 201 IssuedApiKey. */
static int issue(ux_cp_call *c, const char *tenant, const char *action) {
  const char *label;
  long long ttl;
  int act = 0;
  if (ux_cp_str(c, "label", 0, "unnamed", 128, &label) ||
      ux_cp_int(c, "expires_in_seconds", 1, 31536000, 0, &ttl))
    return -1;
  json_t *perms = json_object_get(c->body, "permissions"), *p;
  size_t i;
  if (perms && !json_is_null(perms) && !json_is_array(perms))
    return ux_cp_fail(c, 400, "permissions must be a list");
  json_array_foreach(perms, i, p) {
    if (!json_is_string(p)) return ux_cp_fail(c, 400, "permissions must be a list of strings");
    if (strcmp(json_string_value(p), "act_as_subjects") != 0)
      return ux_cp_fail(c, 400, "unknown key permission: %s", json_string_value(p));
    act = 1;
  }
  json_t *key = ux_cp_key_issue(c->cp, tenant, label, act, ttl ? ux_now() + ttl : 0);
  if (!key) return ux_cp_store_failed(c, "key write failed");
  ux_cp_audit(c->cp, &c->id, action, json_string_value(json_object_get(key, "id")), "ok");
  return ux_cp_ok(c, 201, key);
}

int ux_cp_tenant_keys_create(ux_cp_call *c) {
  json_t *t = tenant_or_404(c, c->param[0]);
  if (!t) return -1;
  json_decref(t);
  return issue(c, c->param[0], "key.issue");
}

int ux_cp_admin_keys_create(ux_cp_call *c) { return issue(c, NULL, "key.issue.admin"); }

/* Idempotent: revoking a revoked key answers the same. */
int ux_cp_key_revoke(ux_cp_call *c) {
  int n = ux_apikeys_revoke(c->cp->srv->store, c->param[0], (long long)ux_now());
  if (n < 0) return ux_cp_store_failed(c, "key write failed");
  if (n == 0) return ux_cp_fail(c, 404, "no such api key: %s", c->param[0]);
  ux_cp_audit(c->cp, &c->id, "key.revoke", c->param[0], "ok");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:b}", "id", c->param[0], "revoked", 1));
}

/* ------------------------------------------------------------------
** Owner tenants and audit
** ---------------------------------------------------------------- */

int ux_cp_owner_tenants_list(ux_cp_call *c) {
  json_t *t = tenant_or_404(c, c->param[0]);
  if (!t) return -1;
  json_decref(t);
  json_t *rows = ux_owner_tenants_list(c->cp->srv->store, c->param[0]);
  if (!rows) return ux_cp_store_failed(c, "owner tenant list failed");
  json_t *row;
  size_t i;
  json_array_foreach(rows, i, row)
    json_object_set_new(row, "created_at", ux_cp_time(json_integer_value(json_object_get(row, "created_at"))));
  return ux_cp_ok(c, 200, json_pack("{s:o}", "owner_tenants", rows));
}

int ux_cp_owner_tenants_add(ux_cp_call *c) {
  const char *owner;
  if (ux_cp_str(c, "owner_tenant", 1, NULL, 64, &owner)) return -1;
  if (!unsb_valid_tenant_id(owner)) return ux_cp_fail(c, 400, "invalid owner_tenant: %s", owner);
  json_t *t = tenant_or_404(c, c->param[0]);
  if (!t) return -1;
  json_decref(t);
  if (ux_owner_tenants_add(c->cp->srv->store, c->param[0], owner, actor(c), (long long)ux_now()) < 0)
    return ux_cp_store_failed(c, "owner tenant write failed");
  ux_cp_audit(c->cp, &c->id, "tenant.owner_tenant.allow", c->param[0], "ok");
  return ux_cp_ok(c, 201, json_pack("{s:s,s:s}", "tenant_id", c->param[0], "owner_tenant", owner));
}

int ux_cp_owner_tenants_revoke(ux_cp_call *c) {
  int n = ux_owner_tenants_remove(c->cp->srv->store, c->param[0], c->param[1]);
  if (n < 0) return ux_cp_store_failed(c, "owner tenant write failed");
  if (n == 0) return ux_cp_fail(c, 404, "no such owner tenant: %s", c->param[1]);
  ux_cp_audit(c->cp, &c->id, "tenant.owner_tenant.revoke", c->param[0], "ok");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:s,s:b}", "tenant_id", c->param[0],
                                    "owner_tenant", c->param[1], "revoked", 1));
}

int ux_cp_audit_list(ux_cp_call *c) {
  const char *q = ux_req_query(c->r, "limit");
  long long limit = 100;
  if (q) {
    char *end;
    limit = strtoll(q, &end, 10);
    if (!*q || *end || isspace((unsigned char)*q)) return ux_cp_fail(c, 400, "limit must be an integer");
    limit = limit < 1 ? 1 : limit > 1000 ? 1000 : limit;
  }
  json_t *rows = ux_audit_latest(c->cp->srv->store, limit);
  if (!rows) return ux_cp_store_failed(c, "audit list failed");
  json_t *row;
  size_t i;
  json_array_foreach(rows, i, row)
    json_object_set_new(row, "created_at", ux_cp_time(json_integer_value(json_object_get(row, "created_at"))));
  return ux_cp_ok(c, 200, json_pack("{s:o}", "events", rows));
}
