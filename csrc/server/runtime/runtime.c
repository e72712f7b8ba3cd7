/*
** The registry of runtimes and the calls of runtime.h. Every runtime has
** a thread of its own (runtime/run.c) because the runner wants the thread
** that starts a sandbox to wait for it and to stay alive meanwhile; one
** watcher thread (runtime/watch.c) does everything timed. This file only
** books: it never blocks under the lock, and waits (for a start, for a
** stop) are bounded condition waits.
*/
#include "server/runtime/runtime_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/sandbox/archive.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"

#define STOP_WAIT_MS    30000   /* for a stopped runtime's processes to go */
#define HANDLES_WAIT_MS 5000    /* at shutdown, for calls to give back handles */

/* ---------------------------------------------------------------------
** Small helpers
** ------------------------------------------------------------------- */

void ux_rt_wake(ux_runtimes *rts) {
  uint64_t one = 1;
  if (write(rts->wake_fd, &one, sizeof one) < 0) { /* already pending */ }
}

void ux_rt_unref(ux_rt *rt) {
  if (atomic_fetch_sub(&rt->refs, 1) != 1) return;
  if (rt->ping_fd >= 0) close(rt->ping_fd);
  if (rt->control >= 0) close(rt->control);
  ux_mem_release(&rt->mem);              /* given back at its end already */
  ux_agent_frames_free(&rt->ping_in);
  for (size_t i = 0; rt->env && rt->env[i]; i++) free(rt->env[i]);
  free(rt->env);
  free(rt->volume);
  free(rt);
}

int ux_rt_live(const ux_rt *rt) {
  return !rt->done && !rt->kill && (rt->status == UX_RT_PENDING || rt->status == UX_RT_RUNNING);
}

void ux_rt_kill_locked(ux_rt *rt, int status, const char *why, int soft) {
  if (rt->done) return;
  if (rt->kill) {                /* a hard stop does not wait for a soft one */
    if (!soft && rt->cancel_at) {
      rt->cancel_at = 0;
      if (rt->run_id) ux_run_cancel_id(rt->run_id);
    }
    return;
  }
  rt->kill = 1;
  rt->kill_status = status;
  rt->kill_soft = soft;
  snprintf(rt->kill_why, sizeof rt->kill_why, "%s", why);
  if (soft) {
    rt->cancel_at = ux_now_ms() + UX_RT_SOFT_MS;   /* the watcher cancels */
    ux_rt_wake(rt->rts);
  } else if (rt->run_id) {
    ux_run_cancel_id(rt->run_id);
  }
}

