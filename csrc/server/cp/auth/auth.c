/*
** The auth order of spec §3, step by step, with the exact status codes
** and texts. Secrets are compared in constant time: the break-glass
** token with CRYPTO_memcmp, API keys by the hash of the whole value,
** tokens by their MAC (tokens.c).
*/
#include "server/cp/auth/auth.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>

#include "core/pseudonym.h"
#include "server/cp/audit.h"
#include "server/cp/auth/keys.h"
#include "server/cp/auth/tokens.h"
#include "server/cp/tables/sandboxes.h"
#include "server/cp/tables/tenants.h"
#include "server/cp/tables/workspaces.h"
#include "server/fsutil.h"
#include "server/store/db.h"

#define NOT_FOR_SUBJECT "this credential may not act for a subject"
#define BAD_SCOPED "invalid or expired scoped access token"

int ux_id_global(const ux_identity *id) { return ux_id_admin(id) && !id->tenant[0]; }
int ux_id_admin(const ux_identity *id) {
  return id->kind == UX_ID_BREAK_GLASS || id->kind == UX_ID_ADMIN;
}
const char *ux_id_kind_name(const ux_identity *id) {
  switch (id->kind) {
  case UX_ID_BREAK_GLASS: return "break-glass";
  case UX_ID_ADMIN: return "admin";
  case UX_ID_TENANT: return "tenant";
  default: return "scoped";
  }
}

const char *ux_cp_bearer(const ux_req *r) {
  const char *h = ux_req_header(r, "Authorization");
  if (!h || strncmp(h, "Bearer ", 7) != 0 || !h[7]) return NULL;
  for (const char *p = h + 7; *p; p++)
    if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) return NULL;
  return h + 7;
}

/* A header value trimmed of blanks into out; "" when absent. */
static const char *trimmed(const ux_req *r, const char *name, char *out, size_t outlen) {
  const char *v = ux_req_header(r, name);
  out[0] = '\0';
  if (!v) return out;
  while (*v && isspace((unsigned char)*v)) v++;
  size_t n = strlen(v);
  while (n > 0 && isspace((unsigned char)v[n - 1])) n--;
  snprintf(out, outlen, "%.*s", (int)n, v);
  return out;
}

/* Steps (6) and (7): X-Sandbox-Tenant and suspended tenants. */
static int tenant_step(ux_cp_call *c, const char *header_tenant) {
  ux_identity *id = &c->id;
  if (id->kind == UX_ID_TENANT && header_tenant[0])
    return ux_cp_fail(c, 403, "this credential is bound to a tenant; X-Sandbox-Tenant is not accepted");
  const char *t = id->kind == UX_ID_TENANT ? id->tenant : header_tenant;
  if (!t[0]) return 0;
  switch (ux_tenants_state(c->cp->srv->store, t)) {
  case UX_TENANT_BROKEN: return ux_cp_store_failed(c, "tenant lookup failed");
  case UX_TENANT_UNKNOWN: return ux_cp_fail(c, 404, "unknown tenant: %s", t);
  case UX_TENANT_SUSPENDED: return ux_cp_fail(c, 403, "tenant is suspended: %s", t);
  default:
    if (t != id->tenant) snprintf(id->tenant, sizeof id->tenant, "%s", t);
    return 0;
  }
}

/* Steps (3) to (5): which credential, and may it act for a subject. */
static int key_step(ux_cp_call *c, const char *bearer, const char *subject) {
  ux_identity *id = &c->id;
  const char *bg = c->cp->break_glass;
  size_t n = strlen(bearer);
  if (n == strlen(bg) && CRYPTO_memcmp(bearer, bg, n) == 0) {
    if (subject[0]) return ux_cp_fail(c, 403, NOT_FOR_SUBJECT);
    id->kind = UX_ID_BREAK_GLASS;
    return 0;
  }
  int broken;
  json_t *key = ux_cp_key_find(c->cp, bearer, &broken);
  if (broken) return ux_cp_store_failed(c, "key lookup failed");
  if (!key) return ux_cp_fail(c, 401, "unauthorized");
  const char *tenant = json_string_value(json_object_get(key, "tenant_id"));
  const char *perms = json_string_value(json_object_get(key, "permissions"));
  id->kind = tenant ? UX_ID_TENANT : UX_ID_ADMIN;
  snprintf(id->tenant, sizeof id->tenant, "%s", tenant ? tenant : "");
  snprintf(id->key_id, sizeof id->key_id, "%s", json_string_value(json_object_get(key, "id")));
  id->act_as_subjects = perms && strstr(perms, "\"act_as_subjects\"") != NULL;
  json_decref(key);
  return subject[0] ? ux_cp_act_for_subject(c, subject, "X-Acting-Subject") : 0;
}

