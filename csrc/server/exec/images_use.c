/*
** Using images (images.h): the four lists, get, delete (the owner's,
** refused while locked, the row first so nothing finds an image without
** its archive), clone (a new image of the caller's with a copy of the
** archive) and spawn (a new service whose volume the agent fills from
** the archive, as a snapshot's restore does).
*/
#include "server/exec/images.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/exec/archives.h"
#include "server/ids.h"
#include "server/store/store.h"

enum { L_ALL, L_OWNED, L_SHARED, L_PUBLIC };

static int trusted(const json_t *doc, const char *key) {
  json_t *x;
  size_t i;
  json_array_foreach(json_object_get(doc, "access"), i, x)
    if (json_is_string(x) && !strcmp(json_string_value(x), key)) return 1;
  return 0;
}

static int list(ux_req *r, int which) {
  json_t *docs = ux_store_list(r->srv->store, "images", NULL), *doc, *arr = json_array();
  size_t i;
  /* lenient: ?filter=owned|shared|public on GET /images (C library, Lua SDK) */
  const char *f = which == L_ALL && r->srv->cfg.lenient ? ux_req_query(r, "filter") : NULL;
  if (f) which = !strcmp(f, "owned") ? L_OWNED : !strcmp(f, "shared") ? L_SHARED
               : !strcmp(f, "public") ? L_PUBLIC : L_ALL;
  json_array_foreach(docs, i, doc) {
    const char *owner = json_string_value(json_object_get(doc, "owner_api_key"));
    const char *vis = json_string_value(json_object_get(doc, "visibility"));
    int mine = owner && !strcmp(owner, r->owner);
    int pub = vis && !strcmp(vis, "public");
    int granted = !mine && trusted(doc, r->owner);
    /* unlisted images are reachable by id, never listed to others */
    int keep = which == L_OWNED ? mine : which == L_PUBLIC ? pub
             : which == L_SHARED ? granted : mine || pub || granted;
    if (keep) json_array_append_new(arr, ux_image_present(doc, r->owner));
  }
  json_decref(docs);
  json_t *j = json_object();
  json_object_set_new(j, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(j, "images", arr);
  return ux_reply_json(r, 200, j);
}

int ux_h_images_list(ux_req *r, const char *id) { (void)id; return list(r, L_ALL); }
int ux_h_images_owned(ux_req *r, const char *id) { (void)id; return list(r, L_OWNED); }
int ux_h_images_shared(ux_req *r, const char *id) { (void)id; return list(r, L_SHARED); }
int ux_h_images_public(ux_req *r, const char *id) { (void)id; return list(r, L_PUBLIC); }

int ux_h_image_get(ux_req *r, const char *id) {
  json_t *doc = ux_image_get_visible(r, id);
  if (!doc) return -1;
  json_t *j = ux_image_present(doc, r->owner);
  json_decref(doc);
  return ux_reply_json(r, 200, j);
}

int ux_h_image_delete(ux_req *r, const char *id) {
  char arch[4200];
  int rc = ux_store_delete_unless(r->srv->store, "images", id, r->owner, "locked");
  if (rc == UX_STORE_ABSENT) return ux_reply_error(r, 404, "not_found", "no such image");
  if (rc == UX_STORE_REFUSED)
    return ux_reply_error(r, 409, "locked", "the image is locked; unlock it first");
  if (rc != UX_STORE_DELETED) return ux_reply_error(r, 500, "internal_error", "cannot delete the image");
  if (ux_image_path(r, id, arch, sizeof arch) == 0 && unlink(arch) != 0 && errno != ENOENT)
    fprintf(stderr, "unsandboxd: cannot remove %s: %s\n", arch, strerror(errno));
  return ux_reply_deleted(r, "id", id);
}

int ux_h_image_clone(ux_req *r, const char *id) {
  const char *name, *desc;
  char nid[64], from[4200], to[4200], err[256];
  long size = 0;
  json_t *doc = ux_image_get_visible(r, id);
  if (!doc) return -1;
  json_t *body = ux_body_object(r, 1);
  int rc = -1;
  if (!body || ux_get_str(r, body, "name", 0, NULL, &name) < 0 ||
      ux_get_str(r, body, "description", 0, NULL, &desc) < 0)
    goto out;
  ux_random_id(nid, sizeof nid, "unsb-image-", 12);
  if (ux_image_dir(r) < 0) goto out;
  ux_hold hold;
  ux_hold_init(&hold, r, UX_LEDGER_IMAGE, "images", nid);
  int copied = ux_image_path(r, id, from, sizeof from) == 0 && ux_image_path(r, nid, to, sizeof to) == 0
             ? ux_copy_archive(from, to, &size, &hold, err, sizeof err) : -1;
  if (copied == -3) { ux_reply_hold(r, &hold); goto out; }
  if (copied != 0) {
    ux_reply_error(r, 500, "internal_error", "cannot copy the image");
    goto out;
  }
  rc = ux_image_store(r, ux_image_doc(nid, name ? name : json_string_value(json_object_get(doc, "name")),
                                      desc, "image", id, r->owner,
                                      size), to);
out:
  json_decref(body);
  json_decref(doc);
  return rc;
}

/* ports as an int array, or (the C CLI's form) a comma string "80,443":
** a new array, or NULL after a 400. */
static json_t *spawn_ports(ux_req *r, json_t *v) {
  if (!v || json_is_null(v)) return json_array();
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    json_t *arr = json_array();
    while (*s) {
      char *end;
      long p = strtol(s, &end, 10);
      if (end == s || p < 1 || p > 65535 || (*end && *end != ',')) {
        json_decref(arr);
        ux_reply_error(r, 400, "bad_request", "field 'ports' has a bad item");
        return NULL;
      }
      json_array_append_new(arr, json_integer(p));
      s = *end ? end + 1 : end;
    }
    return arr;
  }
  return ux_check_array(r, v, "ports", 1) < 0 ? NULL : json_deep_copy(v);
}

