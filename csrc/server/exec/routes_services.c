/*
** Services: a living sandbox on a persistent volume, like a session, whose
** first process is its bootstrap (svc.c). Commands sent to a running
** service become jobs (202, polled on /jobs/{id}) that run inside it
** (inside.h), so they reach its processes and ports on localhost. Services
** are started again when the server starts again.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fsutil.h"
#include "server/jsonw.h"
#include "server/ids.h"
#include "server/exec/inside.h"
#include "server/exec/jobs.h"
#include "server/exec/routes.h"
#include "server/store/store.h"
#include "server/exec/svc.h"

/* The wire form: live state, scalars first, arrays last; the stored
** bootstrap script stays private. */
static json_t *present(ux_server *srv, json_t *doc) {
  static const char *const KEYS[] = {
    "id", "service_id", "name", NULL
  };
  const char *id = json_string_value(json_object_get(doc, "id"));
  const char *state = json_is_true(json_object_get(doc, "frozen")) ? "frozen"
                    : ux_svcs_running(srv->svcs, id) ? "running" : "stopped";
  json_t *j = json_object();
  for (int i = 0; KEYS[i]; i++) json_object_set(j, KEYS[i], json_object_get(doc, KEYS[i]));
  json_object_set_new(j, "state", json_string(state));
  json_object_set_new(j, "status", json_string(state));
  json_object_set(j, "container_name", json_object_get(doc, "container_name"));
  json_object_set(j, "network_mode", json_object_get(doc, "network_mode"));
  json_object_set(j, "vcpu", json_object_get(doc, "vcpu"));
  json_object_set(j, "locked", json_object_get(doc, "locked"));
  json_object_set_new(j, "unfreeze_on_demand",
                      json_boolean(json_is_true(json_object_get(doc, "unfreeze_on_demand"))));
  json_object_set_new(j, "show_freeze_page",
                      json_boolean(json_is_true(json_object_get(doc, "show_freeze_page"))));
  json_object_set(j, "created_at", json_object_get(doc, "created_at"));
  json_object_set(j, "last_activity", json_object_get(doc, "last_activity"));
  json_object_set(j, "ports", json_object_get(doc, "ports"));
  json_object_set(j, "domains", json_object_get(doc, "domains"));
  /* a local extension: where the forwarded ports answer on this machine */
  json_object_set_new(j, "urls", ux_svcs_urls(srv->svcs, id));
  return j;
}

/* Checks an optional array whose items all pass ok(); 0 or -1 (400). */
int ux_check_array(ux_req *r, json_t *v, const char *key, int ints) {
  size_t i;
  json_t *x;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v)) return ux_reply_error(r, 400, "bad_request", "field '%s' must be an array", key);
  json_array_foreach(v, i, x) {
    if (ints ? !(json_is_integer(x) && json_integer_value(x) >= 1 && json_integer_value(x) <= 65535)
             : !json_is_string(x))
      return ux_reply_error(r, 400, "bad_request", "field '%s' has a bad item", key);
  }
  return 0;
}

typedef struct { ux_server *srv; ux_jw *w; int n; } list_ctx;

/* One service of a list: its stored document, presented, into the text
** (the services' lock is taken under the store's: it never waits on the
** store while held). */
static int list_entry(void *ctx, const char *text, size_t len) {
  list_ctx *l = ctx;
  json_t *doc = json_loadb(text, len, 0, NULL);
  if (!doc) return 0;
  json_t *view = present(l->srv, doc);
  ux_jw_json(l->w, view);
  l->n++;
  json_decref(view);
  json_decref(doc);
  return 0;
}

int ux_h_services_list(ux_req *r, const char *id) {
  (void)id;
  ux_jw w;
  list_ctx l = { r->srv, &w, 0 };
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  int n = ux_store_each(r->srv->store, "services", r->owner, list_entry, &l);
  ux_jw_close(&w);
  if (n < 0) { ux_jw_free(&w); return ux_reply_error(r, 500, "internal_error", "cannot list the services"); }
  return ux_reply_list(r, "services", &w, l.n);
}