/* Waits on rts->changed (mu held) until *until_ms; 0 once it has passed. */
static int wait_until(ux_runtimes *rts, long until_ms) {
  long left = until_ms - ux_now_ms();
  if (left <= 0) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += left / 1000;
  ts.tv_nsec += (left % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  pthread_cond_timedwait(&rts->changed, &rts->mu, &ts);
  return 1;
}

/* The visible runtime sb_id (mu held), or NULL. */
static ux_rt *find(ux_runtimes *rts, const char *sb_id) {
  for (ux_rt *rt = rts->head; rt; rt = rt->next)
    if (!rt->forgotten && !strcmp(rt->sb_id, sb_id)) return rt;
  return NULL;
}

/* An id fits its field and is made of id characters (ids.h). */
static int id_ok(const char *id, size_t size) {
  return id && ux_valid_id(id) && strlen(id) < size;
}

/* ---------------------------------------------------------------------
** The registry
** ------------------------------------------------------------------- */

static void fill_defaults(ux_rt_config *c) {
  if (c->idle_ttl_s <= 0) c->idle_ttl_s = 1800;
  if (c->hard_ttl_s <= 0) c->hard_ttl_s = 43200;
  if (c->start_timeout_s <= 0) c->start_timeout_s = 110;
  if (c->max_live <= 0) c->max_live = 64;
  /* an agent that stops answering (SIGSTOP from the code it serves) is
  ** declared dead within seconds, so its calls end (502) long before
  ** their own 45 s deadline; a ping is one fork in the agent */
  if (c->health_interval_s <= 0) c->health_interval_s = 1;
  if (c->health_timeout_s <= 0) c->health_timeout_s = 5;
  if (c->forget_after_s <= 0) c->forget_after_s = 60;
  if (c->vcpu <= 0) c->vcpu = 1;
}

static int copy_env(ux_runtimes *rts, const char *const *env) {
  size_t n = 0;
  while (env && env[n]) n++;
  if (!(rts->env = calloc(n + 1, sizeof *rts->env))) return -1;
  for (rts->n_env = 0; rts->n_env < n; rts->n_env++)
    if (!(rts->env[rts->n_env] = strdup(env[rts->n_env]))) return -1;
  return 0;
}

static void free_registry(ux_runtimes *rts) {
  for (size_t i = 0; rts->env && i < rts->n_env; i++) free(rts->env[i]);
  free(rts->env);
  if (rts->agent_fd >= 0) close(rts->agent_fd);
  if (rts->wake_fd >= 0) close(rts->wake_fd);
  pthread_cond_destroy(&rts->changed);
  pthread_mutex_destroy(&rts->mu);
  free(rts);
}

ux_runtimes *ux_runtimes_new(const ux_rt_config *cfg) {
  ux_runtimes *rts = calloc(1, sizeof *rts);
  if (!rts) return NULL;
  rts->cfg = *cfg;
  fill_defaults(&rts->cfg);
  rts->agent_fd = rts->wake_fd = -1;
  pthread_mutex_init(&rts->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&rts->changed, &ca);
  pthread_condattr_destroy(&ca);
  /* a missing agent is reported by each start, not here: the server can
  ** still serve everything else */
  if (cfg->agent_path && cfg->agent_path[0]) rts->agent_fd = open(cfg->agent_path, O_PATH | O_CLOEXEC);
  else if (ux_archive_agent_fd() >= 0) rts->agent_fd = fcntl(ux_archive_agent_fd(), F_DUPFD_CLOEXEC, 0);
  rts->cfg.agent_path = NULL;
  rts->cfg.agent_env = NULL;
  if (copy_env(rts, cfg->agent_env) != 0 ||
      (rts->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
      pthread_create(&rts->watcher, NULL, ux_rt_watch, rts) != 0) {
    free_registry(rts);
    return NULL;
  }
  rts->has_watcher = 1;
  return rts;
}

void ux_runtimes_stop(ux_runtimes *rts) {
  if (!rts) return;
  pthread_mutex_lock(&rts->mu);
  rts->stopping = 1;
  for (ux_rt *rt = rts->head; rt; rt = rt->next)
    ux_rt_kill_locked(rt, UX_RT_RELEASED, "the server is shutting down", 0);
  pthread_mutex_unlock(&rts->mu);
  ux_rt_wake(rts);
}

/* Stops everything, joins every thread; rts->mu is not held. */
static void stop_all(ux_runtimes *rts) {
  ux_runtimes_stop(rts);
  if (rts->has_watcher) pthread_join(rts->watcher, NULL);
  pthread_mutex_lock(&rts->mu);
  while (rts->head) {
    ux_rt *rt = rts->head;
    rts->head = rt->next;
    pthread_mutex_unlock(&rts->mu);
    pthread_join(rt->thread, NULL);
    ux_rt_unref(rt);
    pthread_mutex_lock(&rts->mu);
  }
  pthread_mutex_unlock(&rts->mu);
}

void ux_runtimes_free(ux_runtimes *rts) {
  if (!rts) return;
  stop_all(rts);
  pthread_mutex_lock(&rts->mu);
  long end = ux_now_ms() + HANDLES_WAIT_MS;
  while (rts->handles > 0 && wait_until(rts, end)) {}
  int left = rts->handles;
  pthread_mutex_unlock(&rts->mu);
  if (left > 0) {
    /* a handle still in use points here: keeping the registry is the
    ** only safe choice (the process is about to exit anyway) */
    fprintf(stderr, "unsandboxd: %d runtime handle(s) still held at shutdown\n", left);
    return;
  }
  free_registry(rts);
}

/* ---------------------------------------------------------------------
** Start
** ------------------------------------------------------------------- */

/* Whether sb_id may start for ws_id now (mu held): 0 yes, -2 capacity,
** -3 the workspace has a live runtime, -1 otherwise; 1 when a stopping
** runtime of the workspace must end first. */
static int admissible(ux_runtimes *rts, const char *sb_id, const char *ws_id,
                      char *err, size_t errlen) {
  int busy = 0, stopping_same_ws = 0;
  if (rts->stopping) { snprintf(err, errlen, "the server is shutting down"); return -1; }
  if (rts->agent_fd < 0) { snprintf(err, errlen, "the runtime agent is not available"); return -1; }
  for (ux_rt *rt = rts->head; rt; rt = rt->next) {
    if (!strcmp(rt->sb_id, sb_id) && !rt->forgotten) {
      snprintf(err, errlen, "runtime %s exists already", sb_id);
      return -1;
    }
    if (rt->done) continue;
    busy++;
    if (!strcmp(rt->ws_id, ws_id)) {
      if (ux_rt_live(rt)) {
        snprintf(err, errlen, "workspace %s already has a live runtime (%s)", ws_id, rt->sb_id);
        return -3;
      }
      stopping_same_ws = 1;
    }
  }
  if (stopping_same_ws) return 1;
  if (busy >= rts->cfg.max_live) {
    snprintf(err, errlen, "all %d runtimes are in use", rts->cfg.max_live);
    return -2;
  }
  return 0;
}

/* Waits (mu held, bounded) until admissible says something final. */
static int admit(ux_runtimes *rts, const char *sb_id, const char *ws_id, char *err, size_t errlen) {
  long end = ux_now_ms() + STOP_WAIT_MS;
  int rc;
  while ((rc = admissible(rts, sb_id, ws_id, err, errlen)) == 1)
    if (!wait_until(rts, end)) {
      snprintf(err, errlen, "the previous runtime of workspace %s is still stopping", ws_id);
      return -1;
    }
  return rc;
}

/* A copy of a NULL-terminated string array (NULL stays an empty one). */
static char **copy_strings(const char *const *v) {
  size_t n = 0;
  while (v && v[n]) n++;
  char **out = calloc(n + 1, sizeof *out);
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = strdup(v[i]))) {
      while (i-- > 0) free(out[i]);
      free(out);
      return NULL;
    }
  return out;
}

