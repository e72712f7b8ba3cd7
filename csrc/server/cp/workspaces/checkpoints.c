/*
** Checkpoints of a workspace (spec §4.1, §5.2): gzip tars of its tree
** (everything but .sandbox), made and restored by the agent inside the
** workspace's running runtime, as the sandbox's own user, and kept in the
** object store (bucket sandbox-workspaces, key
** workspaces/<ws>/checkpoints/<cp>.tar.gz). The server only moves bytes
** between the agent's pipe and the store (cp/objects/transfer.h); a hostile archive
** is refused by the agent and leaves the tree as it was.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server/cp/workspaces/checkpoints.h"
#include "server/cp/auth/auth.h"
#include "server/cp/objects/routes.h"
#include "server/cp/objects/store.h"
#include "server/cp/objects/transfer.h"
#include "server/cp/tables/workspaces.h"
#include "server/runtime/runtime.h"
#include "server/fsutil.h"
#include "server/ids.h"
#include "server/sandbox/volume.h"
#include "server/store/ledger.h"

#define BUCKET "sandbox-workspaces"
#define SUFFIX ".tar.gz"

static int key_of(const char *ws, const char *cp, char *out, size_t len) {
  return ux_path(out, len, "workspaces/%s/checkpoints/%s" SUFFIX, ws, cp);
}

/* The running runtime of ws (a handle to put back), or NULL after the
** spec's 400 naming the operation. */
static ux_rt *runtime_or_400(ux_cp_call *c, const char *ws, const char *op) {
  char sb[32];
  ux_rt *rt = ux_runtimes_of_workspace(c->cp->rts, ws, sb) == 0 ? ux_runtimes_get(c->cp->rts, sb) : NULL;
  if (!rt) ux_cp_fail(c, 400, "%s requires a running Runtime for %s", op, ws);
  return rt;
}

/* The largest checkpoint: what a workspace's volume can hold. */
static unsigned long long max_bytes(void) {
  unsigned long long v = ux_volume_disk_bytes();
  return v ? v : UX_OBJ_MAX_BYTES;
}

/* The tenant whose storage a workspace's checkpoints take. */
static void tenant_of(ux_cp_call *c, const char *ws, char *tenant, size_t len) {
  if (!ux_workspaces_tenant(c->cp->srv->store, ws, tenant, len))
    snprintf(tenant, len, "%s", ux_cp_home_tenant(&c->id));
}

int ux_cp_checkpoint_create(ux_cp_call *c) {
  const char *ws = c->param[0];
  char cp[64], rnd[16], key[256], err[512] = "", tenant[64], party[UX_LEDGER_PARTY_MAX];
  ux_rt *rt = runtime_or_400(c, ws, "checkpoint");
  if (!rt) return -1;
  ux_random_id(rnd, sizeof rnd, "", 4);
  snprintf(cp, sizeof cp, "cp-%ld-%s", ux_now(), rnd);
  key_of(ws, cp, key, sizeof key);
  tenant_of(c, ws, tenant, sizeof tenant);
  ux_ledger_tenant(party, sizeof party, tenant);
  ux_objput *put = NULL;
  ux_obj_meta m;
  /* its length is known only at the end: the reservation grows ahead of the bytes */
  int rc = ux_objput_begin(c->cp->objects, party, BUCKET, key, "application/gzip", max_bytes(), 0, NULL, &put);
  json_t *req = json_pack("{s:s,s:[s],s:I}", "op", "checkpoint", "exclude", ".sandbox",
                          "max_bytes", (json_int_t)max_bytes());
  int status = rc != UX_OBJ_OK || !req ? 500
             : ux_objxfer_agent_out(rt, req, put, "checkpoint", max_bytes(), NULL, err, sizeof err);
  json_decref(req);
  ux_rt_put(rt);
  if (status != 0) {
    int why = put ? ux_objput_failure(put) : rc;
    if (put) ux_objput_abort(put);
    if (why == UX_OBJ_EQUOTA || why == UX_OBJ_EBUDGET) return ux_cp_obj_put_fail(c, why, tenant);
    return ux_cp_fail(c, status, "%s", err[0] ? err : "cannot store the checkpoint");
  }
  if ((rc = ux_objput_commit(put, &m)) != UX_OBJ_OK)
    return rc == UX_OBJ_ESTORE ? ux_cp_store_failed(c, "checkpoint write failed")
                               : ux_cp_fail(c, 500, "cannot store the checkpoint");
  return ux_cp_ok(c, 201, json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "checkpoint_id", cp,
    "workspace_id", ws, "bucket", BUCKET, "key", key, "bytes", (json_int_t)m.bytes,
    "sha256", m.sha256, "content_type", "application/gzip"));
}

