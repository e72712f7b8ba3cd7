/*
** Services as living sandboxes (svc.h). The registry is a list behind one
** mutex. A service with a bootstrap has a thread of its own: it runs the
** bootstrap through the agent (a background exec that follows its output
** until every process holding it has closed it) into the log ring, then
** asks the agent every second how many processes the sandbox still runs,
** and once none does, ends the sandbox: the service is stopped. Stopping
** a service ends its sandbox first, which ends the bootstrap's call, then
** joins the thread outside the lock, so other services stay usable while
** one is torn down.
*/
#include "server/exec/svc.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base64.h"
#include "server/exec/forward.h"
#include "server/exec/living.h"
#include "server/exec/routes.h"
#include "server/exec/vault.h"
#include "server/mem.h"
#include "server/store/store.h"

#define WATCH_MS 1000          /* how often a stopping service is looked at */

typedef struct entry {
  char id[64];
  char log[UX_SVC_LOG_CAP];   /* a ring: the last bytes of the output */
  size_t log_start, log_len;
  char tail[512];             /* why it is stopped, when that is not its own doing */
  char *script;               /* NULL: no bootstrap */
  json_t *env;                /* {NAME: value} for its processes */
  int ports[UX_FWD_PORTS], host_ports[UX_FWD_PORTS];
  size_t n_ports;
  int running, stopping, has_thread, forwarding;
  pthread_t thread;
  struct ux_svcs *owner;
  struct entry *next;
} entry;

struct ux_svcs {
  ux_server *srv;
  pthread_mutex_t mu;
  pthread_cond_t wake;        /* a stop, for the watching threads */
  ux_fwd *fwd;
  entry *list;
};

static entry *find(ux_svcs *s, const char *id) {
  for (entry *e = s->list; e; e = e->next)
    if (!strcmp(e->id, id)) return e;
  return NULL;
}

/* The forwarder's question: a frozen service refuses new connections,
** unless it unfreezes on demand (then it is thawed first). */
static int admit(void *ctx, const char *id) {
  ux_svcs *s = ctx;
  if (!ux_svcs_running(s, id)) return 0;
  json_t *doc = ux_store_get(s->srv->store, "services", id, NULL);
  int ok = doc != NULL;
  if (ok && ux_resource_frozen(doc))
    ok = json_is_true(json_object_get(doc, "unfreeze_on_demand")) && ux_service_thaw(s->srv, id, NULL) == 0;
  json_decref(doc);
  return ok;
}

ux_svcs *ux_svcs_new(ux_server *srv) {
  ux_svcs *s = ux_xcalloc(1, sizeof *s);
  s->srv = srv;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->wake, &ca);
  pthread_condattr_destroy(&ca);
  if (!(s->fwd = ux_fwd_new(admit, s))) {
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
  }
  return s;
}

/* ---------------------------------------------------------------- log */

static void log_add_locked(entry *e, const char *data, size_t len) {
  if (len >= UX_SVC_LOG_CAP) {
    data += len - UX_SVC_LOG_CAP;
    len = UX_SVC_LOG_CAP;
  }
  for (size_t i = 0; i < len; i++) {
    size_t at = (e->log_start + e->log_len) % UX_SVC_LOG_CAP;
    e->log[at] = data[i];
    if (e->log_len < UX_SVC_LOG_CAP) e->log_len++;
    else e->log_start = (e->log_start + 1) % UX_SVC_LOG_CAP;
  }
}

/* The bootstrap's chunks (and, with none, whether to stop following). */
static int on_output(void *ctx, const json_t *ev) {
  entry *e = ctx;
  pthread_mutex_lock(&e->owner->mu);
  int stop = e->stopping;
  if (ev) {
    json_t *d = json_object_get(ev, "data");
    log_add_locked(e, json_string_value(d), json_string_length(d));
  }
  pthread_mutex_unlock(&e->owner->mu);
  return stop;
}

/* ------------------------------------------------------------- thread */

static void set_tail(entry *e, const char *fmt, const char *what) {
  pthread_mutex_lock(&e->owner->mu);
  if (!e->stopping) snprintf(e->tail, sizeof e->tail, fmt, what);
  pthread_mutex_unlock(&e->owner->mu);
}