int ux_cp_act_for_subject(ux_cp_call *c, const char *subject, const char *what) {
  if (c->id.kind == UX_ID_BREAK_GLASS || !c->id.act_as_subjects) return ux_cp_fail(c, 403, NOT_FOR_SUBJECT);
  if (!unsb_valid_subject(subject, strlen(subject)))
    return ux_cp_fail(c, 400, "%s must be 32 lowercase hex characters", what);
  snprintf(c->id.subject, sizeof c->id.subject, "%s", subject);
  return 0;
}

static int control_plane(ux_cp_call *c, const char *bearer) {
  char subject[128], tenant[128];
  trimmed(c->r, "X-Acting-Subject", subject, sizeof subject);
  trimmed(c->r, "X-Sandbox-Tenant", tenant, sizeof tenant);
  if (key_step(c, bearer, subject) != 0) return -1;
  if (strlen(tenant) >= sizeof c->id.tenant) return ux_cp_fail(c, 404, "unknown tenant: %s", tenant);
  return tenant_step(c, tenant);
}

/* 1 when a bearer value has the shape of a scoped token (payload.mac);
** API keys and the break-glass token never contain a dot. */
static int token_shaped(const char *bearer) {
  const char *dot = strchr(bearer, '.');
  return dot && !strchr(dot + 1, '.');
}

/* A scoped token of `kind` for `sub`; suspended owner tenants refused. */
static int scoped(ux_cp_call *c, const char *bearer, const char *kind, const char *sub) {
  json_t *claims = ux_token_verify(c->cp->signing_key, sizeof c->cp->signing_key, bearer, ux_now());
  const char *k = json_string_value(json_object_get(claims, "kind"));
  const char *s = json_string_value(json_object_get(claims, "sub"));
  const char *own = json_string_value(json_object_get(claims, "own"));
  if (!claims || !k || !s || strcmp(k, kind) != 0 || !sub || strcmp(s, sub) != 0) {
    json_decref(claims);
    return ux_cp_fail(c, 401, BAD_SCOPED);
  }
  ux_identity *id = &c->id;
  id->kind = UX_ID_SCOPED;
  snprintf(id->scope, sizeof id->scope, "%s", kind);
  snprintf(id->sub, sizeof id->sub, "%s", s);
  snprintf(id->owner, sizeof id->owner, "%s", own ? own : "");
  json_decref(claims);
  /* a token acts for its workspace's tenant, and stops with it (a
  ** tenant is never deleted, so these reads need no transaction) */
  ux_store *st = c->cp->srv->store;
  json_t *sb = strcmp(kind, "workspace") != 0 ? ux_sandboxes_get(st, id->sub) : NULL;
  const char *ws = sb ? json_string_value(json_object_get(sb, "workspace_id")) : id->sub;
  if (!ws || !ux_workspaces_tenant(st, ws, id->tenant, sizeof id->tenant)) id->tenant[0] = '\0';
  json_decref(sb);
  return id->tenant[0] && ux_tenants_state(st, id->tenant) == UX_TENANT_SUSPENDED
         ? ux_cp_fail(c, 403, "tenant is suspended") : 0;
}

int ux_cp_authenticate(ux_cp_call *c, ux_cred cred, const char *scope_id) {
  memset(&c->id, 0, sizeof c->id);
  if (cred == UX_CRED_NONE) return 0;
  const char *bearer = ux_cp_bearer(c->r);
  if (!bearer) return ux_cp_fail(c, 401, "unauthorized");
  switch (cred) {
  case UX_CRED_WS_OR_CP:
    if (token_shaped(bearer)) return scoped(c, bearer, "workspace", scope_id);
    return control_plane(c, bearer);
  case UX_CRED_WS: return scoped(c, bearer, "workspace", scope_id);
  case UX_CRED_SB: return scoped(c, bearer, "sandbox", scope_id);
  case UX_CRED_TICKET: return 0;           /* the handler checks and burns it */
  case UX_CRED_ADMIN:
    if (control_plane(c, bearer) != 0) return -1;
    if (c->id.kind == UX_ID_TENANT) return ux_cp_fail(c, 403, "admin key required");
    if (c->id.tenant[0])
      return ux_cp_fail(c, 403, "admin operations require an admin key without X-Sandbox-Tenant");
    return 0;
  default:
    return control_plane(c, bearer);
  }
}

