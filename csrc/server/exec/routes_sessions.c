/*
** Sessions: a persistent volume, DATA/sessions/<id> (volume.h), and one
** living sandbox on it (living.h), started when the session is created
** (and again at the next use when it ended otherwise than by the
** session's end: a restart of the server, a restore). Each shell command
** is a job that runs inside that sandbox (inside.h), so files anywhere
** writable, background processes and their state live from one command
** to the next. A session ends at its ttl, counted from its creation
** (remaining_ttl counts down to it), or at its DELETE: its sandbox is
** ended, then its volume removed.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/jsonw.h"
#include "server/ids.h"
#include "server/exec/inside.h"
#include "server/exec/jobs.h"
#include "server/exec/living.h"
#include "server/exec/routes.h"
#include "server/exec/shells.h"
#include "server/sandbox/tree.h"
#include "server/exec/svc.h"
#include "server/sandbox/volume.h"
#include "server/store/ledger.h"
#include "server/store/store.h"

/* The ledger items of kind/id's volume (and a service's log), or their
** cancellation when its row is never stored. */
static void volume_items(const char *kind, const char *id, char *vol, char *log, size_t len) {
  char table[32];
  snprintf(table, sizeof table, "%ss", kind);
  ux_ledger_item(vol, len, table, id);
  ux_ledger_item(log, len, vol, "log");
}

/* Reserves what kind/id's volume (and a service's log) will take for r's
** key: 0, or -1 after a 507 or 500. */
static int reserve_volume(ux_req *r, const char *kind, const char *id) {
  char party[UX_LEDGER_PARTY_MAX], vol[UX_LEDGER_ITEM_MAX], log[UX_LEDGER_ITEM_MAX];
  ux_ledger_key(party, sizeof party, r->owner);
  volume_items(kind, id, vol, log, sizeof vol);
  int service = !strcmp(kind, "service");
  int held = service ? ux_ledger_reserve(r->srv->store, party, UX_LEDGER_LOG, log, UX_SVC_LOG_CAP)
                     : UX_LEDGER_OK;
  unsigned long long bytes = service ? UX_SVC_LOG_CAP : 0;
  if (held == UX_LEDGER_OK) {
    bytes = ux_volume_charge();
    held = ux_ledger_reserve(r->srv->store, party, UX_LEDGER_VOLUME, vol, bytes);
    if (held != UX_LEDGER_OK) ux_ledger_cancel(r->srv->store, log);
  }
  return held == UX_LEDGER_OK ? 0 : (ux_reply_storage(r, held, bytes), -1);
}