int ux_h_service_create(ux_req *r, const char *unused) {
  (void)unused;
  const char *name, *boot, *content;
  long vcpu;
  int net, uod;
  char id[64];
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  json_t *ports = json_object_get(body, "ports");
  json_t *domains = json_object_get(body, "custom_domains");
  if (!domains && r->srv->cfg.lenient) domains = json_object_get(body, "domains");  /* Lua SDK */
  if (ux_get_str(r, body, "name", 0, NULL, &name) < 0 ||
      ux_get_str(r, body, "bootstrap", 0, NULL, &boot) < 0 ||
      ux_get_str(r, body, "bootstrap_content", 0, NULL, &content) < 0 ||
      ux_get_int(r, body, "vcpu", 1, 8, 1, &vcpu) < 0 ||
      ux_get_bool(r, body, "unfreeze_on_demand", 0, &uod) < 0 ||
      (net = ux_network_mode(r, body, "zerotrust")) < 0 ||
      ux_check_array(r, ports, "ports", 1) < 0 || ux_check_array(r, domains, "custom_domains", 0) < 0)
    goto bad;
  if (name && !ux_valid_id(name)) {
    ux_reply_error(r, 400, "bad_request", "name may only use A-Z a-z 0-9 . _ -");
    goto bad;
  }
  if (boot && (!strncmp(boot, "http://", 7) || !strncmp(boot, "https://", 8))) {
    ux_reply_error(r, 400, "bad_request",
                   "bootstrap URLs are not fetched by unsandboxd; send bootstrap_content");
    goto bad;
  }
  const char *script = content ? content : boot;
  ux_random_id(id, sizeof id, "unsb-service-", 12);
  if (ux_make_volume(r, "service", id, json_object_get(body, "input_files")) < 0)
    goto bad;
  ux_service_fields f = { name, script, net, vcpu, uod, ports, domains };
  ux_service_store(r, id, &f);
  json_decref(body);
  return 0;
bad:
  json_decref(body);
  return -1;
}

int ux_service_store(ux_req *r, const char *id, const ux_service_fields *f) {
  char vm[64];
  long now = ux_now();
  ux_random_id(vm, sizeof vm, "unsb-vm-", 8);
  json_t *doc = json_object();
  json_object_set_new(doc, "id", json_string(id));
  json_object_set_new(doc, "service_id", json_string(id));
  json_object_set_new(doc, "name", json_string(f->name ? f->name : id));
  json_object_set_new(doc, "container_name", json_string(vm));
  json_object_set_new(doc, "network_mode", json_string(f->net ? "semitrusted" : "zerotrust"));
  json_object_set_new(doc, "vcpu", json_integer(f->vcpu));
  json_object_set_new(doc, "locked", json_false());
  json_object_set_new(doc, "unfreeze_on_demand", json_boolean(f->unfreeze_on_demand));
  json_object_set_new(doc, "created_at", json_integer(now));
  json_object_set_new(doc, "last_activity", json_integer(now));
  json_object_set_new(doc, "bootstrap", f->script ? json_string(f->script) : json_null());
  json_object_set_new(doc, "ports", f->ports ? json_deep_copy(f->ports) : json_array());
  json_object_set_new(doc, "domains", f->domains ? json_deep_copy(f->domains) : json_array());
  /* created in the store first, started second; a failure of either
  ** undoes both and the volume, so nothing half-made stays behind */
  char why[200] = "";
  int rc = ux_store_insert(r->srv->store, "services", id, r->owner, "created", doc) < 0 ? -1
           : ux_services_start(r->srv, doc, why, sizeof why);
  if (rc < 0) {
    json_decref(doc);
    ux_svcs_stop(r->srv->svcs, id);
    ux_store_delete(r->srv->store, "services", id, r->owner);
    ux_remove_volume(r->srv, "service", id);
    if (rc == UX_SVCS_NOMEM) return ux_reply_no_memory(r, why);
    return ux_reply_error(r, 500, "internal_error", "cannot start the service");
  }
  ux_reply_json(r, 201, present(r->srv, doc));
  json_decref(doc);
  return 0;
}

int ux_h_service_get(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such service");
  ux_reply_json(r, 200, present(r->srv, doc));
  json_decref(doc);
  return 0;
}

int ux_h_service_delete(ux_req *r, const char *id) {
  /* the row's deletion decides: of two racing DELETEs one gets 404, and
  ** "not locked" is checked in the same transaction */
  int gone = ux_store_delete_unless(r->srv->store, "services", id, r->owner, "locked");
  if (gone == UX_STORE_ABSENT) return ux_reply_error(r, 404, "not_found", "no such service");
  if (gone == UX_STORE_REFUSED)
    return ux_reply_error(r, 409, "locked", "the service is locked; unlock it first");
  if (gone != UX_STORE_DELETED)
    return ux_reply_error(r, 500, "internal_error", "cannot delete the service");
  ux_svcs_stop(r->srv->svcs, id);
  ux_remove_volume(r->srv, "service", id);
  return ux_reply_deleted(r, "service_id", id);
}