/* The bootstrap: until every process holding its output has ended. */
static void run_bootstrap(entry *e, ux_rt *rt) {
  char err[300] = "";
  char *b64 = unsb_base64_encode((const unsigned char *)e->script, strlen(e->script), NULL);
  json_t *files = json_pack("[{s:s, s:s, s:i}]", "path", UX_SVC_BOOTSTRAP, "content_base64", b64 ? b64 : "",
                            "mode", 0755);
  free(b64);
  json_t *req = json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:i, s:O, s:o}", "op", "exec",
                          "command", "exec bash " UX_SVC_BOOTSTRAP " 2>&1", "background", 1, "follow", 1,
                          "stream", 1, "collect", 0, "output_max", 0, "timeout_seconds", 0,
                          "env", e->env, "files", files), *res = NULL;
  int rc = req ? ux_rt_call_follow(rt, req, 0, INT_MAX, on_output, e, &res, err, sizeof err) : UX_RTC_INVALID;
  json_decref(req);
  json_decref(res);
  if (rc != UX_RTC_OK && rc != UX_RTC_CANCELLED) set_tail(e, "bootstrap failed: %s\n", err);
}

/* The processes the sandbox runs besides the agent: -1 when it is gone. */
static long procs_now(ux_rt *rt) {
  char err[200];
  json_t *req = json_pack("{s:s}", "op", "ping"), *res = NULL;
  int rc = ux_rt_call(rt, req, 0, 10000, NULL, NULL, &res, err, sizeof err);
  json_t *p = json_object_get(res, "procs");
  long n = rc == UX_RTC_OK && json_is_integer(p) ? (long)json_integer_value(p) : rc == UX_RTC_GONE ? -1 : 1;
  json_decref(req);
  json_decref(res);
  return n;
}

/* Waits WATCH_MS or a stop (mu held): 1 when stopping. */
static int nap_locked(ux_svcs *s, entry *e) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += WATCH_MS / 1000;
  if (!e->stopping) pthread_cond_timedwait(&s->wake, &s->mu, &ts);
  return e->stopping;
}

static void *service_main(void *arg) {
  entry *e = arg;
  ux_svcs *s = e->owner;
  ux_rt *rt = ux_living_get(s->srv, e->id);
  if (rt) run_bootstrap(e, rt);
  /* its daemons keep it running; once nothing runs, it is stopped */
  long n = rt ? procs_now(rt) : -1;
  pthread_mutex_lock(&s->mu);
  while (n > 0 && !nap_locked(s, e)) {
    pthread_mutex_unlock(&s->mu);
    n = procs_now(rt);
    pthread_mutex_lock(&s->mu);
  }
  int ended = !e->stopping;
  if (ended) e->running = 0;
  pthread_mutex_unlock(&s->mu);
  if (rt) ux_rt_put(rt);
  if (ended) {                           /* a stopped service holds nothing */
    ux_fwd_close(s->fwd, e->id);
    ux_living_end(s->srv, e->id);
  }
  return NULL;
}

/* -------------------------------------------------------------- start */

static entry *new_entry(ux_svcs *s, json_t *doc, char **env, size_t n_env) {
  entry *e = ux_xcalloc(1, sizeof *e);
  const char *script = json_string_value(json_object_get(doc, "bootstrap"));
  snprintf(e->id, sizeof e->id, "%s", json_string_value(json_object_get(doc, "id")));
  e->owner = s;
  e->script = script && *script ? ux_xstrdup(script) : NULL;
  e->env = json_object();
  for (size_t i = 0; i < n_env; i++) {
    const char *eq = strchr(env[i], '=');
    char *name = eq ? ux_xstrndup(env[i], (size_t)(eq - env[i])) : NULL;
    if (name) json_object_set_new(e->env, name, json_string(eq + 1));
    free(name);
  }
  ux_vault_env_free(env, n_env);
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(doc, "ports"), i, p)
    if (e->n_ports < UX_FWD_PORTS && json_is_integer(p)) e->ports[e->n_ports++] = (int)json_integer_value(p);
  return e;
}

static void free_entry(entry *e) {
  free(e->script);
  json_decref(e->env);
  free(e);
}

/* Its ports, forwarded from 127.0.0.1 (a failure is logged: the service
** runs all the same). */
static void forward(ux_svcs *s, entry *e) {
  char err[300];
  if (!e->n_ports) return;
  int ns = ux_living_netns(s->srv, e->id);
  if (ns < 0 || ux_fwd_open(s->fwd, e->id, ns, e->ports, e->n_ports, e->host_ports, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: service %s: its ports are not forwarded: %s\n", e->id,
            ns < 0 ? "its sandbox has no network namespace" : err);
    return;
  }
  e->forwarding = 1;
}

