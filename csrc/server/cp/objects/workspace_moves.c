/*
** POST …/objects/import and …/objects/export (spec §4.3, §5.3): objects
** moved between the owner's partition and a workspace, with the
** workspace's own token. The owner is the token's (a token without one
** cannot move objects; a body owner must be the same); the workspace is
** touched only through its running runtime's agent (cp/objects/transfer_ws.c), never
** by a path the server opens; without a runtime the answer is 400.
*/
#include <stdio.h>
#include <string.h>

#include "server/cp/objects/routes.h"
#include "server/cp/objects/routes.h"
#include "server/cp/objects/request.h"
#include "server/cp/objects/transfer.h"
#include "server/runtime/runtime.h"
#include "server/store/ledger.h"

#define NO_OWNER "workspace access token carries no owner claim; re-issue it with POST " \
  "/v1/workspaces for an owner (a tenant credential with X-Acting-Subject, or an admin's owner)"

/* The locator of an import/export body, owned by the token's owner;
** scope must be `want`. 0, or -1 with the reply. */
static int ws_target(ux_cp_call *c, ux_obj_scope want, ux_objloc *l, char key[UX_OBJ_KEY_MAX + 1]) {
  char err[512];
  const char *sent = NULL;
  size_t sent_len = 0;
  memset(l, 0, sizeof *l);
  if (!c->id.owner[0]) return ux_cp_fail(c, 400, NO_OWNER);
  int t = ux_objreq_json_get(c->body, "owner", &sent, &sent_len);
  if (t != 0 && (t < 0 || sent_len != strlen(c->id.owner) || memcmp(sent, c->id.owner, sent_len) != 0))
    return ux_cp_fail(c, 400, "owner does not match the workspace access token");
  if (ux_objreq_locator(ux_objreq_json_get, c->body, 0, l, err, sizeof err) < 0)
    return ux_cp_fail(c, 400, "%s", err);
  if (l->scope != want)
    return ux_cp_fail(c, 400, "%s takes scope '%s'", want == UX_OBJ_UPLOAD ? "import" : "export",
                      ux_objloc_scope_name(want));
  if (strlen(c->id.owner) >= sizeof l->owner) return ux_cp_fail(c, 400, NO_OWNER);
  snprintf(l->owner, sizeof l->owner, "%s", c->id.owner);
  if (ux_objloc_key(l, key, UX_OBJ_KEY_MAX + 1) < 0) return ux_cp_fail(c, 400, "object key is too long");
  return 0;
}

/* A workspace path field of the body (cp/objects/locator.h rules). */
static int ws_path(ux_cp_call *c, const char *field, const char *under, int exact,
                   char out[UX_OBJ_PATH_MAX + 1]) {
  char err[256];
  const char *s = NULL;
  size_t len = 0;
  int t = ux_objreq_json_get(c->body, field, &s, &len);
  if (t < 0) return ux_cp_fail(c, 400, "%s must be a string", field);
  if (ux_objloc_wspath(field, t ? s : NULL, len, under, exact, out, err, sizeof err) < 0)
    return ux_cp_fail(c, 400, "%s", err);
  return 0;
}

/* The workspace's running runtime (a handle for calls), or NULL after
** the spec's 400. */
static ux_rt *running(ux_cp_call *c, const char *what) {
  char sb[32];
  ux_rt *rt = NULL;
  if (ux_runtimes_of_workspace(c->cp->rts, c->param[0], sb) == 0) rt = ux_runtimes_get(c->cp->rts, sb);
  if (!rt) ux_cp_fail(c, 400, "%s requires a running Runtime for %s", what, c->param[0]);
  return rt;
}

int ux_cp_obj_import(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1], dest[UX_OBJ_PATH_MAX + 1], err[512];
  if (ws_target(c, UX_OBJ_UPLOAD, &l, key) || ws_path(c, "destination", "data/uploads", 0, dest)) return -1;
  ux_rt *rt = running(c, "import");
  if (!rt) return -1;
  if (ux_cp_obj_gate(c)) { ux_rt_put(rt); return -1; }
  int fd, st;
  ux_obj_meta m;
  json_t *file = NULL;
  int rc = ux_objstore_open_read(c->cp->objects, ux_objloc_bucket(l.scope), key, &fd, &m);
  st = rc == UX_OBJ_OK ? ux_objxfer_import(rt, fd, &m, dest, &file, err, sizeof err) : -1;
  ux_cp_obj_gate_end(c);
  ux_rt_put(rt);
  if (rc != UX_OBJ_OK) return ux_cp_obj_fail(c, rc);
  if (st != 0) return ux_cp_fail(c, st, "%s", err);
  json_t *v = json_pack("{s:s, s:s, s:{s:s, s:s, s:I, s:s}, s:o}", "workspace_id", c->param[0],
                        "destination", dest, "object", "bucket", ux_objloc_bucket(l.scope), "key", key,
                        "bytes", (json_int_t)m.bytes, "sha256", m.sha256, "file", file);
  return ux_cp_ok(c, 201, v);
}

int ux_cp_obj_export(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1], wspath[UX_OBJ_PATH_MAX + 1], err[512];
  int archive;
  if (ws_target(c, UX_OBJ_AGENT, &l, key) || ux_cp_bool(c, "archive", 0, &archive) ||
      ws_path(c, "workspace_path", "artifacts", archive, wspath))
    return -1;
  ux_rt *rt = running(c, "export");
  if (!rt) return -1;
  if (ux_cp_obj_gate(c)) { ux_rt_put(rt); return -1; }
  ux_objput *put;
  ux_obj_meta m;
  int st = 500;
  char party[UX_LEDGER_PARTY_MAX], tenant[UX_OBJ_OWNER_MAX + 1];
  ux_cp_obj_party(l.owner, party, sizeof party, tenant, sizeof tenant);
  int rc = ux_objput_begin(c->cp->objects, party, ux_objloc_bucket(l.scope), key,
                           archive ? "application/gzip" : "application/octet-stream",
                           UX_OBJ_MAX_BYTES, 0, NULL, &put);
  if (rc == UX_OBJ_OK) {
    st = ux_objxfer_export(rt, wspath, archive, put, err, sizeof err);
    if (st == 0) rc = ux_objput_commit(put, &m);
    else {
      rc = ux_objput_failure(put);                /* the ledger's refusal, when that stopped it */
      if (rc != UX_OBJ_EQUOTA && rc != UX_OBJ_EBUDGET) rc = UX_OBJ_OK;
      ux_objput_abort(put);
    }
  }
  ux_cp_obj_gate_end(c);
  ux_rt_put(rt);
  if (rc != UX_OBJ_OK) return ux_cp_obj_put_fail(c, rc, tenant);
  if (st != 0) return ux_cp_fail(c, st, "%s", err);
  json_t *v = json_pack("{s:s, s:s, s:b, s:{s:s, s:s, s:s, s:I, s:s}}", "workspace_id", c->param[0],
                        "workspace_path", wspath, "archive", archive, "object",
                        "scope", "agent", "bucket", ux_objloc_bucket(l.scope), "key", key,
                        "bytes", (json_int_t)m.bytes, "sha256", m.sha256);
  return ux_cp_ok(c, 201, v);
}
