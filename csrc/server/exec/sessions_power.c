/*
** Power routes of sessions: freeze, unfreeze, boost, unboost. Freezing
** pauses the whole living sandbox: the document says "frozen" first (new
** commands are refused with 409 from then on), then every run of the
** volume, the sandbox among them, is frozen by the runner (cgroup
** freezer, or SIGSTOP without one), its health checks paused meanwhile;
** unfreezing thaws it and lets commands in again. As the spec says, only
** a session with a multiplexer (tmux, screen) may be frozen: its terminal
** is re-attachable. Boosting records the vcpu of the session; its sandbox
** gets it when it next starts (its memory limit is its cgroup's, set at
** the start).
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/exec/living.h"
#include "server/exec/routes.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "server/store/store.h"

int ux_workdir_freeze(ux_server *srv, const char *kind, const char *id, int frozen) {
  char dir[4200], err[256];
  if (ux_resource_dir(srv, kind, id, dir, sizeof dir) != 0) return -1;
  int root = ux_volume_acquire(dir, err, sizeof err);
  if (root < 0) return -1;
  if (frozen) ux_living_pause(srv, id, 1);   /* a frozen agent answers no health check */
  int n = ux_runner_freeze_workdir(root, frozen);
  if (n < 0 && frozen) ux_runner_freeze_workdir(root, 0);    /* no half-frozen session */
  if (!frozen || n < 0) ux_living_pause(srv, id, 0);
  close(root);
  ux_volume_release(dir);
  return n;
}

/* Sets field of a session to value in one statement and answers with the
** session (GET's form): 0, or -1 after a 404/500. */
static int set_and_reply(ux_req *r, const char *id, const char *field, json_t *value) {
  json_t *doc = NULL;
  int rc = ux_store_set_field(r->srv->store, "sessions", id, r->owner, field, value, &doc);
  json_decref(value);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such session");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot update the session");
  json_decref(doc);
  return ux_h_session_get(r, id);
}

/* The body of freeze, unfreeze and unboost: empty or {} (an object). */
static int empty_body(ux_req *r) {
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  json_decref(body);
  return 0;
}

static int power(ux_req *r, const char *id, int frozen) {
  json_t *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such session");
  int mux = json_is_string(json_object_get(doc, "multiplexer"));
  json_decref(doc);
  if (empty_body(r) < 0) return -1;
  if (frozen && !mux)
    return ux_reply_error(r, 400, "bad_request", "only a session with a multiplexer can be frozen; "
                          "create it with multiplexer \"tmux\" or \"screen\"");
  if (frozen && set_and_reply(r, id, "status", json_string("frozen")) < 0) return -1;
  if (ux_workdir_freeze(r->srv, "session", id, frozen) < 0) {
    ux_reply_clear(&r->reply);
    fprintf(stderr, "unsandboxd: cannot %s the runs of %s\n", frozen ? "freeze" : "thaw", id);
    if (frozen) {                 /* nothing stays frozen: say so, and let commands in */
      json_t *after = NULL, *v = json_string("running");
      ux_store_set_field(r->srv->store, "sessions", id, r->owner, "status", v, &after);
      json_decref(v);
      json_decref(after);
    }
    return ux_reply_error(r, 500, "internal_error", "cannot %s the session's processes",
                          frozen ? "freeze" : "thaw");
  }
  if (frozen) return 0;
  return set_and_reply(r, id, "status", json_string("running"));
}

int ux_h_session_freeze(ux_req *r, const char *id) { return power(r, id, 1); }
int ux_h_session_unfreeze(ux_req *r, const char *id) { return power(r, id, 0); }

int ux_h_session_boost(ux_req *r, const char *id) {
  long vcpu;
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  int bad = ux_get_int(r, body, "vcpu", 1, 8, 2, &vcpu) < 0;
  json_decref(body);
  if (bad) return -1;
  return set_and_reply(r, id, "vcpu", json_integer(vcpu));
}

int ux_h_session_unboost(ux_req *r, const char *id) {
  if (empty_body(r) < 0) return -1;
  return set_and_reply(r, id, "vcpu", json_integer(1));
}
