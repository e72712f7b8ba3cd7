/*
** Snapshots: tar.gz archives of a session's or service's volume in
** DATA/snapshots/<id>.tar.gz, with their metadata in the store. Both the
** archive and the restore are made inside a sandbox (archive.h); root
** handles the archive file only. A snapshot freezes the volume's runs; a
** restore kills them (a service's bootstrap starts again afterwards) and
** replaces the tree whole or not at all. A locked snapshot cannot be
** deleted. Rows change by conditional statements only (store.h): a
** snapshot is stored only while its source exists, deleted only while
** unlocked, and locked only while it exists.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/exec/living.h"
#include "server/exec/archives.h"
#include "server/exec/svc.h"
#include "server/fsutil.h"
#include "server/jsonw.h"
#include "server/ids.h"
#include "server/exec/routes.h"
#include "server/sandbox/archive.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "server/store/store.h"

static const char *table_of(const char *source_type) {
  return !strcmp(source_type, "session") ? "sessions" : "services";
}

static int archive_path(ux_req *r, const char *id, char *out, size_t len) {
  return ux_path(out, len, "%s/snapshots/%s.tar.gz", r->srv->cfg.data, id);
}

int ux_snapshot_archive_path(ux_req *r, const char *id, char *out, size_t len) {
  return archive_path(r, id, out, len);
}

int ux_resource_frozen(const json_t *doc) {
  const char *status = json_string_value(json_object_get(doc, "status"));
  return json_is_true(json_object_get(doc, "frozen")) || (status && !strcmp(status, "frozen"));
}

int ux_snapshot_take(ux_req *r, const char *type, const char *source_id) {
  const char *name;
  int hot;
  long size = 0;
  char id[64], dir[4200], arch[4200], err[512] = "";
  ux_hold hold;
  json_t *source = ux_store_get(r->srv->store, table_of(type), source_id, r->owner);
  if (!source) return ux_reply_error(r, 404, "not_found", "no such %s", type);
  int frozen = ux_resource_frozen(source);
  json_decref(source);
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  if (ux_get_str(r, body, "name", 0, NULL, &name) < 0 || ux_get_bool(r, body, "hot", 0, &hot) < 0) {
    json_decref(body);
    return -1;
  }
  ux_random_id(id, sizeof id, "unsb-snapshot-", 12);
  ux_hold_init(&hold, r, UX_LEDGER_SNAPSHOT, "snapshots", id);
  int rc = -1;
  if (ux_path(dir, sizeof dir, "%s/snapshots", r->srv->cfg.data) != 0 || ux_mkdir_p(dir, 0700) != 0)
    snprintf(err, sizeof err, "cannot create the snapshots directory: %s", strerror(errno));
  else if (archive_path(r, id, arch, sizeof arch) != 0 ||
           ux_resource_dir(r->srv, type, source_id, dir, sizeof dir) != 0)
    snprintf(err, sizeof err, "the data directory's path is too long");
  else {
    /* the living sandbox is frozen while the agent archives: its health
    ** checks wait (a frozen one stays paused) */
    ux_living_pause(r->srv, source_id, 1);
    rc = ux_archive_volume(dir, arch, &size, frozen, &hold, err, sizeof err);
    if (!frozen) ux_living_pause(r->srv, source_id, 0);
  }
  if (rc != 0) {
    json_decref(body);
    if (rc == -2) return ux_reply_error(r, 404, "not_found", "no such %s", type);
    if (rc == -3) return ux_reply_hold(r, &hold);
    fprintf(stderr, "unsandboxd: snapshot of %s failed: %s\n", source_id, err);
    return ux_reply_error(r, 500, "internal_error", "snapshot failed: %s", err);
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
  /* stored only while its source still exists (one statement): a source
  ** deleted during the archive leaves no snapshot and no archive; the
  ** row commits the archive's ledger item (archives.h) */
  int stored = ux_store_insert_child(r->srv->store, "snapshots", id, r->owner, "ready", doc,
                                     table_of(type), source_id);
  if (stored != 1) {
    ux_ledger_cancel(r->srv->store, hold.item);
    unlink(arch);
    json_decref(doc);
    return stored == 0 ? ux_reply_error(r, 404, "not_found", "no such %s", type)
                       : ux_reply_error(r, 500, "internal_error", "cannot store the snapshot");
  }
  return ux_reply_json(r, 201, doc);
}

/* A snapshot is shown as stored: its text goes into the list as it is. */
static int list_entry(void *ctx, const char *text, size_t len) {
  ux_jw_raw_value(ctx, text, len);
  return 0;
}