int ux_h_service_execute(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such service");
  json_t *body = ux_body_object(r, 0);
  ux_exec_spec *spec = body ? ux_command_spec(r, "service", id, doc, body, 30000) : NULL;
  if (!spec) goto out;
  if (json_is_true(json_object_get(doc, "frozen")) &&
      (!json_is_true(json_object_get(doc, "unfreeze_on_demand")) ||
       ux_service_thaw(r->srv, id, r->owner) != 0)) {
    ux_reply_error(r, 409, "service_frozen", "the service is frozen; unfreeze it first");
    ux_exec_spec_free(spec);
    goto out;
  }
  if (!ux_svcs_running(r->srv->svcs, id)) {
    ux_reply_error(r, 409, "service_not_running", "the service is not running");
    ux_exec_spec_free(spec);
    goto out;
  }
  char **env;
  size_t n_env;
  if (ux_vault_service_env(r->srv, doc, &env, &n_env) != 0) {
    ux_reply_error(r, 500, "internal_error", "the service's env vault cannot be opened");
    ux_exec_spec_free(spec);
    goto out;
  }
  ux_exec_spec_take_env(spec, env, n_env);
  if (ux_exec_spec_files(r, spec, json_object_get(body, "input_files")) < 0) {
    ux_exec_spec_free(spec);
    goto out;
  }
  spec->run.files = spec->files;
  ux_inside_attach(spec, r->srv, "service", id, NULL);
  ux_inside_input_files(spec);           /* into /tmp/input/, where it runs */
  ux_job *job = ux_submit(r, spec, 0);
  if (job) {
    json_t *j = json_object();
    json_object_set_new(j, "job_id", json_string(ux_job_id(job)));
    json_object_set_new(j, "status", json_string("pending"));
    ux_jobs_release(r->srv->jobs, job);
    ux_reply_json(r, 202, j);
  }
out:
  json_decref(body);
  json_decref(doc);
  return 0;
}

int ux_h_service_logs(ux_req *r, const char *id) {
  size_t len = 0;
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such service");
  json_decref(doc);
  char *log = ux_svcs_log(r->srv->svcs, id, &len);
  json_t *j = json_object();
  json_object_set_new(j, "log", ux_json_bytes(log ? log : "", len));
  free(log);
  return ux_reply_json(r, 200, j);
}

int ux_h_service_snapshot(ux_req *r, const char *id) {
  return ux_snapshot_take(r, "service", id);
}

/* (Re)starts the bootstrap, then looks at the store again: a DELETE that
** removed the row meanwhile either stops what was started here (its stop
** comes after this start) or was seen by this look (then it is stopped
** here), so a deleted service never keeps a bootstrap. */
int ux_services_restart(ux_server *srv, json_t *doc, const char *owner, char *err, size_t errlen) {
  const char *id = json_string_value(json_object_get(doc, "id"));
  int rc = ux_services_start(srv, doc, err, errlen);
  json_t *still = id ? ux_store_get(srv->store, "services", id, owner) : NULL;
  if (id && !still) ux_svcs_stop(srv->svcs, id);
  json_decref(still);
  return rc;
}

int ux_services_start(ux_server *srv, json_t *doc, char *err, size_t errlen) {
  char **env;
  size_t n_env;
  /* a vault that does not open starts the bootstrap without it (logged) */
  if (ux_vault_service_env(srv, doc, &env, &n_env) != 0) { env = NULL; n_env = 0; }
  return ux_svcs_start(srv->svcs, doc, env, n_env, err, errlen);
}

void ux_services_resume(ux_server *srv) {
  json_t *docs = ux_store_list(srv->store, "services", NULL), *doc;
  size_t i;
  /* a restart starts every bootstrap afresh, so nothing is frozen after it */
  json_array_foreach(docs, i, doc) {
    const char *id = json_string_value(json_object_get(doc, "id"));
    if (id && json_is_true(json_object_get(doc, "frozen"))) {
      json_t *no = json_false(), *out = NULL;
      ux_store_set_field(srv->store, "services", id, NULL, "frozen", no, &out);
      json_decref(no);
      json_decref(out);
    }
    char why[200];
    if (ux_services_start(srv, doc, why, sizeof why) == UX_SVCS_NOMEM)
      fprintf(stderr, "unsandboxd: service %s stays stopped: %s\n", id ? id : "?", why);
  }
  json_decref(docs);
}
