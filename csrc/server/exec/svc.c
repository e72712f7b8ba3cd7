/*
** Service bootstraps. The registry is a list behind one mutex; each entry
** with a bootstrap has its own thread blocked in ux_run_wait. Stopping an
** entry cancels its run and joins its thread outside the lock, so other
** services stay usable while one is being torn down.
*/
#include "server/exec/svc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/exec/exec_spec.h"
#include "server/exec/vault.h"
#include "server/mem.h"

typedef struct entry {
  char id[128];
  char log[UX_SVC_LOG_CAP];  /* a ring: the last bytes of the output */
  size_t log_start, log_len;
  ux_exec_spec *spec;     /* NULL: no bootstrap */
  unsigned long long run_id;
  int running, stopping, has_thread;
  char tail[512];         /* the runner's own error, if it could not run */
  pthread_t thread;
  struct ux_svcs *owner;
  struct entry *next;
} entry;

struct ux_svcs {
  pthread_mutex_t mu;
  entry *list;
};

ux_svcs *ux_svcs_new(void) {
  ux_svcs *s = ux_xcalloc(1, sizeof *s);
  if (pthread_mutex_init(&s->mu, NULL) != 0) { free(s); return NULL; }
  return s;
}

static void *bootstrap_thread(void *arg) {
  entry *e = arg;
  ux_svcs *s = e->owner;
  char err[256] = "";
  ux_run_result res;
  memset(&res, 0, sizeof res);
  ux_run *run = ux_exec_spec_open_volume(e->spec, err, sizeof err) == 0
                ? ux_run_start(&e->spec->run, err, sizeof err) : NULL;
  pthread_mutex_lock(&s->mu);
  e->run_id = run ? ux_run_id(run) : 0;
  if (!run) {
    snprintf(e->tail, sizeof e->tail, "bootstrap could not start: %s\n", err);
    e->running = 0;
    ux_mem_release(&e->spec->mem);
  }
  int stop_now = e->stopping;
  pthread_mutex_unlock(&s->mu);
  if (!run) return NULL;
  if (stop_now) ux_run_cancel(run);
  ux_run_wait(run, &res);
  pthread_mutex_lock(&s->mu);
  e->run_id = 0;
  e->running = 0;
  ux_mem_release(&e->spec->mem);        /* a stopped service holds no memory */
  if (res.error[0]) snprintf(e->tail, sizeof e->tail, "bootstrap failed: %s\n", res.error);
  pthread_mutex_unlock(&s->mu);
  ux_run_result_free(&res);
  return NULL;
}

/* The runner's output hook (waiting thread): appends to the ring. */
static void on_output(void *ctx, int channel, const char *data, size_t len) {
  (void)channel;
  entry *e = ctx;
  pthread_mutex_lock(&e->owner->mu);
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
  pthread_mutex_unlock(&e->owner->mu);
}

/* The bootstrap's spec: stderr joins stdout so the log keeps their order. */
static ux_exec_spec *bootstrap_spec(entry *e, const char *bootstrap, const char *dir,
                                    int network, int vcpu, char **env, size_t n_env) {
  size_t n = strlen(bootstrap) + 16;
  char *code = ux_xmalloc(n);
  if (!code) { ux_vault_env_free(env, n_env); return NULL; }
  snprintf(code, n, "exec 2>&1\n%s\n", bootstrap);
  ux_exec_spec *spec = ux_exec_spec_command(code, network, vcpu, 0);
  free(code);
  if (spec) ux_exec_spec_take_env(spec, env, n_env);
  else ux_vault_env_free(env, n_env);
  if (!spec || ux_exec_spec_set_volume(spec, dir) != 0) {
    ux_exec_spec_free(spec);
    return NULL;
  }
  spec->run.output_cap = 4096;            /* the ring has it all */
  spec->run.on_output = on_output;
  spec->run.output_ctx = e;
  return spec;
}

static void stop_entry(ux_svcs *s, entry *e);

/* Takes the entry of id out of the list (locked); NULL if there is none. */
static entry *unlink_id(ux_svcs *s, const char *id) {
  for (entry **p = &s->list; *p; p = &(*p)->next)
    if (!strcmp((*p)->id, id)) {
      entry *e = *p;
      *p = e->next;
      return e;
    }
  return NULL;
}

