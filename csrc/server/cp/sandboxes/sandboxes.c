/*
** Sandboxes (spec §4.1): the routes over runtimes (runtime.h) and their
** records (cp/tables/sandboxes.h). One live runtime per workspace, reused
** by a second create; a tenant's max_runtimes is checked when the record
** is inserted, in the same statement, and the process's capacity when the
** runtime starts.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cp/auth/auth.h"
#include "server/cp/sandboxes/sandboxes.h"
#include "server/cp/admin/admin.h"
#include "core/cpshapes.h"
#include "server/cp/workspaces/workspaces.h"
#include "server/cp/tables/sandboxes.h"
#include "server/cp/tables/workspaces.h"
#include "server/runtime/runtime.h"
#include "server/fsutil.h"
#include "server/ids.h"

#define READY_WAIT_MS 110000

void ux_cp_sandbox_ended(void *ctx, const char *sb_id, int status, const char *why) {
  ux_cp *cp = ctx;
  ux_sandboxes_end(cp->srv->store, sb_id, status == UX_RT_FAILED ? "failed" : "released",
                   (long long)ux_now());
  if (status == UX_RT_FAILED) fprintf(stderr, "unsandboxd: runtime %s failed: %s\n", sb_id, why);
}

/* The Sandbox view of a live runtime (its lease when with_token). */
static json_t *view(ux_cp_call *c, const ux_rt_info *info, int with_token, const char *owner) {
  json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "id", info->sb_id, "workspace_id", info->ws_id,
    "status", info->status == UX_RT_RUNNING ? "running" : "pending", "runtime_class", "bubblewrap",
    "template", info->template_id, "created_at", ux_cp_time(info->created_at),
    "expires_at", ux_cp_time(info->expires_at));
  if (!with_token) return v;
  char url[64], *token = ux_cp_scoped_token(c->cp, "sandbox", info->sb_id, owner);
  snprintf(url, sizeof url, "/v1/sandboxes/%s/mcp", info->sb_id);
  json_object_set_new(v, "mcp_url", json_string(url));
  json_object_set_new(v, "access_token", token ? json_string(token) : json_null());
  json_object_set_new(v, "access_token_expires_in", json_integer(c->cp->token_ttl_s));
  free(token);
  return v;
}

/* 202: the pending view with a token (wait=false). */
static int pending(ux_cp_call *c, const ux_rt_info *info, const char *owner) {
  char url[64], *token = ux_cp_scoped_token(c->cp, "sandbox", info->sb_id, owner);
  snprintf(url, sizeof url, "/v1/sandboxes/%s/mcp", info->sb_id);
  json_t *j = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s}", "id", info->sb_id, "mcp_url", url,
    "access_token", token ? token : "", "access_token_expires_in", c->cp->token_ttl_s,
    "status", "pending", "workspace_id", info->ws_id, "template", info->template_id);
  free(token);
  return ux_cp_ok(c, 202, j);
}

/* Waits for a live runtime and answers its lease, or the failure. */
static int lease_when_ready(ux_cp_call *c, const char *sb, const char *owner) {
  int st = ux_runtimes_wait_ready(c->cp->rts, sb, READY_WAIT_MS);
  ux_rt_info info;
  if (st == UX_RT_RUNNING && ux_runtimes_info(c->cp->rts, sb, &info) == 0)
    return ux_cp_ok(c, 201, view(c, &info, 1, owner));
  if (st == UX_RT_PENDING)
    return ux_cp_fail(c, 504, "sandbox %s was not ready within %d s", sb, READY_WAIT_MS / 1000);
  if (st == UX_RT_FAILED) return ux_cp_fail(c, 503, "sandbox %s failed to start", sb);
  return ux_cp_fail(c, 409, "sandbox %s was released while starting", sb);
}

static int start(ux_cp_call *c, json_t *ws, const char *tpl, int wait) {
  const char *wsid = json_string_value(json_object_get(ws, "id"));
  const char *owner = json_string_value(json_object_get(ws, "owner"));
  const char *tenant = json_string_value(json_object_get(ws, "tenant"));
  char sb[32], dir[4200], err[256];
  int live = 0;
  long long now = ux_now();
  ux_random_id(sb, sizeof sb, "sb-", 6);
  int n = ux_sandboxes_add_live(c->cp->srv->store, sb, wsid, tpl, tenant, now,
                                now + (long long)c->cp->hard_ttl_s, &live);
  if (n < 0) return ux_cp_store_failed(c, "sandbox write failed");
  if (n == 0 && !live) return ux_cp_fail(c, 429, "runtime limit reached for tenant %s", tenant);
  if (n == 0 || ux_runtimes_of_workspace(c->cp->rts, wsid, sb) == 0) {
    if (n == 1) ux_sandboxes_remove(c->cp->srv->store, sb);
    if (ux_runtimes_of_workspace(c->cp->rts, wsid, sb) != 0)
      return ux_cp_fail(c, 503, "the workspace's runtime is starting or stopping; retry");
    goto reuse;
  }
  int rc = ux_cp_ws_dir(c->cp, wsid, dir, sizeof dir) == 0
           ? ux_runtimes_start(c->cp->rts, sb, wsid, dir, tpl, err, sizeof err) : -1;
  if (rc != 0) {
    ux_sandboxes_remove(c->cp->srv->store, sb);
    if (rc == -2) return ux_cp_fail(c, 429, "runtime capacity is exhausted; this is transient, retry later");
    if (rc == -3 && ux_runtimes_of_workspace(c->cp->rts, wsid, sb) == 0) goto reuse;
    fprintf(stderr, "unsandboxd: runtime for %s: %s\n", wsid, err);
    return ux_cp_fail(c, 503, "cannot start a runtime: %s", err);
  }
reuse:;
  ux_rt_info info;
  if (!wait && ux_runtimes_info(c->cp->rts, sb, &info) == 0 && info.status == UX_RT_PENDING)
    return pending(c, &info, owner);
  return lease_when_ready(c, sb, owner);
}