int ux_h_image_spawn(ux_req *r, const char *id) {
  const char *name, *boot;
  char sid[64], arch[4200], dir[4200], err[512] = "";
  int net;
  json_t *doc = ux_image_get_visible(r, id), *ports = NULL;
  if (!doc) return -1;
  json_decref(doc);
  json_t *body = ux_body_object(r, 1);
  int rc = -1;
  if (!body || ux_get_str(r, body, "name", 0, NULL, &name) < 0 ||
      ux_get_str(r, body, "bootstrap", 0, NULL, &boot) < 0 ||
      (net = ux_network_mode(r, body, "zerotrust")) < 0 ||
      !(ports = spawn_ports(r, json_object_get(body, "ports"))))
    goto out;
  if ((name && !ux_valid_id(name)) ||
      (boot && (!strncmp(boot, "http://", 7) || !strncmp(boot, "https://", 8)))) {
    ux_reply_error(r, 400, "bad_request", name && !ux_valid_id(name)
                   ? "name may only use A-Z a-z 0-9 . _ -"
                   : "bootstrap URLs are not fetched by unsandboxd; send the script");
    goto out;
  }
  ux_random_id(sid, sizeof sid, "unsb-service-", 12);
  if (ux_make_volume(r, "service", sid, NULL) < 0) goto out;
  ux_hold hold;
  ux_hold_init(&hold, r, UX_LEDGER_VOLUME, "restores", sid);
  int filled = ux_image_path(r, id, arch, sizeof arch) == 0 &&
               ux_resource_dir(r->srv, "service", sid, dir, sizeof dir) == 0
             ? ux_restore_volume(arch, dir, &hold, err, sizeof err) : -1;
  if (filled != 0) {
    fprintf(stderr, "unsandboxd: spawn of %s failed: %s\n", id, filled == -3 ? "no storage left" : err);
    ux_remove_volume(r->srv, "service", sid);
    if (filled == -3) ux_reply_hold(r, &hold);
    else ux_reply_error(r, 500, "internal_error", "spawn failed: %s", err);
    goto out;
  }
  ux_service_fields f = { name, boot, net, 1, 0, ports, NULL };
  rc = ux_service_store(r, sid, &f);
out:
  json_decref(ports);
  json_decref(body);
  return rc;
}
