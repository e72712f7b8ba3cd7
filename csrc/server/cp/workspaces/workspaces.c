/*
** Workspaces (spec §4.1, §5.1): a persistent volume per (tenant,
** principal, session), named ws- + 12 hex of an HMAC over the material,
** so the same inputs always give the same workspace and two subjects of
** one tenant never share one. Creation is idempotent; resolve never
** creates. The volume (DATA/workspaces/<ws>, volume.h) holds src/,
** data/uploads/, artifacts/ and the reserved .sandbox/.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/audit.h"
#include "server/cp/auth/auth.h"
#include "server/cp/workspaces/checkpoints.h"
#include "server/cp/workspaces/workspaces.h"
#include "server/jsonw.h"
#include "server/runtime/runtime.h"
#include "server/cp/objects/locator.h"
#include "server/cp/objects/request.h"
#include "server/cp/workspaces/ids.h"
#include "server/cp/tables/workspaces.h"
#include "server/fsutil.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"
#include "server/store/db.h"
#include "server/store/ledger.h"

#define OWNER_TEXT UX_OBJREQ_OWNER_FORBIDDEN

int ux_cp_ws_dir(const ux_cp *cp, const char *ws_id, char *out, size_t outlen) {
  return ux_path(out, outlen, "%s/workspaces/%s", cp->srv->cfg.data, ws_id);
}

/* The owner rule lives once, with the object locators (cp/objects/locator.h). */
int ux_cp_valid_owner(const char *owner) {
  return ux_objloc_owner(owner, strlen(owner), NULL, 0) == 0;
}

/* The workspace a (session_id, principal) names for c->id: fills w.
** 0, or -1 with a 400 (or the spec's 503 for long session ids). */
int ux_cp_ws_target(ux_cp_call *c, ux_ws_target *w) {
  const char *sid, *kind = "service", *pid = "default";
  memset(w, 0, sizeof *w);
  if (ux_cp_str(c, "session_id", 1, NULL, 256, &sid)) return -1;
  /* the platform's store keeps at most 128 characters and fails so */
  if (strlen(sid) > 128) return ux_cp_fail(c, 503, "failed to record ownership");
  /* the platform's older body fields: refused, never read as a principal */
  if (json_object_get(c->body, "principal_id") || json_object_get(c->body, "principal_type"))
    return ux_cp_fail(c, 400, "principal_id and principal_type are not accepted; "
                      "send principal as {\"kind\": ..., \"id\": ...}");
  json_t *p = json_object_get(c->body, "principal");
  if (p && !json_is_null(p)) {
    if (c->id.subject[0]) return ux_cp_fail(c, 400, "principal cannot be combined with X-Acting-Subject");
    if (!json_is_object(p)) return ux_cp_fail(c, 400, "principal must be an object");
    json_t *k = json_object_get(p, "kind"), *i = json_object_get(p, "id");
    if ((k && !json_is_string(k)) || (i && !json_is_string(i)))
      return ux_cp_fail(c, 400, "principal kind and id must be strings");
    if (k) kind = json_string_value(k);
    if (i) pid = json_string_value(i);
    if (!*kind || strlen(kind) > 128 || !*pid || strlen(pid) > 128)
      return ux_cp_fail(c, 400, "principal kind and id must be 1 to 128 characters");
    /* ("subject", id) is the material X-Acting-Subject gives: the same rule */
    if (!strcmp(kind, "subject") && ux_cp_act_for_subject(c, pid, "a principal id of kind subject"))
      return -1;
  }
  if (c->id.subject[0]) { kind = "subject"; pid = c->id.subject; }
  snprintf(w->tenant, sizeof w->tenant, "%s", ux_cp_home_tenant(&c->id));
  snprintf(w->subject, sizeof w->subject, "%s", c->id.subject);
  snprintf(w->kind, sizeof w->kind, "%s", kind);
  snprintf(w->principal, sizeof w->principal, "%s", pid);
  snprintf(w->session_id, sizeof w->session_id, "%s", sid);
  char *m = ux_workspace_material(ux_id_global(&c->id) ? NULL : w->tenant, kind, pid, sid);
  int rc = m ? ux_workspace_id(c->cp->ws_key, sizeof c->cp->ws_key, m, w->id) : -1;
  free(m);
  return rc == 0 ? 0 : ux_cp_fail(c, 500, "out of memory");
}

/* The lease owner: derived for tenant credentials, given by admins. */
static int lease_owner(ux_cp_call *c, char *owner, size_t len) {
  const char *given;
  owner[0] = '\0';
  if (ux_cp_str(c, "owner", 0, NULL, 300, &given)) return -1;
  if (c->id.kind == UX_ID_TENANT) {
    if (given) {
      ux_cp_audit(c->cp, &c->id, "object.owner", given, "denied");
      return ux_cp_fail(c, 403, OWNER_TEXT);
    }
    if (c->id.subject[0]) snprintf(owner, len, "%s/%s", c->id.tenant, c->id.subject);
    return 0;
  }
  if (given && !ux_cp_valid_owner(given)) return ux_cp_fail(c, 400, "invalid owner: %s", given);
  if (given) snprintf(owner, len, "%s", given);
  return 0;
}

