/*
** The custom domains of a service (PUT /services/{id}/domains: add,
** remove or replace, edited inside one store transaction so two edits
** never lose each other's change) and redeploy (the bootstrap restarts;
** a new script and input files may come with it). unsandboxd serves no
** domain: the list is kept and shown, as the real service's API does.
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

#define MAX_DOMAINS 100

/* A host name: 1-253 bytes of [A-Za-z0-9.-], not starting with '.' or '-'. */
static int good_domain(const char *d) {
  size_t n = strlen(d);
  return n > 0 && n <= 253 && d[0] != '.' && d[0] != '-' &&
         strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == n;
}

static int check_domains(ux_req *r, json_t *v, const char *key) {
  size_t i;
  json_t *x;
  if (!json_is_array(v)) return ux_reply_error(r, 400, "bad_request", "field '%s' must be an array", key);
  if (json_array_size(v) > MAX_DOMAINS)
    return ux_reply_error(r, 400, "bad_request", "at most %d domains", MAX_DOMAINS);
  json_array_foreach(v, i, x)
    if (!json_is_string(x) || !good_domain(json_string_value(x)))
      return ux_reply_error(r, 400, "bad_request", "field '%s' item %zu is not a host name", key, i);
  return 0;
}

typedef struct { int mode; json_t *items; } domain_edit;   /* mode: 0 replace, 1 add, 2 remove */

static int has(json_t *arr, const char *s) {
  size_t i;
  json_t *x;
  json_array_foreach(arr, i, x) if (!strcmp(json_string_value(x), s)) return 1;
  return 0;
}

static int edit_domains(json_t *doc, void *ctx) {
  domain_edit *e = ctx;
  json_t *old = json_object_get(doc, "domains"), *out = json_array(), *x;
  size_t i;
  if (!out) return 1;
  if (e->mode != 0)
    json_array_foreach(old, i, x)
      if (json_is_string(x) && !(e->mode == 2 && has(e->items, json_string_value(x))))
        json_array_append(out, x);
  if (e->mode != 2)
    json_array_foreach(e->items, i, x)
      if (!has(out, json_string_value(x))) json_array_append(out, x);
  if (json_array_size(out) > MAX_DOMAINS) { json_decref(out); return 1; }
  return json_object_set_new(doc, "domains", out) != 0;
}

int ux_h_service_domains(ux_req *r, const char *id) {
  static const char *const KEYS[] = { "custom_domains", "add", "remove", NULL };
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  domain_edit e = { -1, NULL };
  for (int i = 0; KEYS[i]; i++)
    if (json_object_get(body, KEYS[i])) {
      if (e.mode >= 0) { e.mode = -2; break; }
      e.mode = i;
      e.items = json_object_get(body, KEYS[i]);
    }
  /* the Lua SDK's key for a replacement, in lenient mode */
  if (e.mode == -1 && r->srv->cfg.lenient && json_object_get(body, "domains")) {
    e.mode = 0;
    e.items = json_object_get(body, "domains");
  }
  int rc = -1;
  if (e.mode < 0)
    ux_reply_error(r, 400, "bad_request", "send exactly one of custom_domains, add, remove");
  else if (check_domains(r, e.items, KEYS[e.mode]) == 0)
    rc = ux_store_modify(r->srv->store, "services", id, r->owner, edit_domains, &e, NULL);
  json_decref(body);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc == 2) return ux_reply_error(r, 400, "bad_request", "at most %d domains", MAX_DOMAINS);
  if (rc != 1) return r->reply.status ? -1 : ux_reply_error(r, 500, "internal_error", "cannot update the service");
  return ux_h_service_get(r, id);
}

/* Places the request's input_files in the service's volume, through the
** descriptor-only tree functions. 0, or -1 after a 400/500 reply. */
static int place_files(ux_req *r, const char *id, json_t *files) {
  ux_exec_spec tmp;
  char dir[4200], err[300];
  int rc = 0;
  if (!files || json_is_null(files)) return 0;
  memset(&tmp, 0, sizeof tmp);
  if (ux_exec_spec_files(r, &tmp, files) < 0) return -1;
  int root = ux_resource_dir(r->srv, "service", id, dir, sizeof dir) == 0
             ? ux_volume_acquire(dir, err, sizeof err) : -1;
  if (root < 0) rc = ux_reply_error(r, 500, "internal_error", "cannot open the service's disk");
  for (size_t i = 0; rc == 0 && i < tmp.run.n_files; i++)
    if (ux_tree_place_file(root, tmp.files[i].name, tmp.files[i].data, tmp.files[i].len, tmp.files[i].mode,
                           (uid_t)-1, (gid_t)-1, err, sizeof err) != 0)
      rc = ux_reply_error(r, 400, "bad_request", "input file %zu: %s", i, err);
  if (root >= 0) { close(root); ux_volume_release(dir); }
  for (size_t i = 0; i < tmp.run.n_files; i++) { free(tmp.files[i].name); free(tmp.files[i].data); }
  free(tmp.files);
  return rc;
}

/* The new script of a redeploy: bootstrap_content, else bootstrap; NULL
** keeps the stored one. -1 after a 400. */
static int new_script(ux_req *r, json_t *body, const char **script) {
  const char *boot, *content;
  if (ux_get_str(r, body, "bootstrap", 0, NULL, &boot) < 0 ||
      ux_get_str(r, body, "bootstrap_content", 0, NULL, &content) < 0)
    return -1;
  if (!content && boot && (!strncmp(boot, "http://", 7) || !strncmp(boot, "https://", 8)))
    return ux_reply_error(r, 400, "bad_request",
                          "bootstrap URLs are not fetched by unsandboxd; send bootstrap_content");
  *script = content ? content : boot;
  return 0;
}

int ux_h_service_redeploy(ux_req *r, const char *id) {
  const char *script = NULL;
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such service");
  json_decref(doc);
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  if (new_script(r, body, &script) < 0 || place_files(r, id, json_object_get(body, "input_files")) < 0) {
    json_decref(body);
    return -1;
  }
  json_t *v = script ? json_string(script) : NULL, *fresh = NULL;
  json_decref(body);
  int rc = v ? ux_store_set_field(r->srv->store, "services", id, r->owner, "bootstrap", v, &fresh) : 1;
  json_decref(v);
  json_decref(fresh);
  /* a frozen service's runs are thawed before the restart kills them */
  if (rc == 1) rc = ux_service_thaw(r->srv, id, r->owner) == 0 ? 1 : -1;
  doc = rc == 1 ? ux_store_get(r->srv->store, "services", id, r->owner) : NULL;
  if (!doc) return rc == -1 ? ux_reply_error(r, 500, "internal_error", "cannot redeploy the service")
                            : ux_reply_error(r, 404, "not_found", "no such service");
  ux_svcs_stop(r->srv->svcs, id);
  char why[200];
  int started = ux_services_restart(r->srv, doc, r->owner, why, sizeof why);
  json_decref(doc);
  if (started == UX_SVCS_NOMEM) return ux_reply_no_memory(r, why);   /* stored; stopped */
  return ux_h_service_get(r, id);
}