/* ------------------------------------------------------------------
** Ownership
** ---------------------------------------------------------------- */

const char *ux_cp_home_tenant(const ux_identity *id) {
  return id->tenant[0] ? id->tenant : UX_CP_OPERATOR_TENANT;
}

int ux_cp_visible(const ux_identity *id, const json_t *ws) {
  const char *wid = json_string_value(json_object_get(ws, "id"));
  const char *tenant = json_string_value(json_object_get(ws, "tenant"));
  const char *subject = json_string_value(json_object_get(ws, "subject"));
  if (!wid || !tenant || !subject) return 0;
  if (id->kind == UX_ID_SCOPED) return !strcmp(id->scope, "workspace") && !strcmp(id->sub, wid);
  if (ux_id_global(id)) return 1;
  if (strcmp(tenant, id->tenant) != 0) return 0;
  /* an admin acting for a tenant sees all of it unless it binds a subject */
  if (ux_id_admin(id) && !id->subject[0]) return 1;
  return !strcmp(subject, id->subject);
}

ux_cp_visible_cols ux_cp_visible_filter(const ux_identity *id) {
  ux_cp_visible_cols f = { NULL, NULL, NULL, 0 };
  if (id->kind == UX_ID_SCOPED) {
    f.id = id->sub;
    f.none = strcmp(id->scope, "workspace") != 0;
    return f;
  }
  if (ux_id_global(id)) return f;
  f.tenant = id->tenant;
  if (!(ux_id_admin(id) && !id->subject[0])) f.subject = id->subject;
  return f;
}

static json_t *deny(ux_cp_call *c, const char *what, const char *target) {
  char action[32];
  snprintf(action, sizeof action, "%s.access", what);
  ux_cp_audit(c->cp, &c->id, action, target, "denied");
  ux_cp_fail(c, 404, "%s not found", what);
  return NULL;
}

json_t *ux_cp_own_workspace(ux_cp_call *c, const char *ws_id) {
  json_t *ws = ux_workspaces_get(c->cp->srv->store, ws_id);
  if (!ws && ux_db_unavailable(c->cp->srv->store)) {
    ux_cp_store_failed(c, "workspace lookup failed");
    return NULL;
  }
  if (ws && ux_cp_visible(&c->id, ws)) {
    if (c->id.kind == UX_ID_SCOPED)          /* a token acts for its workspace's tenant */
      snprintf(c->id.tenant, sizeof c->id.tenant, "%s",
               json_string_value(json_object_get(ws, "tenant")));
    return ws;
  }
  json_decref(ws);
  return deny(c, "workspace", ws_id);
}

json_t *ux_cp_own_sandbox(ux_cp_call *c, const char *sb_id) {
  json_t *sb = ux_sandboxes_get(c->cp->srv->store, sb_id);
  if (!sb && ux_db_unavailable(c->cp->srv->store)) {
    ux_cp_store_failed(c, "sandbox lookup failed");
    return NULL;
  }
  json_t *ws = sb ? ux_workspaces_get(c->cp->srv->store,
                                      json_string_value(json_object_get(sb, "workspace_id"))) : NULL;
  int ok = ws && (c->id.kind == UX_ID_SCOPED
                  ? !strcmp(c->id.scope, "sandbox") && !strcmp(c->id.sub, sb_id)
                  : ux_cp_visible(&c->id, ws));
  if (ok && c->id.kind == UX_ID_SCOPED)
    snprintf(c->id.tenant, sizeof c->id.tenant, "%s", json_string_value(json_object_get(ws, "tenant")));
  json_decref(ws);
  if (ok) return sb;
  json_decref(sb);
  return deny(c, "sandbox", sb_id);
}

char *ux_cp_scoped_token(ux_cp *cp, const char *kind, const char *sub, const char *owner) {
  json_t *claims = json_pack("{s:s,s:s,s:s,s:I}", "aud", UX_TOKEN_AUD, "kind", kind, "sub", sub,
                             "exp", (json_int_t)(ux_now() + cp->token_ttl_s));
  if (claims && owner && *owner) json_object_set_new(claims, "own", json_string(owner));
  char *t = claims ? ux_token_mint(cp->signing_key, sizeof cp->signing_key, claims) : NULL;
  json_decref(claims);
  return t;
}