/* record()'s transaction: its inputs and the caller it answers. */
typedef struct {
  const ux_ws_target *w;
  const ux_identity *id;
  const char *owner;
  int result;           /* record()'s answer */
} record_tx_ctx;

/* 0 commits (x->result says what happened), -1 rolls back. */
static int record_tx(ux_store *st, void *ctx) {
  record_tx_ctx *x = ctx;
  const ux_ws_target *w = x->w;
  const char *owner = *x->owner ? x->owner : NULL;
  long long now = ux_now();
  json_t *row = ux_workspaces_get(st, w->id);
  if (row) {
    int seen = ux_cp_visible(x->id, row);
    json_decref(row);
    x->result = seen ? 0 : -3;
    if (!seen) return 0;
    return ux_workspaces_touch(st, w->id, now, owner) < 0 ? -1 : 0;
  }
  if (ux_db_unavailable(st)) return -1;
  ux_workspace_row add = { w->id, w->tenant, w->subject, w->kind, w->principal, w->session_id, owner };
  int n = ux_workspaces_add(st, &add, now);
  x->result = n == 1 ? 1 : -2;
  return n < 0 ? -1 : 0;
}

/* Inserts the row if new, within the tenant's workspace limit, or touches
** it when it exists and the caller may see it, in one transaction: 1
** added, 0 already there, -2 over the limit, -3 a row the caller may not
** see, -1 store failure. */
static int record(ux_cp_call *c, const ux_ws_target *w, const char *owner) {
  record_tx_ctx x = { w, &c->id, owner, -1 };
  return ux_db_tx(c->cp->srv->store, record_tx, &x) == 0 ? x.result : -1;
}

/* Makes the volume and its layout if it does not exist, charged to the
** tenant in the ledger before it is made: 1 made, 0 there, -1 failed
** (logged), -2 the tenant's quota, -3 the server's budget has no room.
** Whoever makes the volume, or finds it made, counts its reservation as
** the stored item (the row is stored already; only one counts it). */
static int ensure_volume(ux_cp *cp, const char *ws_id, const char *tenant) {
  static const char *const LAYOUT[] = { "src", "data", "data/uploads", "artifacts", ".sandbox", NULL };
  char dir[4200], err[300], item[UX_LEDGER_ITEM_MAX], party[UX_LEDGER_PARTY_MAX];
  ux_store *st = cp->srv->store;
  if (ux_path(dir, sizeof dir, "%s/workspaces", cp->srv->cfg.data) < 0 || ux_mkdir_p(dir, 0700) < 0 ||
      ux_cp_ws_dir(cp, ws_id, dir, sizeof dir) < 0)
    return -1;
  ux_ledger_item(item, sizeof item, "cp_workspaces", ws_id);
  ux_ledger_tenant(party, sizeof party, tenant);
  int held = ux_ledger_reserve(st, party, UX_LEDGER_VOLUME, item, ux_volume_charge());
  if (held == UX_LEDGER_QUOTA || held == UX_LEDGER_BUDGET) return held == UX_LEDGER_QUOTA ? -2 : -3;
  if (held == UX_LEDGER_ERROR) return -1;
  /* UX_LEDGER_EXISTS: the workspace is counted already (an earlier create) */
  if (ux_volume_create(dir, err, sizeof err) != 0) {
    if (errno == EEXIST) {                       /* made by an earlier or parallel create */
      ux_ledger_commit(st, item);
      return 0;
    }
    fprintf(stderr, "unsandboxd: workspace %s: %s\n", ws_id, err);
    if (held == UX_LEDGER_OK) ux_ledger_cancel(st, item);
    return -1;
  }
  int root = ux_volume_acquire(dir, err, sizeof err);
  int rc = root >= 0 && ux_tree_make_dirs(root, LAYOUT, (uid_t)-1, (gid_t)-1, err, sizeof err) == 0 ? 1 : -1;
  if (root >= 0) { close(root); ux_volume_release(dir); }
  if (rc < 0) {
    fprintf(stderr, "unsandboxd: workspace %s layout: %s\n", ws_id, err);
    ux_volume_destroy(dir);
    if (held == UX_LEDGER_OK) ux_ledger_cancel(st, item);
  } else {
    ux_ledger_commit(st, item);
  }
  return rc;
}