static ux_rt *new_rt(ux_runtimes *rts, const ux_rt_start *st) {
  ux_rt *rt = calloc(1, sizeof *rt);
  if (!rt || !(rt->volume = strdup(st->volume_dir)) || !(rt->env = copy_strings(st->env))) {
    if (rt) free(rt->volume);
    free(rt);
    return NULL;
  }
  rt->rts = rts;
  atomic_init(&rt->refs, 1);
  snprintf(rt->sb_id, sizeof rt->sb_id, "%s", st->sb_id);
  snprintf(rt->ws_id, sizeof rt->ws_id, "%s", st->ws_id);
  snprintf(rt->template_id, sizeof rt->template_id, "%s", st->template_id);
  snprintf(rt->root, sizeof rt->root, "%s", st->root ? st->root : "/workspace");
  rt->network = st->network;
  rt->vcpu = st->vcpu > 0 ? st->vcpu : rts->cfg.vcpu;
  rt->hard_ttl_s = st->hard_ttl_s > 0 ? st->hard_ttl_s : rts->cfg.hard_ttl_s;
  rt->idle_ttl_s = st->idle_ttl_s ? st->idle_ttl_s : rts->cfg.idle_ttl_s;
  rt->procs = -1;
  rt->status = UX_RT_PENDING;
  rt->control = rt->ping_fd = rt->volume_fd = -1;
  ux_agent_frames_init(&rt->ping_in);
  rt->created_at = ux_now();
  rt->created_ms = rt->used_ms = ux_now_ms();
  return rt;
}

