/*
** Images (spec §4.5): stored archives of a service's volume or of a
** snapshot, DATA/images/<id>.tar.gz, with a document in the store that
** says who owns the image, who else may use it (visibility private,
** unlisted or public; an access list of trusted keys) and whether it is
** locked. Publishing archives the service through the agent, as a
** snapshot does, or copies a snapshot's archive (a root-owned file of the
** data directory, never a sandbox's tree). Spawning makes a new service
** whose volume the agent fills from the archive. Sharing, locking and
** transfer live in images_share.c.
*/
#include "server/exec/living.h"
#include "server/exec/images.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/exec/archives.h"
#include "server/fsutil.h"
#include "server/ids.h"
#include "server/store/store.h"

int ux_image_path(ux_req *r, const char *id, char *out, size_t len) {
  return ux_path(out, len, "%s/images/%s.tar.gz", r->srv->cfg.data, id);
}

int ux_image_visible(const json_t *doc, const char *key) {
  const char *owner = json_string_value(json_object_get(doc, "owner_api_key"));
  const char *vis = json_string_value(json_object_get(doc, "visibility"));
  json_t *acc = json_object_get(doc, "access"), *x;
  size_t i;
  if (owner && !strcmp(owner, key)) return 1;
  if (vis && (!strcmp(vis, "public") || !strcmp(vis, "unlisted"))) return 1;
  json_array_foreach(acc, i, x) if (json_is_string(x) && !strcmp(json_string_value(x), key)) return 1;
  return 0;
}

json_t *ux_image_present(const json_t *doc, const char *key) {
  json_t *j = json_deep_copy(doc);
  const char *owner = json_string_value(json_object_get(doc, "owner_api_key"));
  /* who else may use an image is the owner's business only */
  if (j && (!owner || strcmp(owner, key) != 0)) json_object_set_new(j, "access", json_array());
  return j;
}

json_t *ux_image_get_visible(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "images", id, NULL);
  if (doc && !ux_image_visible(doc, r->owner)) { json_decref(doc); doc = NULL; }
  if (!doc) ux_reply_error(r, 404, "not_found", "no such image");
  return doc;
}

/* Makes the archive of image id from the source, within h: 0, -1 (500),
** -2 (404), -3 (507). */
static int make_archive(ux_req *r, const char *type, const char *source, const char *arch,
                        long *size, ux_hold *h, char *err, size_t errlen) {
  char from[4200];
  if (!strcmp(type, "snapshot")) {
    json_t *snap = ux_store_get(r->srv->store, "snapshots", source, r->owner);
    if (!snap) return -2;
    json_decref(snap);
    if (ux_snapshot_archive_path(r, source, from, sizeof from) != 0) return -1;
    return ux_copy_archive(from, arch, size, h, err, errlen);
  }
  json_t *svc = ux_store_get(r->srv->store, "services", source, r->owner);
  if (!svc) return -2;
  int frozen = ux_resource_frozen(svc);
  json_decref(svc);
  if (ux_resource_dir(r->srv, "service", source, from, sizeof from) != 0) return -1;
  ux_living_pause(r->srv, source, 1);     /* frozen while it is archived */
  int rc = ux_archive_volume(from, arch, size, frozen, h, err, errlen);
  if (!frozen) ux_living_pause(r->srv, source, 0);
  return rc;
}

json_t *ux_image_doc(const char *id, const char *name, const char *desc, const char *type,
                     const char *source, const char *owner, long size) {
  json_t *d = json_object();
  json_object_set_new(d, "id", json_string(id));
  json_object_set_new(d, "image_id", json_string(id));
  json_object_set_new(d, "name", ux_json_bytes(name ? name : id, strlen(name ? name : id)));
  json_object_set_new(d, "description", ux_json_bytes(desc ? desc : "", desc ? strlen(desc) : 0));
  json_object_set_new(d, "visibility", json_string("private"));
  json_object_set_new(d, "source_type", json_string(type));
  json_object_set_new(d, "source_id", json_string(source));
  json_object_set_new(d, "owner_api_key", json_string(owner));
  json_object_set_new(d, "locked", json_false());
  json_object_set_new(d, "created_at", json_integer(ux_now()));
  json_object_set_new(d, "size_bytes", json_integer(size));
  json_object_set_new(d, "access", json_array());
  return d;
}

/* Stores doc with its archive in place: answers 201, or 500 and removes
** the archive. */
int ux_image_store(ux_req *r, json_t *doc, const char *arch) {
  const char *id = json_string_value(json_object_get(doc, "id"));
  /* the row commits the archive's ledger item (archives.h) */
  if (ux_store_insert(r->srv->store, "images", id, r->owner, "ready", doc) < 0) {
    char item[UX_LEDGER_ITEM_MAX];
    ux_ledger_item(item, sizeof item, "images", id);
    ux_ledger_cancel(r->srv->store, item);
    unlink(arch);
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "cannot store the image");
  }
  return ux_reply_json(r, 201, doc);
}

int ux_image_dir(ux_req *r) {
  char dir[4200];
  if (ux_path(dir, sizeof dir, "%s/images", r->srv->cfg.data) != 0 || ux_mkdir_p(dir, 0700) != 0)
    return ux_reply_error(r, 500, "internal_error", "cannot create the images directory");
  return 0;
}

int ux_h_image_publish(ux_req *r, const char *unused) {
  (void)unused;
  const char *type, *source, *name, *desc;
  char id[64], arch[4200], err[512] = "";
  long size = 0;
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  int rc = -1;
  if (ux_get_str(r, body, "source_type", 1, NULL, &type) < 0 ||
      ux_get_str(r, body, "source_id", 1, NULL, &source) < 0 ||
      ux_get_str(r, body, "name", 0, NULL, &name) < 0 ||
      ux_get_str(r, body, "description", 0, NULL, &desc) < 0)
    goto out;
  if (strcmp(type, "service") != 0 && strcmp(type, "snapshot") != 0) {
    ux_reply_error(r, 400, "bad_request", "source_type must be service or snapshot");
    goto out;
  }
  if (!ux_valid_id(source)) { ux_reply_error(r, 404, "not_found", "no such %s", type); goto out; }
  ux_random_id(id, sizeof id, "unsb-image-", 12);
  if (ux_image_dir(r) < 0 || ux_image_path(r, id, arch, sizeof arch) != 0) {
    if (!r->reply.status) ux_reply_error(r, 500, "internal_error", "data directory path too long");
    goto out;
  }
  ux_hold hold;
  ux_hold_init(&hold, r, UX_LEDGER_IMAGE, "images", id);
  int made = make_archive(r, type, source, arch, &size, &hold, err, sizeof err);
  if (made == -2) { ux_reply_error(r, 404, "not_found", "no such %s", type); goto out; }
  if (made == -3) { ux_reply_hold(r, &hold); goto out; }
  if (made != 0) {
    fprintf(stderr, "unsandboxd: image of %s failed: %s\n", source, err);
    ux_reply_error(r, 500, "internal_error", "publish failed: %s", err);
    goto out;
  }
  rc = ux_image_store(r, ux_image_doc(id, name, desc, type, source, r->owner, size), arch);
out:
  json_decref(body);
  return rc;
}
