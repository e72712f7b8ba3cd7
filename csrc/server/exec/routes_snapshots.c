/*
** Snapshots: tar.gz archives of a session's or service's work directory
** in DATA/snapshots/<id>.tar.gz, with their metadata in the store.
** Restore replaces the source's work directory whole (snapshot.c); a
** locked snapshot cannot be deleted.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/http/routes.h"
#include "server/sandbox/snapshot.h"
#include "server/store/store.h"

static const char *table_of(const char *source_type) {
  return !strcmp(source_type, "session") ? "sessions" : "services";
}

static int archive_path(ux_req *r, const char *id, char *out, size_t len) {
  return ux_path(out, len, "%s/snapshots/%s.tar.gz", r->srv->cfg.data, id);
}

int ux_snapshot_take(ux_req *r, const char *type, const char *source_id) {
  const char *name;
  int hot;
  long size = 0;
  char id[64], src[4200], arch[4200], dir[4200], err[512];
  json_t *source = ux_store_get(r->srv->store, table_of(type), source_id, r->owner);
  if (!source) return ux_reply_error(r, 404, "not_found", "no such %s", type);
  json_decref(source);
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  if (ux_get_str(r, body, "name", 0, NULL, &name) < 0 || ux_get_bool(r, body, "hot", 0, &hot) < 0) {
    json_decref(body);
    return -1;
  }
  ux_random_id(id, sizeof id, "unsb-snapshot-", 12);
  if (ux_workdir(r->srv, type, source_id, src, sizeof src) < 0 ||
      ux_path(dir, sizeof dir, "%s/snapshots", r->srv->cfg.data) < 0 ||
      ux_mkdir_p(dir, 0700) < 0 || archive_path(r, id, arch, sizeof arch) < 0 ||
      ux_snapshot_create(src, arch, &size, err, sizeof err) < 0) {
    json_decref(body);
    fprintf(stderr, "unsandboxd: snapshot of %s failed: %s\n", source_id, err);
    return ux_reply_error(r, 500, "internal_error", "snapshot failed");
  }
  json_t *doc = json_object();
  json_object_set_new(doc, "id", json_string(id));
  json_object_set_new(doc, "snapshot_id", json_string(id));
  json_object_set_new(doc, "name", name ? ux_json_bytes(name, strlen(name)) : json_string(id));
  json_object_set_new(doc, "source_type", json_string(type));
  json_object_set_new(doc, "source_id", json_string(source_id));
  json_object_set_new(doc, "status", json_string("ready"));
  json_object_set_new(doc, "size_bytes", json_integer(size));
  json_object_set_new(doc, "hot", json_boolean(hot));
  json_object_set_new(doc, "locked", json_false());
  json_object_set_new(doc, "created_at", json_integer(ux_now()));
  json_decref(body);
  if (ux_store_put(r->srv->store, "snapshots", id, r->owner, "ready", doc) < 0) {
    unlink(arch);
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "cannot store the snapshot");
  }
  return ux_reply_json(r, 201, doc);
}

int ux_h_snapshots_list(ux_req *r, const char *id) {
  (void)id;
  json_t *arr = ux_store_list(r->srv->store, "snapshots", r->owner);
  json_t *j = json_object();
  json_object_set_new(j, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(j, "snapshots", arr);
  return ux_reply_json(r, 200, j);
}

int ux_h_snapshot_get(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  return ux_reply_json(r, 200, doc);
}

int ux_h_snapshot_delete(ux_req *r, const char *id) {
  char arch[4200];
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  int locked = json_is_true(json_object_get(doc, "locked"));
  json_decref(doc);
  if (locked) return ux_reply_error(r, 409, "locked", "the snapshot is locked; unlock it first");
  ux_store_delete(r->srv->store, "snapshots", id, r->owner);
  if (archive_path(r, id, arch, sizeof arch) == 0) unlink(arch);
  return ux_reply_deleted(r, "id", id);
}

int ux_h_snapshot_restore(ux_req *r, const char *id) {
  char arch[4200], target[4200], err[512] = "";
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  const char *type = json_string_value(json_object_get(doc, "source_type"));
  const char *source_id = json_string_value(json_object_get(doc, "source_id"));
  json_t *source = ux_store_get(r->srv->store, table_of(type), source_id, r->owner);
  if (!source) {
    json_decref(doc);
    return ux_reply_error(r, 409, "source_missing", "the snapshot's %s no longer exists", type);
  }
  json_decref(source);
  if (archive_path(r, id, arch, sizeof arch) < 0 ||
      ux_workdir(r->srv, type, source_id, target, sizeof target) < 0 ||
      ux_snapshot_restore(arch, target, err, sizeof err) < 0) {
    fprintf(stderr, "unsandboxd: restore of %s failed: %s\n", id, err);
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "restore failed; nothing was changed");
  }
  json_t *j = json_object();
  json_object_set_new(j, "id", json_string(id));
  json_object_set_new(j, "status", json_string("restored"));
  json_object_set(j, "source_type", json_object_get(doc, "source_type"));
  json_object_set(j, "source_id", json_object_get(doc, "source_id"));
  json_decref(doc);
  return ux_reply_json(r, 200, j);
}

static int set_lock(ux_req *r, const char *id, int locked) {
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  json_object_set_new(doc, "locked", json_boolean(locked));
  if (ux_store_put(r->srv->store, "snapshots", id, r->owner, "ready", doc) < 0) {
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "cannot update the snapshot");
  }
  return ux_reply_json(r, 200, doc);
}

int ux_h_snapshot_lock(ux_req *r, const char *id) { return set_lock(r, id, 1); }
int ux_h_snapshot_unlock(ux_req *r, const char *id) { return set_lock(r, id, 0); }