int ux_runtimes_start(ux_runtimes *rts, const char *sb_id, const char *ws_id,
                      const char *volume_dir, const char *template_id,
                      char *err, size_t errlen) {
  ux_rt_start st;
  memset(&st, 0, sizeof st);
  st.sb_id = sb_id;
  st.ws_id = ws_id;
  st.volume_dir = volume_dir;
  st.template_id = template_id;
  return ux_runtimes_start_with(rts, &st, err, errlen);
}

/* A start's shape is one the runner takes: the root a clean absolute
** path it may mount on, sizes in range. 0, or -1 with err. */
static int shape_ok(const ux_rt_start *st, char *err, size_t errlen) {
  const char *root = st->root;
  if (root && (root[0] != '/' || strlen(root) >= 64 || strstr(root, "..") || strchr(root + 1, '/'))) {
    snprintf(err, errlen, "the runtime's root must be one absolute path component");
    return -1;
  }
  if (st->vcpu < 0 || st->vcpu > 8 || st->hard_ttl_s < 0 || st->idle_ttl_s < -1) {
    snprintf(err, errlen, "bad runtime vcpu or TTL");
    return -1;
  }
  return 0;
}

int ux_runtimes_start_with(ux_runtimes *rts, const ux_rt_start *st_in, char *err, size_t errlen) {
  ux_rt_start stc = *st_in, *st = &stc;
  if (!st->template_id) st->template_id = "default";
  const char *sb_id = st->sb_id, *ws_id = st->ws_id, *volume_dir = st->volume_dir;
  if (!id_ok(sb_id, 32) || !id_ok(ws_id, 64) || !id_ok(st->template_id, 64)) {
    snprintf(err, errlen, "bad runtime, workspace or template id");
    return -1;
  }
  if (!volume_dir || volume_dir[0] != '/') {
    snprintf(err, errlen, "the volume must be an absolute path");
    return -1;
  }
  if (shape_ok(st, err, errlen) != 0) return -1;
  pthread_mutex_lock(&rts->mu);
  int rc = admit(rts, sb_id, ws_id, err, errlen);
  pthread_mutex_unlock(&rts->mu);
  if (rc != 0) return rc;
  /* outside the lock: acquiring may mount the volume, or wait for a
  ** restore of it to finish */
  int vfd = ux_volume_acquire(volume_dir, err, errlen);
  if (vfd < 0) return -1;
  ux_rt *rt = new_rt(rts, st);
  pthread_mutex_lock(&rts->mu);
  if (!rt) { rc = -1; snprintf(err, errlen, "out of memory"); }
  else rc = admit(rts, sb_id, ws_id, err, errlen);   /* it may have changed meanwhile */
  /* its memory is admitted against the budget like every run's: a
  ** refusal is capacity (the platform's transient 429) */
  if (rc == 0 && ux_mem_claim(&rt->mem, ux_run_memory_bytes(rt->vcpu), err, errlen) != 0)
    rc = -2;
  if (rc == 0) {
    rt->volume_fd = vfd;
    if (pthread_create(&rt->thread, NULL, ux_rt_thread, rt) != 0) {
      snprintf(err, errlen, "cannot start a thread for the runtime: %s", strerror(errno));
      rc = -1;
    } else {
      rt->next = rts->head;
      rts->head = rt;
    }
  }
  pthread_mutex_unlock(&rts->mu);
  if (rc != 0) {
    close(vfd);
    ux_volume_release(volume_dir);
    if (rt) { rt->volume_fd = -1; ux_rt_unref(rt); }
  }
  return rc;
}

/* ---------------------------------------------------------------------
** Lookups
** ------------------------------------------------------------------- */

int ux_runtimes_wait_ready(ux_runtimes *rts, const char *sb_id, int timeout_ms) {
  if (!sb_id) return 0;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  int st = 0;
  if (rt) {
    atomic_fetch_add(&rt->refs, 1);
    long end = ux_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (rt->status == UX_RT_PENDING && wait_until(rts, end)) {}
    st = rt->status;
  }
  pthread_mutex_unlock(&rts->mu);
  if (rt) ux_rt_unref(rt);
  return st;
}

