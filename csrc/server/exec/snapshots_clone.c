/*
** POST /snapshots in both body forms of spec §4.4 ({source_type,
** source_id}, the C library's; {session_id | service_id}, the Python
** SDK's), and POST /snapshots/{id}/clone: a new session or service whose
** volume is made fresh and filled from the snapshot's archive by the
** agent (ux_restore_volume), exactly as a restore fills one. A service
** clone takes the bootstrap of the snapshot's service when that service
** still exists (the snapshot itself holds files only).
*/
#include <stdio.h>
#include <string.h>

#include "server/exec/archives.h"
#include "server/ids.h"
#include "server/exec/routes.h"
#include "server/store/store.h"

int ux_h_snapshot_create(ux_req *r, const char *unused) {
  (void)unused;
  const char *type = NULL, *source = NULL;
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  const char *st = json_string_value(json_object_get(body, "source_type"));
  const char *sid = json_string_value(json_object_get(body, "source_id"));
  const char *sess = json_string_value(json_object_get(body, "session_id"));
  const char *svc = json_string_value(json_object_get(body, "service_id"));
  if (st && sid && !sess && !svc && (!strcmp(st, "session") || !strcmp(st, "service"))) {
    type = st;
    source = sid;
  } else if (!st && !sid && (!sess != !svc)) {
    type = sess ? "session" : "service";
    source = sess ? sess : svc;
  }
  int rc;
  if (!type)
    rc = ux_reply_error(r, 400, "bad_request", "send {source_type: session|service, source_id}"
                                               " or one of session_id, service_id");
  else if (!ux_valid_id(source))
    rc = ux_reply_error(r, 404, "not_found", "no such %s", type);
  else
    rc = ux_snapshot_take(r, !strcmp(type, "session") ? "session" : "service", source);
  json_decref(body);
  return rc;
}

/* Fills the new volume kind/id from the snapshot's archive; 0 or -1
** after a reply (the volume is removed again). */
static int fill(ux_req *r, const char *kind, const char *id, const char *snap) {
  char arch[4200], dir[4200], err[512] = "";
  if (ux_make_volume(r, kind, id, NULL) < 0) return -1;
  ux_hold hold;
  ux_hold_init(&hold, r, UX_LEDGER_VOLUME, "restores", id);
  int filled = ux_snapshot_archive_path(r, snap, arch, sizeof arch) == 0 &&
               ux_resource_dir(r->srv, kind, id, dir, sizeof dir) == 0
             ? ux_restore_volume(arch, dir, &hold, err, sizeof err) : -1;
  if (filled != 0) {
    fprintf(stderr, "unsandboxd: clone of %s failed: %s\n", snap, filled == -3 ? "no storage left" : err);
    ux_remove_volume(r->srv, kind, id);
    return filled == -3 ? ux_reply_hold(r, &hold)
                        : ux_reply_error(r, 500, "internal_error", "clone failed: %s", err);
  }
  return 0;
}

static int clone_service(ux_req *r, json_t *snap, json_t *body, const char *snap_id) {
  const char *name;
  char id[64];
  json_t *ports = json_object_get(body, "ports");
  if (ux_get_str(r, body, "name", 0, NULL, &name) < 0 || ux_check_array(r, ports, "ports", 1) < 0)
    return -1;
  if (name && !ux_valid_id(name))
    return ux_reply_error(r, 400, "bad_request", "name may only use A-Z a-z 0-9 . _ -");
  json_t *src = NULL;
  const char *st = json_string_value(json_object_get(snap, "source_type"));
  const char *sid = json_string_value(json_object_get(snap, "source_id"));
  if (st && sid && !strcmp(st, "service")) src = ux_store_get(r->srv->store, "services", sid, r->owner);
  ux_random_id(id, sizeof id, "unsb-service-", 12);
  int rc = fill(r, "service", id, snap_id);
  if (rc == 0) {
    const char *mode = json_string_value(json_object_get(src, "network_mode"));
    ux_service_fields f = { name, json_string_value(json_object_get(src, "bootstrap")),
                            mode && !strcmp(mode, "semitrusted"), 1, 0, ports, NULL };
    rc = ux_service_store(r, id, &f);
  }
  json_decref(src);
  return rc;
}

static int clone_session(ux_req *r, json_t *body, const char *snap_id) {
  const char *shell;
  char id[64];
  if (ux_get_str(r, body, "shell", 0, "bash", &shell) < 0 || ux_check_shell(r, shell, NULL) < 0) return -1;
  ux_random_id(id, sizeof id, "unsb-session-", 12);
  if (fill(r, "session", id, snap_id) < 0) return -1;
  return ux_session_store(r, id, shell, NULL, 0, 1, 3600);
}

int ux_h_snapshot_clone(ux_req *r, const char *id) {
  const char *type;
  json_t *snap = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!snap) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  json_t *body = ux_body_object(r, 0);
  int rc = -1;
  /* clone_type is the Lua SDK's name for type (lenient mode only) */
  const char *key = body && !json_object_get(body, "type") && r->srv->cfg.lenient &&
                    json_object_get(body, "clone_type") ? "clone_type" : "type";
  if (body && ux_get_str(r, body, key, 1, NULL, &type) == 0) {
    if (!strcmp(type, "session")) rc = clone_session(r, body, id);
    else if (!strcmp(type, "service")) rc = clone_service(r, snap, body, id);
    else rc = ux_reply_error(r, 400, "bad_request", "field '%s' must be session or service", key);
  }
  json_decref(body);
  json_decref(snap);
  return rc;
}