int ux_make_volume(ux_req *r, const char *kind, const char *id, json_t *files) {
  ux_exec_spec tmp;
  char dir[4200], err[300];
  int rc = -1;
  memset(&tmp, 0, sizeof tmp);
  if (ux_exec_spec_files(r, &tmp, files) < 0) goto out;
  if (ux_path(dir, sizeof dir, "%s/%ss", r->srv->cfg.data, kind) < 0 || ux_mkdir_p(dir, 0700) < 0 ||
      ux_resource_dir(r->srv, kind, id, dir, sizeof dir) < 0) {
    ux_reply_error(r, 500, "internal_error", "cannot create the %s's directory", kind);
    goto out;
  }
  /* counted before it is made; the row that records the resource commits it */
  if (reserve_volume(r, kind, id) != 0) goto out;
  if (ux_volume_create(dir, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: %s\n", err);
    ux_reply_error(r, 500, "internal_error", "cannot create the %s's disk", kind);
    ux_remove_volume(r->srv, kind, id);
    goto out;
  }
  int root = ux_volume_acquire(dir, err, sizeof err);
  rc = root < 0 ? -1 : 0;
  /* nothing runs in the new volume yet, but the placing is tree.c's all
  ** the same: the one way into a tree a sandbox will own */
  for (size_t i = 0; rc == 0 && i < tmp.run.n_files; i++)
    if (ux_tree_place_file(root, tmp.files[i].name, tmp.files[i].data, tmp.files[i].len, tmp.files[i].mode,
                           (uid_t)-1, (gid_t)-1, err, sizeof err) != 0) {
      ux_reply_error(r, 400, "bad_request", "input file %zu: %s", i, err);
      rc = -1;
    }
  if (root >= 0) { close(root); ux_volume_release(dir); }
  if (rc != 0) {
    if (!r->reply.status) ux_reply_error(r, 500, "internal_error", "cannot open the %s's disk", kind);
    ux_remove_volume(r->srv, kind, id);
  }
out:
  for (size_t i = 0; i < tmp.run.n_files; i++) { free(tmp.files[i].name); free(tmp.files[i].data); }
  free(tmp.files);
  return rc;
}

void ux_remove_volume(const ux_server *srv, const char *kind, const char *id) {
  char dir[4200], vol[UX_LEDGER_ITEM_MAX], log[UX_LEDGER_ITEM_MAX];
  if (ux_resource_dir(srv, kind, id, dir, sizeof dir) == 0) ux_volume_destroy(dir);
  volume_items(kind, id, vol, log, sizeof vol);
  ux_ledger_cancel(srv->store, vol);
  ux_ledger_cancel(srv->store, log);
}

ux_exec_spec *ux_command_spec(ux_req *r, const char *kind, const char *id,
                              json_t *doc, json_t *body, long default_ms) {
  const char *command;
  long timeout;
  if (ux_get_str(r, body, "command", 1, NULL, &command) < 0 ||
      ux_get_int(r, body, "timeout", 1, 900000, default_ms, &timeout) < 0)
    return NULL;
  if (strlen(command) > UX_INSIDE_COMMAND_MAX) {
    ux_reply_error(r, 400, "bad_request", "command is longer than %d bytes", UX_INSIDE_COMMAND_MAX);
    return NULL;
  }
  /* the sandbox's network and vcpu are its own already */
  ux_exec_spec *spec = ux_exec_spec_command(command, 0, (int)json_integer_value(json_object_get(doc, "vcpu")),
                                            (int)((timeout + 999) / 1000));
  ux_inside_attach(spec, r->srv, kind, id, !strcmp(kind, "session") ? doc : NULL);
  return spec;
}

/* The stored document plus the computed remaining_ttl, in wire order. */
static json_t *present(json_t *doc) {
  static const char *const KEYS[] = {
    "id", "session_id", "container_name", "shell", "multiplexer", "status", "network_mode",
    "vcpu", "ttl", NULL
  };
  json_t *j = json_object();
  for (int i = 0; KEYS[i]; i++)
    if (json_object_get(doc, KEYS[i])) json_object_set(j, KEYS[i], json_object_get(doc, KEYS[i]));
  long ttl = (long)json_integer_value(json_object_get(doc, "ttl"));
  long created = (long)json_integer_value(json_object_get(doc, "created_at"));
  long left = created + ttl - ux_now();
  json_object_set_new(j, "remaining_ttl", json_integer(left > 0 ? left : 0));
  json_object_set(j, "created_at", json_object_get(doc, "created_at"));
  json_object_set(j, "last_activity", json_object_get(doc, "last_activity"));
  return j;
}

typedef struct { ux_jw *w; int n; } list_ctx;

/* One session of a list: its stored document, presented, into the text. */
static int list_entry(void *ctx, const char *text, size_t len) {
  list_ctx *l = ctx;
  json_t *doc = json_loadb(text, len, 0, NULL);
  if (!doc) return 0;
  json_t *view = present(doc);
  ux_jw_json(l->w, view);
  l->n++;
  json_decref(view);
  json_decref(doc);
  return 0;
}

int ux_h_sessions_list(ux_req *r, const char *id) {
  (void)id;
  ux_jw w;
  list_ctx l = { &w, 0 };
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  int n = ux_store_each(r->srv->store, "sessions", r->owner, list_entry, &l);
  ux_jw_close(&w);
  if (n < 0) { ux_jw_free(&w); return ux_reply_error(r, 500, "internal_error", "cannot list the sessions"); }
  return ux_reply_list(r, "sessions", &w, l.n);
}

int ux_h_session_create(ux_req *r, const char *unused) {
  (void)unused;
  const char *shell, *mux;
  long ttl, vcpu;
  int net;
  char id[64];
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  if (ux_get_str(r, body, "shell", 0, "bash", &shell) < 0 ||
      ux_get_str(r, body, "multiplexer", 0, NULL, &mux) < 0 ||
      ux_get_int(r, body, "ttl", 1, 86400, 3600, &ttl) < 0 ||
      ux_get_int(r, body, "vcpu", 1, 8, 1, &vcpu) < 0 ||
      (net = ux_network_mode(r, body, "zerotrust")) < 0 ||
      ux_check_shell(r, shell, mux) < 0) {
    json_decref(body);
    return -1;
  }
  ux_random_id(id, sizeof id, "unsb-session-", 12);
  if (ux_make_volume(r, "session", id, json_object_get(body, "input_files")) < 0) {
    json_decref(body);
    return -1;
  }
  int rc = ux_session_store(r, id, shell, mux, net, vcpu, ttl);     /* shell lives in body */
  json_decref(body);
  return rc;
}

/* 400 naming what is available, for a shell or multiplexer this machine
** does not have (shells.h). */
int ux_check_shell(ux_req *r, const char *shell, const char *mux) {
  int bad_shell = !ux_shell_ok(shell), bad_mux = mux && !ux_multiplexer_ok(mux);
  if (!bad_shell && !bad_mux) return 0;
  json_t *have = bad_shell ? ux_shells_json() : ux_multiplexers_json();
  char *list = json_dumps(have, JSON_COMPACT);
  json_decref(have);
  ux_reply_error(r, 400, "bad_request", "%s '%.64s' is not available here; available: %s",
                 bad_shell ? "shell" : "multiplexer", bad_shell ? shell : mux, list ? list : "[]");
  free(list);
  return -1;
}

/* The session's sandbox: started before the 201, so a session that is
** answered lives. 0, or -1 after a 429/500 (the row and volume undone). */
static int start_sandbox(ux_req *r, const char *id, json_t *doc) {
  char err[300];
  int rc = ux_living_start(r->srv, "session", id, doc, err, sizeof err);
  if (rc == 0) return 0;
  ux_store_delete(r->srv->store, "sessions", id, r->owner);
  ux_living_end(r->srv, id);
  ux_remove_volume(r->srv, "session", id);
  if (rc == -2) return ux_reply_no_memory(r, err);
  fprintf(stderr, "unsandboxd: session %s: %s\n", id, err);
  return ux_reply_error(r, 500, "internal_error", "the session's sandbox did not start: %s", err);
}

int ux_session_store(ux_req *r, const char *id, const char *shell, const char *mux, int net,
                     long vcpu, long ttl) {
  char vm[64];
  long now = ux_now();
  ux_random_id(vm, sizeof vm, "unsb-vm-", 8);
  json_t *doc = json_object();
  json_object_set_new(doc, "id", json_string(id));
  json_object_set_new(doc, "session_id", json_string(id));
  json_object_set_new(doc, "container_name", json_string(vm));
  json_object_set_new(doc, "shell", json_string(shell));
  if (mux) json_object_set_new(doc, "multiplexer", json_string(mux));
  json_object_set_new(doc, "status", json_string("running"));
  json_object_set_new(doc, "network_mode", json_string(net ? "semitrusted" : "zerotrust"));
  json_object_set_new(doc, "vcpu", json_integer(vcpu));
  json_object_set_new(doc, "ttl", json_integer(ttl));
  json_object_set_new(doc, "created_at", json_integer(now));
  json_object_set_new(doc, "last_activity", json_integer(now));
  if (ux_store_insert(r->srv->store, "sessions", id, r->owner, "running", doc) < 0) {
    json_decref(doc);
    ux_remove_volume(r->srv, "session", id);
    return ux_reply_error(r, 500, "internal_error", "cannot store the session");
  }
  if (start_sandbox(r, id, doc) != 0) {
    json_decref(doc);
    return -1;
  }
  ux_reply_json(r, 201, present(doc));
  json_decref(doc);
  return 0;
}

int ux_h_session_get(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such session");
  ux_reply_json(r, 200, present(doc));
  json_decref(doc);
  return 0;
}

int ux_h_session_delete(ux_req *r, const char *id) {
  if (ux_store_delete(r->srv->store, "sessions", id, r->owner) != 1)
    return ux_reply_error(r, 404, "not_found", "no such session");
  ux_living_end(r->srv, id);             /* its processes first, then its files */
  ux_remove_volume(r->srv, "session", id);
  return ux_reply_deleted(r, "session_id", id);
}

int ux_h_session_shell(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such session");
  const char *status = json_string_value(json_object_get(doc, "status"));
  if (status && !strcmp(status, "frozen")) {
    json_decref(doc);
    return ux_reply_error(r, 409, "session_frozen", "the session is frozen; unfreeze it first");
  }
  json_t *body = ux_body_object(r, 0);
  ux_exec_spec *spec = body ? ux_command_spec(r, "session", id, doc, body, 60000) : NULL;
  json_decref(body);
  json_decref(doc);                      /* the spec keeps its own reference */
  if (!spec) return -1;
  /* the touch is one conditional statement: a session deleted since the
  ** read above stays deleted, and the command is refused */
  json_t *now = json_integer(ux_now()), *touched = NULL;
  int found = ux_store_set_field(r->srv->store, "sessions", id, r->owner, "last_activity",
                                 now, &touched);
  json_decref(now);
  json_decref(touched);
  if (found != 1) {
    ux_exec_spec_free(spec);
    return found == 0 ? ux_reply_error(r, 404, "not_found", "no such session")
                      : ux_reply_error(r, 500, "internal_error", "cannot update the session");
  }
  ux_job *job = ux_submit(r, spec, 1);
  if (!job) return -1;                               /* ux_submit answered */
  ux_jobs_wait(r->srv->jobs, job, -1, NULL);          /* until it ends */
  int rc = ux_reply_finished_job(r, job);
  ux_jobs_release(r->srv->jobs, job);
  return rc;
}

int ux_h_session_snapshot(ux_req *r, const char *id) {
  return ux_snapshot_take(r, "session", id);
}