int ux_cp_sb_create(ux_cp_call *c) {
  const char *wsid, *tpl;
  int wait;
  if (atomic_load(&c->cp->shutting_down)) return ux_cp_fail(c, 503, "the control plane is shutting down");
  if (json_object_get(c->body, "image") || json_object_get(c->body, "images"))
    return ux_cp_fail(c, 400, "images are not chosen per sandbox; use template_id");
  if (ux_cp_str(c, "workspace_id", 1, NULL, 64, &wsid) || ux_cp_str(c, "template_id", 0, "default", 64, &tpl) ||
      ux_cp_bool(c, "wait", 1, &wait))
    return -1;
  if (!unsb_valid_workspace_id(wsid)) return ux_cp_fail(c, 400, "invalid workspace_id: %s", wsid);
  json_t *ws = ux_cp_own_workspace(c, wsid);
  if (!ws) return -1;
  int rc;
  if (!ux_cp_template_allowed(c->cp, c->id.tenant, tpl)) rc = ux_cp_fail(c, 400, "unknown template: %s", tpl);
  else rc = start(c, ws, tpl, wait);
  json_decref(ws);
  return rc;
}

int ux_cp_sb_get(ux_cp_call *c) {
  ux_rt_info info;
  if (ux_runtimes_info(c->cp->rts, c->param[0], &info) == 0) {
    if (info.status == UX_RT_PENDING)
      return ux_cp_ok(c, 200, json_pack("{s:s,s:s,s:s,s:s}", "id", info.sb_id, "status", "pending",
                                        "workspace_id", info.ws_id, "template", info.template_id));
    if (info.status == UX_RT_RUNNING) return ux_cp_ok(c, 200, view(c, &info, 0, NULL));
  }
  json_t *rec = ux_sandboxes_get(c->cp->srv->store, c->param[0]);
  const char *st = json_string_value(json_object_get(rec, "status"));
  json_t *j = json_pack("{s:s,s:s}", "id", c->param[0],
                        "status", st && !strcmp(st, "failed") ? "failed" : st && !strcmp(st, "live")
                                  ? "unknown" : "released");
  json_decref(rec);
  return ux_cp_ok(c, 200, j);
}

int ux_cp_sb_delete(ux_cp_call *c) {
  ux_runtimes_release(c->cp->rts, c->param[0]);
  if (ux_sandboxes_end(c->cp->srv->store, c->param[0], "released", (long long)ux_now()) < 0)
    return ux_cp_store_failed(c, "sandbox write failed");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:b}", "id", c->param[0], "released", 1));
}

int ux_cp_sb_token(ux_cp_call *c) {
  ux_rt_info info;
  if (ux_runtimes_info(c->cp->rts, c->param[0], &info) != 0 || info.status != UX_RT_RUNNING)
    return ux_cp_fail(c, 404, "runtime %s not found", c->param[0]);
  ux_runtimes_touch(c->cp->rts, c->param[0]);
  json_t *ws = ux_workspaces_get(c->cp->srv->store, info.ws_id);
  char *token = ux_cp_scoped_token(c->cp, "sandbox", info.sb_id,
                                   json_string_value(json_object_get(ws, "owner")));
  json_decref(ws);
  if (!token) return ux_cp_fail(c, 500, "out of memory");
  json_t *j = json_pack("{s:s,s:s,s:i}", "id", info.sb_id, "access_token", token,
                        "access_token_expires_in", c->cp->token_ttl_s);
  free(token);
  return ux_cp_ok(c, 200, j);
}

int ux_cp_sb_list(ux_cp_call *c) {
  json_t *rows = ux_sandboxes_live(c->cp->srv->store);
  if (!rows) return ux_cp_store_failed(c, "sandbox list failed");
  json_t *out = json_array(), *row;
  size_t i;
  json_array_foreach(rows, i, row) {
    json_t *ws = json_pack("{s:O,s:O,s:O}", "id", json_object_get(row, "wid"),
                           "tenant", json_object_get(row, "tenant"), "subject", json_object_get(row, "subject"));
    ux_rt_info info;
    if (ux_cp_visible(&c->id, ws) &&
        ux_runtimes_info(c->cp->rts, json_string_value(json_object_get(row, "id")), &info) == 0 &&
        (info.status == UX_RT_RUNNING || info.status == UX_RT_PENDING))
      json_array_append_new(out, view(c, &info, 0, NULL));
    json_decref(ws);
  }
  json_decref(rows);
  return ux_cp_ok(c, 200, json_pack("{s:o}", "sandboxes", out));
}