int ux_cp_ws_create(ux_cp_call *c) {
  ux_ws_target w;
  char owner[300];
  if (ux_cp_ws_target(c, &w) || lease_owner(c, owner, sizeof owner)) return -1;
  int rec = record(c, &w, owner);
  if (rec == -3) {
    json_decref(ux_cp_own_workspace(c, w.id));  /* the 404 and its audit row */
    return -1;
  }
  if (rec == -1) return ux_cp_store_failed(c, "workspace write failed");
  if (rec == -2) return ux_cp_fail(c, 429, "workspace limit reached for tenant %s", w.tenant);
  int made = ensure_volume(c->cp, w.id, w.tenant);
  if (made < 0) {
    if (rec == 1) ux_workspaces_remove(c->cp->srv->store, w.id);
    return made == -1 ? ux_cp_fail(c, 500, "cannot create the workspace's volume")
                      : ux_cp_storage_refused(c, made == -2 ? UX_LEDGER_QUOTA : UX_LEDGER_BUDGET, w.tenant);
  }
  char *token = ux_cp_scoped_token(c->cp, "workspace", w.id, owner);
  if (!token) return ux_cp_fail(c, 500, "out of memory");
  char url[64];
  snprintf(url, sizeof url, "/v1/workspaces/%s/files", w.id);
  json_t *lease = json_pack("{s:s,s:s,s:b,s:s,s:s,s:i,s:o}", "workspace_id", w.id, "status", "ready",
                            "created", made == 1, "file_url", url, "access_token", token,
                            "access_token_expires_in", c->cp->token_ttl_s,
                            "owner", *owner ? json_string(owner) : json_null());
  free(token);
  return ux_cp_ok(c, 201, lease);
}

int ux_cp_ws_resolve(ux_cp_call *c) {
  ux_ws_target w;
  if (ux_cp_ws_target(c, &w)) return -1;
  json_t *row = ux_workspaces_get(c->cp->srv->store, w.id);
  int seen = row && ux_cp_visible(&c->id, row);
  json_decref(row);
  if (!seen) return ux_cp_fail(c, 404, "workspace not found");
  char sb[32];
  ux_rt_info info;
  json_t *sandbox = json_null(), *tpl = json_null();
  if (ux_runtimes_of_workspace(c->cp->rts, w.id, sb) == 0 && ux_runtimes_info(c->cp->rts, sb, &info) == 0 &&
      info.status == UX_RT_RUNNING) {
    sandbox = json_string(sb);
    tpl = json_string(info.template_id);
  }
  return ux_cp_ok(c, 200, json_pack("{s:s,s:o,s:o}", "workspace_id", w.id, "sandbox_id", sandbox,
                                    "template", tpl));
}

typedef struct { ux_cp_call *c; ux_jw *w; int global; } list_ctx;

/* One workspace of a list, as GET /v1/workspaces/{id} shows it. */
static int list_entry(void *arg, const char *id, const char *tenant, long long created_at,
                      long long last_used_at) {
  list_ctx *l = arg;
  ux_jw *w = l->w;
  char sb[32];
  ux_jw_open(w, '{');
  ux_jw_key(w, "id");               ux_jw_cstr(w, id);
  ux_jw_key(w, "status");           ux_jw_cstr(w, "ready");
  ux_jw_key(w, "created_at");       ux_cp_jw_time(w, created_at);
  ux_jw_key(w, "last_used_at");     ux_cp_jw_time(w, last_used_at);
  ux_jw_key(w, "idle_expires_at");  ux_jw_null(w);
  ux_jw_key(w, "runtime_attached"); ux_jw_bool(w, ux_runtimes_of_workspace(l->c->cp->rts, id, sb) == 0);
  if (l->global) { ux_jw_key(w, "tenant"); ux_jw_cstr(w, tenant); }
  ux_jw_close(w);
  return 0;
}

/* The caller's workspaces, selected by the store (ux_cp_visible's rule,
** as columns) and written row by row into the reply's text. */
int ux_cp_ws_list(ux_cp_call *c) {
  ux_cp_visible_cols f = ux_cp_visible_filter(&c->id);
  ux_jw w;
  list_ctx l = { c, &w, ux_id_global(&c->id) };
  ux_jw_init(&w);
  ux_jw_open(&w, '{');
  ux_jw_key(&w, "workspaces");
  ux_jw_open(&w, '[');
  if (!f.none && ux_workspaces_each(c->cp->srv->store, f.tenant, f.subject, f.id, list_entry, &l) < 0) {
    ux_jw_free(&w);
    return ux_cp_store_failed(c, "workspace list failed");
  }
  ux_jw_close(&w);
  ux_jw_close(&w);
  return ux_cp_ok_text(c, 200, &w);
}

int ux_cp_ws_delete(ux_cp_call *c) {
  const char *ws = c->param[0];
  char sb[32], dir[4200];
  if (ux_runtimes_of_workspace(c->cp->rts, ws, sb) == 0)
    return ux_cp_fail(c, 409, "workspace still has active Runtime Pods");
  long long purged = ux_cp_flag(c->r, "purge") ? ux_cp_checkpoints_purge(c->cp, ws) : 0;
  if (purged < 0) return ux_cp_store_failed(c, "checkpoint purge failed");
  if (ux_cp_ws_dir(c->cp, ws, dir, sizeof dir) == 0) ux_volume_destroy(dir);
  if (ux_workspaces_remove(c->cp->srv->store, ws) < 0)
    return ux_cp_store_failed(c, "workspace delete failed");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:b,s:b,s:b,s:I}", "workspace_id", ws, "released", 1,
                                    "data_retained", 0, "purged", 1, "checkpoints_purged",
                                    (json_int_t)purged));
}