int ux_runtimes_info(ux_runtimes *rts, const char *sb_id, ux_rt_info *out) {
  memset(out, 0, sizeof *out);
  if (!sb_id) return -1;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  if (rt) {
    snprintf(out->sb_id, sizeof out->sb_id, "%s", rt->sb_id);
    snprintf(out->ws_id, sizeof out->ws_id, "%s", rt->ws_id);
    snprintf(out->template_id, sizeof out->template_id, "%s", rt->template_id);
    snprintf(out->why, sizeof out->why, "%s", rt->why);
    out->status = rt->status;
    out->health_checks = rt->health_checks;
    out->procs = rt->procs;
    out->paused = rt->paused;
    out->created_at = rt->created_at;
    out->expires_at = rt->created_at + rt->hard_ttl_s;
    long idle_end_ms = rt->used_ms + (long)rt->idle_ttl_s * 1000;
    out->idle_expires_at = rt->idle_ttl_s < 0 ? 0 : rt->created_at + (idle_end_ms - rt->created_ms) / 1000;
    if (out->idle_expires_at > out->expires_at) out->idle_expires_at = out->expires_at;
  }
  pthread_mutex_unlock(&rts->mu);
  return rt ? 0 : -1;
}

int ux_runtimes_of_workspace(ux_runtimes *rts, const char *ws_id, char sb_id[32]) {
  int rc = -1;
  if (!ws_id) return -1;
  pthread_mutex_lock(&rts->mu);
  for (ux_rt *rt = rts->head; rt && rc != 0; rt = rt->next)
    if (!rt->forgotten && ux_rt_live(rt) && !strcmp(rt->ws_id, ws_id)) {
      snprintf(sb_id, 32, "%s", rt->sb_id);
      rc = 0;
    }
  pthread_mutex_unlock(&rts->mu);
  return rc;
}

int ux_runtimes_count(ux_runtimes *rts, const char *const *ws_ids, size_t n) {
  int count = 0;
  pthread_mutex_lock(&rts->mu);
  for (ux_rt *rt = rts->head; rt; rt = rt->next) {
    if (rt->forgotten || !ux_rt_live(rt)) continue;
    for (size_t i = 0; i < n; i++)
      if (ws_ids[i] && !strcmp(ws_ids[i], rt->ws_id)) { count++; break; }
  }
  pthread_mutex_unlock(&rts->mu);
  return count;
}

int ux_runtimes_pause(ux_runtimes *rts, const char *sb_id, int paused) {
  if (!sb_id) return -1;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  if (rt) {
    rt->paused = paused;
    ux_rt_ping_close(rt);          /* an answer now would be a frozen agent's */
    rt->ping_next = 0;             /* resumed: a health check at once */
    rt->used_ms = ux_now_ms();
  }
  pthread_mutex_unlock(&rts->mu);
  ux_rt_wake(rts);
  return rt ? 0 : -1;
}

int ux_runtimes_netns(ux_runtimes *rts, const char *sb_id) {
  if (!sb_id) return -1;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  unsigned long long run = rt && ux_rt_live(rt) ? rt->run_id : 0;
  pthread_mutex_unlock(&rts->mu);
  return run ? ux_run_netns_id(run) : -1;
}

void ux_runtimes_touch(ux_runtimes *rts, const char *sb_id) {
  if (!sb_id) return;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  if (rt && ux_rt_live(rt)) rt->used_ms = ux_now_ms();
  pthread_mutex_unlock(&rts->mu);
}

/* ---------------------------------------------------------------------
** Release and handles
** ------------------------------------------------------------------- */