int ux_svcs_start(ux_svcs *s, json_t *doc, char **env, size_t n_env, char *err, size_t errlen) {
  const char *id = json_string_value(json_object_get(doc, "id"));
  if (!id) { ux_vault_env_free(env, n_env); snprintf(err, errlen, "a service without an id"); return -1; }
  ux_svcs_stop(s, id);                   /* a restart replaces it */
  entry *e = new_entry(s, doc, env, n_env);
  int rc = ux_living_start(s->srv, "service", id, doc, err, errlen);
  if (rc == 0) forward(s, e);
  else snprintf(e->tail, sizeof e->tail, "the service could not start: %.400s\n", err);
  pthread_mutex_lock(&s->mu);
  e->running = rc == 0;
  e->next = s->list;
  s->list = e;
  if (rc == 0 && e->script) {
    if (pthread_create(&e->thread, NULL, service_main, e) == 0) e->has_thread = 1;
    else snprintf(e->tail, sizeof e->tail, "cannot start the bootstrap's thread\n");
  }
  pthread_mutex_unlock(&s->mu);
  return rc == 0 ? 0 : rc == -2 ? UX_SVCS_NOMEM : -1;
}

/* --------------------------------------------------------- the others */

int ux_svcs_running(ux_svcs *s, const char *id) {
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, id);
  int r = e && e->running;
  pthread_mutex_unlock(&s->mu);
  return r;
}

char *ux_svcs_log(ux_svcs *s, const char *id, size_t *len) {
  char *out = ux_xmalloc(UX_SVC_LOG_CAP + sizeof ((entry *)0)->tail + 1);
  *len = 0;
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, id);
  if (e) {
    for (size_t i = 0; i < e->log_len; i++) out[(*len)++] = e->log[(e->log_start + i) % UX_SVC_LOG_CAP];
    size_t t = strlen(e->tail);
    memcpy(out + *len, e->tail, t);
    *len += t;
  }
  pthread_mutex_unlock(&s->mu);
  out[*len] = '\0';
  return out;
}

json_t *ux_svcs_urls(ux_svcs *s, const char *id) {
  json_t *arr = json_array();
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, id);
  for (size_t i = 0; e && e->running && e->forwarding && i < e->n_ports; i++) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", e->host_ports[i]);
    json_array_append_new(arr, json_pack("{s:i, s:s}", "port", e->ports[i], "url", url));
  }
  pthread_mutex_unlock(&s->mu);
  return arr;
}

/* Ends e's sandbox and thread, then frees it (e is unlinked). */
static void stop_entry(ux_svcs *s, entry *e) {
  ux_fwd_close(s->fwd, e->id);
  ux_living_end(s->srv, e->id);          /* the bootstrap's call ends with it */
  if (e->has_thread) pthread_join(e->thread, NULL);
  free_entry(e);
}

/* Takes the entry of id out of the list (mu held), marked stopping. */
static entry *unlink_id(ux_svcs *s, const char *id) {
  for (entry **p = &s->list; *p; p = &(*p)->next)
    if (!strcmp((*p)->id, id)) {
      entry *e = *p;
      *p = e->next;
      e->stopping = 1;
      pthread_cond_broadcast(&s->wake);
      return e;
    }
  return NULL;
}

void ux_svcs_stop(ux_svcs *s, const char *id) {
  pthread_mutex_lock(&s->mu);
  entry *e = unlink_id(s, id);
  pthread_mutex_unlock(&s->mu);
  if (e) stop_entry(s, e);
}

void ux_svcs_ended(ux_svcs *s, const char *id, const char *sb_id, const char *why) {
  (void)sb_id;
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, id);
  int mine = e && !e->stopping && e->running;
  if (mine) {
    e->running = 0;
    snprintf(e->tail, sizeof e->tail, "the service's sandbox ended: %.400s\n", why);
  }
  pthread_mutex_unlock(&s->mu);
  if (mine) ux_fwd_close(s->fwd, id);
}

void ux_svcs_stop_all(ux_svcs *s) {
  pthread_mutex_lock(&s->mu);
  entry *all = s->list;
  s->list = NULL;
  for (entry *e = all; e; e = e->next) e->stopping = 1;
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->mu);
  ux_living_stop(s->srv);                /* every sandbox ends at once */
  while (all) {
    entry *next = all->next;
    stop_entry(s, all);
    all = next;
  }
}

void ux_svcs_free(ux_svcs *s) {
  if (!s) return;
  ux_fwd_free(s->fwd);
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
