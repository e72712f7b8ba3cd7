/*
** The living sandboxes of sessions and services (living.h): the registry,
** starts shaped by the stored documents, and what happens when a runtime
** ends by itself (a session at its ttl is removed; a service is told).
*/
#include "server/exec/living.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/exec/routes.h"
#include "server/exec/svc.h"
#include "server/fsutil.h"
#include "server/ids.h"
#include "server/store/store.h"

#define MAX_LIVE 128                 /* sessions and services at once */
#define FOREVER_S (10 * 365 * 86400) /* a service's runtime has no TTL */
#define SESSION_PREFIX "unsb-session-"

static int is_session(const char *id) { return !strncmp(id, SESSION_PREFIX, strlen(SESSION_PREFIX)); }

/* Seconds a session has left (its ttl counts from its creation). */
static long session_left(json_t *doc) {
  long ttl = (long)json_integer_value(json_object_get(doc, "ttl"));
  long created = (long)json_integer_value(json_object_get(doc, "created_at"));
  return created + ttl - ux_now();
}

/* A session at its ttl is over: removed like a DELETE (its processes are
** gone already). */
static void expire_session(ux_server *srv, const char *id) {
  if (ux_store_delete(srv->store, "sessions", id, NULL) == 1) {
    ux_remove_volume(srv, "session", id);
    fprintf(stderr, "unsandboxd: session %s reached its ttl and was removed\n", id);
  }
}

/* The registry's on_end (a runtime thread, no lock held). */
static void ended(void *ctx, const char *sb_id, int status, const char *why) {
  ux_server *srv = ctx;
  ux_rt_info info;
  (void)status;
  if (ux_runtimes_info(srv->living, sb_id, &info) != 0) return;
  if (is_session(info.ws_id)) {
    if (!strncmp(why, "the runtime reached its hard TTL", 32)) expire_session(srv, info.ws_id);
  } else {
    ux_svcs_ended(srv->svcs, info.ws_id, sb_id, why);
  }
}

void ux_living_expire_sessions(ux_server *srv) {
  json_t *docs = ux_store_list(srv->store, "sessions", NULL), *doc;
  size_t i;
  json_array_foreach(docs, i, doc)
    if (session_left(doc) <= 0) expire_session(srv, json_string_value(json_object_get(doc, "id")));
  json_decref(docs);
}

int ux_living_open(ux_server *srv, char *err, size_t errlen) {
  ux_rt_config c;
  memset(&c, 0, sizeof c);
  c.idle_ttl_s = FOREVER_S;              /* each start says -1: never idle */
  c.hard_ttl_s = FOREVER_S;
  c.max_live = MAX_LIVE;
  c.forget_after_s = 5;                  /* ended ones are looked at by ended() only */
  c.on_end = ended;
  c.ctx = srv;
  if (!(srv->living = ux_runtimes_new(&c))) {
    snprintf(err, errlen, "cannot start the registry of living sandboxes");
    return -1;
  }
  return 0;
}

void ux_living_stop(ux_server *srv) { ux_runtimes_stop(srv->living); }

void ux_living_close(ux_server *srv) {
  ux_runtimes_free(srv->living);
  srv->living = NULL;
}

int ux_living_start(ux_server *srv, const char *kind, const char *id, json_t *doc,
                    char *err, size_t errlen) {
  char dir[4200], sb[32];
  const char *mode = json_string_value(json_object_get(doc, "network_mode"));
  ux_rt_start st;
  memset(&st, 0, sizeof st);
  st.ws_id = id;
  st.network = mode && !strcmp(mode, "semitrusted");
  st.vcpu = (int)json_integer_value(json_object_get(doc, "vcpu"));
  st.idle_ttl_s = -1;
  st.root = UX_LIVING_ROOT;
  if (!strcmp(kind, "session")) {
    long left = session_left(doc);
    if (left <= 0) {                     /* over while it had no sandbox */
      expire_session(srv, id);
      snprintf(err, errlen, "the session reached its ttl");
      return -3;
    }
    st.hard_ttl_s = left > FOREVER_S ? FOREVER_S : (int)left;
  }
  if (ux_resource_dir(srv, kind, id, dir, sizeof dir) != 0) {
    snprintf(err, errlen, "the %s's directory name is too long", kind);
    return -1;
  }
  st.volume_dir = dir;
  ux_random_id(sb, sizeof sb, "lv-", 12);
  st.sb_id = sb;
  int rc = ux_runtimes_start_with(srv->living, &st, err, errlen);
  if (rc == -3 && ux_runtimes_of_workspace(srv->living, id, sb) == 0) rc = 0;   /* one lives */
  if (rc != 0) return rc == -2 ? -2 : -1;
  int status = ux_runtimes_wait_ready(srv->living, sb, UX_LIVING_READY_MS);
  if (status == UX_RT_RUNNING) return 0;
  ux_rt_info info;
  if (ux_runtimes_info(srv->living, sb, &info) == 0 && info.why[0])
    snprintf(err, errlen, "%s", info.why);
  else
    snprintf(err, errlen, "the sandbox did not become ready within %d s", UX_LIVING_READY_MS / 1000);
  ux_runtimes_release(srv->living, sb);
  return -4;
}

ux_rt *ux_living_get(ux_server *srv, const char *id) {
  char sb[32];
  if (ux_runtimes_of_workspace(srv->living, id, sb) != 0) return NULL;
  if (ux_runtimes_wait_ready(srv->living, sb, UX_LIVING_READY_MS) != UX_RT_RUNNING) return NULL;
  return ux_runtimes_get(srv->living, sb);
}

ux_rt *ux_living_session(ux_server *srv, const char *id, json_t *doc, int *rc,
                         char *err, size_t errlen) {
  ux_rt *rt = ux_living_get(srv, id);
  for (int tries = 0; !rt && tries < 2; tries++) {
    if ((*rc = ux_living_start(srv, "session", id, doc, err, errlen)) != 0) return NULL;
    rt = ux_living_get(srv, id);
  }
  if (!rt) {
    *rc = -4;
    snprintf(err, errlen, "the session's sandbox ended as it started");
  }
  return rt;
}

void ux_living_end(ux_server *srv, const char *id) {
  char sb[32];
  while (ux_runtimes_of_workspace(srv->living, id, sb) == 0) ux_runtimes_release(srv->living, sb);
}

void ux_living_pause(ux_server *srv, const char *id, int paused) {
  char sb[32];
  if (ux_runtimes_of_workspace(srv->living, id, sb) == 0) ux_runtimes_pause(srv->living, sb, paused);
}

long ux_living_procs(ux_server *srv, const char *id) {
  char sb[32];
  ux_rt_info info;
  if (ux_runtimes_of_workspace(srv->living, id, sb) != 0 || ux_runtimes_info(srv->living, sb, &info) != 0)
    return -1;
  return info.procs;
}

int ux_living_netns(ux_server *srv, const char *id) {
  char sb[32];
  return ux_runtimes_of_workspace(srv->living, id, sb) == 0 ? ux_runtimes_netns(srv->living, sb) : -1;
}
