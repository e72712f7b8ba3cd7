/*
** Administration routes of services (spec §4.3): freeze and unfreeze
** (the bootstrap's processes are frozen by the runner; a frozen service
** refuses execute with 409 unless unfreeze_on_demand thaws it), lock and
** unlock (a locked service refuses DELETE), PATCH of vcpu,
** unfreeze_on_demand and show_freeze_page, PUT of the custom domains, and
** redeploy (the bootstrap restarts, with a new script when one is sent).
** Every change is one conditional statement or one store transaction.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/exec/svc.h"
#include "server/fsutil.h"
#include "server/exec/routes.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"
#include "server/store/store.h"

/* Answers with the service as GET shows it, after a change of field. */
static int set_and_reply(ux_req *r, const char *id, const char *field, json_t *value) {
  json_t *doc = NULL;
  int rc = ux_store_set_field(r->srv->store, "services", id, r->owner, field, value, &doc);
  json_decref(value);
  json_decref(doc);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot update the service");
  return ux_h_service_get(r, id);
}

/* 404 unless id is owner's service; then the body must be empty or {}. */
static int exists_and_empty(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such service");
  json_decref(doc);
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  json_decref(body);
  return 0;
}

int ux_service_thaw(ux_server *srv, const char *id, const char *owner) {
  json_t *doc = NULL, *no = json_false();
  int rc = ux_store_set_field(srv->store, "services", id, owner, "frozen", no, &doc);
  json_decref(no);
  json_decref(doc);
  if (rc != 1) return -1;
  return ux_workdir_freeze(srv, "service", id, 0) < 0 ? -1 : 0;
}

int ux_h_service_freeze(ux_req *r, const char *id) {
  if (exists_and_empty(r, id) < 0) return -1;
  json_t *doc = NULL, *yes = json_true();
  int rc = ux_store_set_field(r->srv->store, "services", id, r->owner, "frozen", yes, &doc);
  json_decref(yes);
  json_decref(doc);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc != 1 || ux_workdir_freeze(r->srv, "service", id, 1) < 0) {
    ux_service_thaw(r->srv, id, r->owner);           /* nothing stays half frozen */
    return ux_reply_error(r, 500, "internal_error", "cannot freeze the service's processes");
  }
  return ux_h_service_get(r, id);
}

int ux_h_service_unfreeze(ux_req *r, const char *id) {
  if (exists_and_empty(r, id) < 0) return -1;
  if (ux_service_thaw(r->srv, id, r->owner) != 0)
    return ux_reply_error(r, 500, "internal_error", "cannot thaw the service's processes");
  return ux_h_service_get(r, id);
}

int ux_h_service_lock(ux_req *r, const char *id) {
  if (exists_and_empty(r, id) < 0) return -1;
  return set_and_reply(r, id, "locked", json_true());
}

int ux_h_service_unlock(ux_req *r, const char *id) {
  if (exists_and_empty(r, id) < 0) return -1;
  return set_and_reply(r, id, "locked", json_false());
}

/* ux_store_modify's edit: copies the validated PATCH fields in. */
static int apply_patch(json_t *doc, void *ctx) {
  return json_object_update(doc, ctx) != 0;
}

/* PATCH: one or more of vcpu (1-8), unfreeze_on_demand, show_freeze_page,
** in one transaction. vcpu applies to later runs (executes, and the
** bootstrap's next start). */
int ux_h_service_patch(ux_req *r, const char *id) {
  static const char *const FIELDS[] = { "vcpu", "unfreeze_on_demand", "show_freeze_page", NULL };
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  json_t *change = json_object();
  long vcpu;
  int flag, bad = 0;
  for (int i = 0; FIELDS[i] && !bad; i++) {
    if (!json_object_get(body, FIELDS[i])) continue;
    bad = i == 0 ? ux_get_int(r, body, FIELDS[i], 1, 8, 1, &vcpu) < 0
                 : ux_get_bool(r, body, FIELDS[i], 0, &flag) < 0;
    if (!bad) json_object_set(change, FIELDS[i], json_object_get(body, FIELDS[i]));
  }
  json_decref(body);
  if (!bad && json_object_size(change) == 0)
    bad = ux_reply_error(r, 400, "bad_request",
                         "send one of vcpu, unfreeze_on_demand, show_freeze_page") < 0;
  int rc = bad ? -1 : ux_store_modify(r->srv->store, "services", id, r->owner,
                                       apply_patch, change, NULL);
  json_decref(change);
  if (bad) return -1;
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot update the service");
  return ux_h_service_get(r, id);
}