int ux_runtimes_release(ux_runtimes *rts, const char *sb_id) {
  if (!sb_id) return -1;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  if (!rt) { pthread_mutex_unlock(&rts->mu); return -1; }
  rt->released = 1;
  rt->forgotten = 1;
  ux_rt_kill_locked(rt, UX_RT_RELEASED, "released", 0);
  /* wait for its processes to be gone, unless this is the runtime's own
  ** thread (on_end releasing what just ended) */
  if (!pthread_equal(pthread_self(), rt->thread)) {
    atomic_fetch_add(&rt->refs, 1);
    long end = ux_now_ms() + STOP_WAIT_MS;
    while (!rt->done && wait_until(rts, end)) {}
    pthread_mutex_unlock(&rts->mu);
    ux_rt_unref(rt);
  } else {
    pthread_mutex_unlock(&rts->mu);
  }
  ux_rt_wake(rts);
  return 0;
}

ux_rt *ux_runtimes_get(ux_runtimes *rts, const char *sb_id) {
  if (!sb_id) return NULL;
  pthread_mutex_lock(&rts->mu);
  ux_rt *rt = find(rts, sb_id);
  if (rt && (rt->status != UX_RT_RUNNING || !ux_rt_live(rt))) rt = NULL;
  if (rt) {
    atomic_fetch_add(&rt->refs, 1);
    rts->handles++;
  }
  pthread_mutex_unlock(&rts->mu);
  return rt;
}

const char *ux_rt_sb_id(const ux_rt *rt) { return rt->sb_id; }

void ux_rt_put(ux_rt *rt) {
  if (!rt) return;
  ux_runtimes *rts = rt->rts;
  pthread_mutex_lock(&rts->mu);
  rts->handles--;
  pthread_cond_broadcast(&rts->changed);
  pthread_mutex_unlock(&rts->mu);
  ux_rt_unref(rt);
}

static int call(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms, size_t events_max,
                int (*on_event)(void *ctx, const json_t *event), void *ctx,
                json_t **result, char *err, size_t errlen);

int ux_rt_call(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms,
               int (*on_event)(void *ctx, const json_t *event), void *ctx,
               json_t **result, char *err, size_t errlen) {
  return call(rt, req, data_fd, timeout_ms, 0, on_event, ctx, result, err, errlen);
}

int ux_rt_call_follow(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms,
                      int (*on_event)(void *ctx, const json_t *event), void *ctx,
                      json_t **result, char *err, size_t errlen) {
  return call(rt, req, data_fd, timeout_ms, (size_t)-1, on_event, ctx, result, err, errlen);
}

static int call(ux_rt *rt, const json_t *req, int data_fd, int timeout_ms, size_t events_max,
                int (*on_event)(void *ctx, const json_t *event), void *ctx,
                json_t **result, char *err, size_t errlen) {
  ux_runtimes *rts = rt->rts;
  *result = NULL;
  pthread_mutex_lock(&rts->mu);
  /* a copy of the control channel, so the runtime's end may close the
  ** original at any time without this call ever touching a reused fd */
  int control = rt->status == UX_RT_RUNNING && ux_rt_live(rt) && rt->control >= 0
                ? fcntl(rt->control, F_DUPFD_CLOEXEC, 3) : -1;
  if (control >= 0) rt->calls++;
  pthread_mutex_unlock(&rts->mu);
  if (control < 0) {
    snprintf(err, errlen, "runtime %s is not running", rt->sb_id);
    return UX_RTC_GONE;
  }
  int broken = 0;
  int rc = ux_agent_call(control, req, data_fd, timeout_ms > 0 ? timeout_ms : 45000, events_max, on_event,
                         ctx, result, &broken, err, errlen);
  close(control);
  pthread_mutex_lock(&rts->mu);
  rt->calls--;
  if (broken) {
    char why[300];
    snprintf(why, sizeof why, "its agent broke the protocol: %s", err);
    ux_rt_kill_locked(rt, UX_RT_FAILED, why, 0);
  } else if (rc == UX_RTC_GONE && rt->kill) {
    snprintf(err, errlen, "runtime %s was stopped: %s", rt->sb_id, rt->kill_why);
  } else if (rc == UX_RTC_GONE) {
    rt->ping_next = 0;          /* a health check at once: did it die? */
  }
  pthread_mutex_unlock(&rts->mu);
  ux_rt_wake(rts);
  return rc;
}
