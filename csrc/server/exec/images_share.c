/*
** Sharing images (images.h): lock and unlock, visibility, the access list
** of trusted keys, transfer to another key. Only the owner may do any of
** these (anyone else gets 404, as for an unknown image); every change is
** one store transaction, so a grant racing a revoke or a transfer never
** loses either.
*/
#include "server/exec/images.h"

#include <stdio.h>
#include <string.h>

#include "server/ids.h"
#include "server/store/db.h"
#include "server/store/ledger.h"
#include "server/store/store.h"

/* Answers the result of ux_store_modify on one of owner's images. */
static int answer(ux_req *r, int rc, json_t *doc, const char *refusal) {
  if (rc == 1) {
    json_t *j = ux_image_present(doc, r->owner);
    json_decref(doc);
    return ux_reply_json(r, 200, j);
  }
  json_decref(doc);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such image");
  if (rc == 2) return ux_reply_error(r, 400, "bad_request", "%s", refusal);
  return ux_reply_error(r, 500, "internal_error", "cannot update the image");
}

static int set_field(json_t *doc, void *ctx) {
  json_t *kv = ctx;
  return json_object_update(doc, kv) != 0;
}

static int set_and_answer(ux_req *r, const char *id, const char *field, json_t *value) {
  json_t *kv = json_object(), *doc = NULL;
  json_object_set_new(kv, field, value);
  int rc = ux_store_modify(r->srv->store, "images", id, r->owner, set_field, kv, &doc);
  json_decref(kv);
  return answer(r, rc, doc, "");
}

/* The body as an object with a string field key: its value, or NULL
** after a 400 (*body to be freed by the caller in both cases). */
static const char *string_field(ux_req *r, json_t **body, const char *key, int empty_ok) {
  const char *v = NULL;
  *body = ux_body_object(r, empty_ok);
  if (*body && ux_get_str(r, *body, key, !empty_ok, NULL, &v) < 0) return NULL;
  return v;
}

static int lock(ux_req *r, const char *id, int on) {
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  json_decref(body);
  return set_and_answer(r, id, "locked", json_boolean(on));
}

int ux_h_image_lock(ux_req *r, const char *id) { return lock(r, id, 1); }
int ux_h_image_unlock(ux_req *r, const char *id) { return lock(r, id, 0); }

int ux_h_image_visibility(ux_req *r, const char *id) {
  json_t *body;
  const char *v = string_field(r, &body, "visibility", 0);
  int rc = -1;
  if (v && strcmp(v, "private") && strcmp(v, "unlisted") && strcmp(v, "public"))
    ux_reply_error(r, 400, "bad_request", "visibility must be private, unlisted or public");
  else if (v)
    rc = set_and_answer(r, id, "visibility", json_string(v));
  json_decref(body);
  return rc;
}

typedef struct { const char *key; int add; } access_edit;

static int edit_access(json_t *doc, void *ctx) {
  access_edit *e = ctx;
  json_t *acc = json_object_get(doc, "access"), *x;
  size_t i;
  if (!json_is_array(acc)) {
    json_object_set_new(doc, "access", json_array());
    acc = json_object_get(doc, "access");
  }
  json_array_foreach(acc, i, x)
    if (json_is_string(x) && !strcmp(json_string_value(x), e->key))
      return e->add ? 0 : json_array_remove(acc, i);
  if (!e->add) return 1;                          /* was not trusted */
  if (json_array_size(acc) >= 1000) return 1;
  return json_array_append_new(acc, json_string(e->key));
}

/* Grants (add) or revokes key on image id. */
static int change_access(ux_req *r, const char *id, const char *key, int add) {
  if (!key || strlen(key) > 100 || !ux_valid_id(key))
    return ux_reply_error(r, 400, "bad_request", "a public key is needed");
  json_t *mine = ux_store_get(r->srv->store, "images", id, r->owner);
  if (!mine) return ux_reply_error(r, 404, "not_found", "no such image");
  json_decref(mine);
  if (add && !strcmp(key, r->owner))
    return ux_reply_error(r, 400, "bad_request", "the owner needs no grant");
  access_edit e = { key, add };
  json_t *doc = NULL;
  int rc = ux_store_modify(r->srv->store, "images", id, r->owner, edit_access, &e, &doc);
  return answer(r, rc, doc, add ? "the access list is full" : "that key is not trusted");
}