int ux_h_snapshots_list(ux_req *r, const char *id) {
  (void)id;
  ux_jw w;
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  int n = ux_store_each(r->srv->store, "snapshots", r->owner, list_entry, &w);
  ux_jw_close(&w);
  if (n < 0) { ux_jw_free(&w); return ux_reply_error(r, 500, "internal_error", "cannot list the snapshots"); }
  return ux_reply_list(r, "snapshots", &w, n);
}

int ux_h_snapshot_get(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  return ux_reply_json(r, 200, doc);
}

int ux_h_snapshot_delete(ux_req *r, const char *id) {
  char arch[4200];
  /* "not locked" and the deletion are one transaction: a lock racing it
  ** either comes first (409 here) or finds no row (404 there) */
  int rc = ux_store_delete_unless(r->srv->store, "snapshots", id, r->owner, "locked");
  if (rc == UX_STORE_ABSENT) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  if (rc == UX_STORE_REFUSED)
    return ux_reply_error(r, 409, "locked", "the snapshot is locked; unlock it first");
  if (rc != UX_STORE_DELETED) return ux_reply_error(r, 500, "internal_error", "cannot delete the snapshot");
  /* the row is gone first, so no request finds a snapshot without its archive */
  if (archive_path(r, id, arch, sizeof arch) == 0 && unlink(arch) != 0 && errno != ENOENT)
    fprintf(stderr, "unsandboxd: cannot remove %s: %s\n", arch, strerror(errno));
  return ux_reply_deleted(r, "id", id);
}

int ux_h_snapshot_restore(ux_req *r, const char *id) {
  char arch[4200], dir[4200], err[512] = "";
  ux_hold hold;
  ux_hold_init(&hold, r, UX_LEDGER_VOLUME, "restores", id);
  json_t *doc = ux_store_get(r->srv->store, "snapshots", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  const char *type = json_string_value(json_object_get(doc, "source_type"));
  const char *source_id = json_string_value(json_object_get(doc, "source_id"));
  json_t *source = type && source_id ? ux_store_get(r->srv->store, table_of(type), source_id, r->owner) : NULL;
  if (!source) {
    json_decref(doc);
    return ux_reply_error(r, 409, "source_missing", "the snapshot's %s no longer exists",
                          type ? type : "source");
  }
  int service = !strcmp(type, "service");
  if (service) ux_svcs_stop(r->srv->svcs, source_id);     /* started again below */
  else ux_living_end(r->srv, source_id);   /* a session's starts again at its next use */
  int rc = archive_path(r, id, arch, sizeof arch) == 0 &&
           ux_resource_dir(r->srv, type, source_id, dir, sizeof dir) == 0
           ? ux_restore_volume(arch, dir, &hold, err, sizeof err) : -1;
  char why[200];
  /* restored either way; a bootstrap the budget has no room for says so
  ** in the service's log and the start-up log */
  if (service && ux_services_restart(r->srv, source, r->owner, why, sizeof why) == UX_SVCS_NOMEM)
    fprintf(stderr, "unsandboxd: service %s stays stopped after the restore: %s\n", source_id, why);
  json_decref(source);
  if (rc == -3) {
    json_decref(doc);
    return ux_reply_hold(r, &hold);
  }
  if (rc != 0) {
    fprintf(stderr, "unsandboxd: restore of %s failed: %s\n", id, err);
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "restore failed; nothing was changed: %s", err);
  }
  json_t *j = json_object();
  json_object_set_new(j, "id", json_string(id));
  json_object_set_new(j, "status", json_string("restored"));
  json_object_set(j, "source_type", json_object_get(doc, "source_type"));
  json_object_set(j, "source_id", json_object_get(doc, "source_id"));
  json_decref(doc);
  return ux_reply_json(r, 200, j);
}

/* One conditional statement: a snapshot deleted meanwhile stays deleted. */
static int set_lock(ux_req *r, const char *id, int locked) {
  json_t *flag = json_boolean(locked), *doc = NULL;
  int rc = ux_store_set_field(r->srv->store, "snapshots", id, r->owner, "locked", flag, &doc);
  json_decref(flag);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such snapshot");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot update the snapshot");
  return ux_reply_json(r, 200, doc);
}

int ux_h_snapshot_lock(ux_req *r, const char *id) { return set_lock(r, id, 1); }
int ux_h_snapshot_unlock(ux_req *r, const char *id) { return set_lock(r, id, 0); }