int ux_cp_checkpoint_list(ux_cp_call *c) {
  const char *ws = c->param[0];
  char base[128];
  ux_obj_meta *v = NULL;
  size_t n = 0;
  snprintf(base, sizeof base, "workspaces/%s/checkpoints", ws);
  if (ux_objstore_list(c->cp->objects, BUCKET, base, UX_OBJ_LIST_MAX, &v, &n) != UX_OBJ_OK)
    return ux_cp_store_failed(c, "checkpoint list failed");
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++) {
    const char *name = strrchr(v[i].key, '/') + 1;
    size_t len = strlen(name);
    if (len <= strlen(SUFFIX) || strcmp(name + len - strlen(SUFFIX), SUFFIX) != 0) continue;
    json_array_append_new(arr, json_pack("{s:s%,s:s,s:I,s:o}", "checkpoint_id", name,
      len - strlen(SUFFIX), "key", v[i].key, "bytes", (json_int_t)v[i].bytes,
      "last_modified", ux_cp_time(v[i].last_modified)));
  }
  free(v);
  return ux_cp_ok(c, 200, json_pack("{s:s,s:o}", "workspace_id", ws, "checkpoints", arr));
}

int ux_cp_checkpoint_restore(ux_cp_call *c) {
  const char *ws = c->param[0], *cp = c->param[1], *want;
  char key[256], err[512] = "";
  if (ux_cp_str(c, "sha256", 0, NULL, 64, &want)) return -1;
  ux_rt *rt = runtime_or_400(c, ws, "restore");
  if (!rt) return -1;
  key_of(ws, cp, key, sizeof key);
  int fd = -1;
  ux_obj_meta m;
  int rc = ux_objstore_open_read(c->cp->objects, BUCKET, key, &fd, &m);
  if (rc != UX_OBJ_OK) {
    ux_rt_put(rt);
    return rc == UX_OBJ_ENOENT ? ux_cp_fail(c, 404, "object not found")
                               : ux_cp_store_failed(c, "checkpoint read failed");
  }
  if (want && *want && strcasecmp(want, m.sha256) != 0) {
    close(fd);
    ux_rt_put(rt);
    return ux_cp_fail(c, 400, "sha256 mismatch for checkpoint %s", cp);
  }
  json_t *req = json_pack("{s:s,s:I}", "op", "restore", "max_bytes", (json_int_t)max_bytes());
  json_t *report = NULL;
  int status = req ? ux_objxfer_agent_in(rt, req, fd, "restore", &report, err, sizeof err) : 500;
  json_decref(req);
  ux_rt_put(rt);
  if (status != 0) return ux_cp_fail(c, status, "%s", err[0] ? err : "restore failed");
  json_object_set_new(report, "checkpoint_id", json_string(cp));
  json_object_set_new(report, "workspace_id", json_string(ws));
  json_object_set_new(report, "bucket", json_string(BUCKET));
  json_object_set_new(report, "key", json_string(key));
  json_object_set_new(report, "sha256", json_string(m.sha256));
  return ux_cp_ok(c, 200, report);
}

/* A checkpoint's delete takes its history with it: the platform's
** closed CheckpointDeleted schema has history_retained fixed to false. */
int ux_cp_checkpoint_delete(ux_cp_call *c) {
  char key[256];
  key_of(c->param[0], c->param[1], key, sizeof key);
  int rc = ux_objstore_delete(c->cp->objects, BUCKET, key, 1);
  if (rc == UX_OBJ_ENOENT) return ux_cp_fail(c, 404, "object not found");
  if (rc != UX_OBJ_OK) return ux_cp_store_failed(c, "checkpoint delete failed");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:s,s:b,s:b}", "workspace_id", c->param[0],
    "checkpoint_id", c->param[1], "deleted", 1, "history_retained", 0));
}

long long ux_cp_checkpoints_purge(ux_cp *cp, const char *ws) {
  char base[128];
  ux_obj_meta *v = NULL;
  size_t n = 0;
  long long purged = 0;
  snprintf(base, sizeof base, "workspaces/%s/checkpoints", ws);
  if (ux_objstore_list(cp->objects, BUCKET, base, UX_OBJ_LIST_MAX, &v, &n) != UX_OBJ_OK) return -1;
  for (size_t i = 0; i < n; i++)
    if (ux_objstore_delete(cp->objects, BUCKET, v[i].key, 1) == UX_OBJ_OK) purged++;
  free(v);
  return purged;
}