static int access_route(ux_req *r, const char *id, const char *field, int add) {
  json_t *body;
  const char *key = string_field(r, &body, field, 0);
  int rc = key ? change_access(r, id, key, add) : -1;
  json_decref(body);
  return rc;
}

int ux_h_image_grant(ux_req *r, const char *id) { return access_route(r, id, "trusted_api_key", 1); }
int ux_h_image_revoke(ux_req *r, const char *id) { return access_route(r, id, "trusted_api_key", 0); }
int ux_h_image_access_add(ux_req *r, const char *id) { return access_route(r, id, "api_key", 1); }

/* DELETE /images/{id}/access/{key}: the router captured the key; the
** image id is the path's second segment. */
int ux_h_image_access_del(ux_req *r, const char *key) {
  char id[128];
  const char *p = r->path + strlen("/images/");
  size_t n = strcspn(p, "/");
  if (n == 0 || n >= sizeof id) return ux_reply_error(r, 404, "not_found", "no such image");
  memcpy(id, p, n);
  id[n] = '\0';
  if (!ux_valid_id(id)) return ux_reply_error(r, 404, "not_found", "no such image");
  return change_access(r, id, key, 0);
}

int ux_h_image_trusted(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "images", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such image");
  json_t *j = json_object(), *acc = json_object_get(doc, "access");
  json_object_set_new(j, "count", json_integer((json_int_t)json_array_size(acc)));
  /* the SDKs read three names for the same list: all three are given */
  json_t *keys = json_is_array(acc) ? json_incref(acc) : json_array();
  json_object_set(j, "trusted_api_keys", keys);
  json_object_set(j, "trusted", keys);
  json_object_set(j, "trusted_keys", keys);
  json_decref(keys);
  json_decref(doc);
  return ux_reply_json(r, 200, j);
}

/* The owner changes in a transaction that also checks the new owner's
** quota (the store's trigger moves the archive's ledger item with the
** owner): a transfer the receiver has no room for changes nothing. */
typedef struct {
  const char *id, *owner, *to;
  char party[UX_LEDGER_PARTY_MAX];
  int owned, room;
} transfer;

static int transfer_tx(ux_store *st, void *ctx) {
  transfer *t = ctx;
  if ((t->owned = ux_store_set_owner(st, "images", t->id, t->owner, t->to)) != 1) return 1;
  t->room = ux_ledger_within(st, t->party);
  return t->room ? 0 : 1;
}

static int transfer_image(ux_req *r, const char *id, const char *to) {
  transfer t = { id, r->owner, to, "", -1, 0 };
  ux_ledger_key(t.party, sizeof t.party, to);
  ux_db_tx(r->srv->store, transfer_tx, &t);
  if (t.owned == 0) return ux_reply_error(r, 404, "not_found", "no such image");
  if (t.owned == 1 && !t.room)
    return ux_reply_error(r, 507, "insufficient_storage", "the storage quota of %s has no room"
                          " for the image; nothing was transferred", to);
  if (t.owned != 1) return ux_reply_error(r, 500, "internal_error", "cannot transfer the image");
  json_t *j = json_object();
  json_object_set_new(j, "id", json_string(id));
  json_object_set_new(j, "owner_api_key", json_string(to));
  json_object_set_new(j, "status", json_string("transferred"));
  return ux_reply_json(r, 200, j);
}

/* The new owner is taken as grants take a trusted key: any key of the
** right shape, whether a pair exists for it or not, so that no answer
** tells a caller which keys exist. The image must be the caller's first:
** anyone else gets the 404 of an unknown image, whatever the key. */
int ux_h_image_transfer(ux_req *r, const char *id) {
  json_t *body;
  const char *to = string_field(r, &body, "to_api_key", 0);
  if (!to) {
    json_decref(body);
    return -1;
  }
  json_t *mine = ux_store_get(r->srv->store, "images", id, r->owner);
  int rc = -1;
  if (!mine) {
    ux_reply_error(r, 404, "not_found", "no such image");
  } else if (strlen(to) > 100 || !ux_valid_id(to) || strncmp(to, "unsb-pk-", 8) != 0) {
    ux_reply_error(r, 400, "bad_request", "to_api_key must be a public key (unsb-pk-...)");
  } else if (!strcmp(to, r->owner)) {
    ux_reply_error(r, 400, "bad_request", "the image is yours already");
  } else {
    rc = transfer_image(r, id, to);
  }
  json_decref(mine);
  json_decref(body);
  return rc;
}