/* The new bootstrap's memory (locked): the claim of the one it replaces
** is taken over first, so a restart of the same size always fits. 0, or
** -1 with the reason in the entry's log. */
static int claim_bootstrap(entry *e, entry *old) {
  char why[200];
  if (old && old->spec) ux_mem_move(&e->spec->mem, &old->spec->mem);
  if (ux_exec_spec_claim(e->spec, why, sizeof why) == 0) return 0;
  ux_mem_release(&e->spec->mem);
  snprintf(e->tail, sizeof e->tail, "bootstrap could not start: %s\n", why);
  e->running = 0;
  return -1;
}

int ux_svcs_start(ux_svcs *s, const char *id, const char *bootstrap,
                  const char *dir, int network, int vcpu, char **env, size_t n_env,
                  char *err, size_t errlen) {
  entry *e = ux_xcalloc(1, sizeof *e);
  if (!e) { ux_vault_env_free(env, n_env); return -1; }
  snprintf(e->id, sizeof e->id, "%s", id);
  e->owner = s;
  e->running = 1;
  if (bootstrap && *bootstrap) {
    e->spec = bootstrap_spec(e, bootstrap, dir, network, vcpu, env, n_env);
    if (!e->spec) { free(e); return -1; }
  } else {
    ux_vault_env_free(env, n_env);
  }
  pthread_mutex_lock(&s->mu);
  /* one entry per service: a second start (two restores at once) replaces
  ** the first, which is stopped below, outside the lock */
  entry *old = unlink_id(s, id);
  int rc = e->spec && claim_bootstrap(e, old) != 0 ? UX_SVCS_NOMEM : 0;
  if (rc) snprintf(err, errlen, "%.*s", (int)strcspn(e->tail, "\n"), e->tail);
  e->next = s->list;
  s->list = e;
  if (e->spec && !rc) {
    if (pthread_create(&e->thread, NULL, bootstrap_thread, e) == 0) e->has_thread = 1;
    else { e->running = 0; snprintf(e->tail, sizeof e->tail, "cannot start bootstrap thread\n"); }
  }
  pthread_mutex_unlock(&s->mu);
  if (old) stop_entry(s, old);
  return rc;
}

static entry *find(ux_svcs *s, const char *id) {
  for (entry *e = s->list; e; e = e->next)
    if (!strcmp(e->id, id)) return e;
  return NULL;
}

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
  if (!out) return NULL;
  pthread_mutex_lock(&s->mu);
  entry *e = find(s, id);
  if (e) {
    for (size_t i = 0; i < e->log_len; i++)
      out[(*len)++] = e->log[(e->log_start + i) % UX_SVC_LOG_CAP];
    size_t t = strlen(e->tail);
    memcpy(out + *len, e->tail, t);
    *len += t;
  }
  pthread_mutex_unlock(&s->mu);
  out[*len] = '\0';
  return out;
}

static void stop_entry(ux_svcs *s, entry *e) {
  pthread_mutex_lock(&s->mu);
  e->stopping = 1;
  if (e->run_id) ux_run_cancel_id(e->run_id);
  pthread_mutex_unlock(&s->mu);
  if (e->has_thread) pthread_join(e->thread, NULL);
  ux_exec_spec_free(e->spec);
  free(e);
}

void ux_svcs_stop(ux_svcs *s, const char *id) {
  pthread_mutex_lock(&s->mu);
  entry *e = unlink_id(s, id);
  pthread_mutex_unlock(&s->mu);
  if (e) stop_entry(s, e);
}

void ux_svcs_stop_all(ux_svcs *s) {
  pthread_mutex_lock(&s->mu);
  entry *all = s->list;
  s->list = NULL;
  /* cancel every run first so they die in parallel, then join */
  for (entry *e = all; e; e = e->next) {
    e->stopping = 1;
    if (e->run_id) ux_run_cancel_id(e->run_id);
  }
  pthread_mutex_unlock(&s->mu);
  while (all) {
    entry *next = all->next;
    if (all->has_thread) pthread_join(all->thread, NULL);
    ux_exec_spec_free(all->spec);
    free(all);
    all = next;
  }
}

void ux_svcs_free(ux_svcs *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free(s);
}
