/*
** Sandboxes prepared ahead (see runner.h, ux_runner_pool_start): per
** shape (a language and a network mode), up to `size` sandboxes that
** setup.c has brought to the point where bwrap waits on its block fd,
** every namespace and mount done (and slirp4netns attached for a
** semitrusted shape). A run of that shape takes one, arms it (source,
** input files, CPU limit, release: runner.c) and the filler thread
** prepares the next. Runs stay one-shot: a sandbox serves exactly one
** run and is freed with it, so its run directory, cgroup, slot, scratch
** volume and namespaces are new to every run.
**
** One filler thread does all the preparing, at most PIPELINE sandboxes
** at a time, and is the parent of every pooled sandbox: it must outlive
** them (PR_SET_PDEATHSIG kills a child with its parent thread, which is
** also why a killed server leaves none behind), so ux_runner_pool_stop
** waits for the last pooled run to be freed before it lets the thread
** end. A sandbox enters the pool only once ux_sb_ready says bwrap's set-up
** is complete; one that fails to get there is counted, discarded, and the
** filler backs off (BACKOFF_MS, doubling) so a host where sandboxes cannot
** start is not hammered. A take checks that the sandbox still lives and
** hands dead ones back to the filler to discard; with none ready, the run
** starts cold (setup.c), exactly as without a pool.
*/
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run_object.h"
#include "server/sandbox/slots.h"

#define PIPELINE     2        /* sandboxes being prepared at once */
#define READY_MS     UX_SB_NET_MS   /* set-up must be done within */
#define BACKOFF_MS   100      /* after a failed start; doubles up to 2 s */
#define STOP_WAIT_MS 10000    /* pool stop waits this long for pooled runs */
#define FILLER_NICE  10       /* see filler() */
#define QUIET_MS     20       /* refills wait this long after a take ... */
#define LOW_READY    PIPELINE /* ... while a shape has at least this many */

typedef struct shape {
  char language[32];
  int network;
  const ux_lang *lang;
  char *script;
  ux_run **ready;             /* oldest first */
  int n_ready, starting;
} shape;

typedef struct starting {
  ux_run *r;
  int shape;
  long long deadline;
} starting;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;        /* the filler: a take, a trash, a stop */
  pthread_cond_t gone;        /* ux_pool_done: a pooled sandbox freed */
  int running, stop, size, n_shapes;
  shape shapes[UX_POOL_SHAPES];
  ux_run **trash; int n_trash, cap_trash;   /* dead at a take */
  int live;                   /* pooled sandboxes not yet freed */
  int break_next;             /* tests: sandboxes to prepare broken */
  long long backoff_until;
  int backoff_ms;
  long long last_take;        /* when a run last looked for a sandbox */
  pthread_t filler;
  ux_pool_stats st;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
           .gone = PTHREAD_COND_INITIALIZER };

/* ---------------------------------------------------------------------
** Shapes
** ------------------------------------------------------------------- */

static int poolable(const ux_run_spec *s) {
  return !s->argv && s->language && s->n_env == 0 && !s->workdir && s->workdir_fd <= 0 &&
         s->in_fd <= 0 && s->out_fd <= 0 && s->pass_fd <= 0 && s->n_ro_binds == 0 &&
         !s->work_mount && s->vcpu <= 1 &&
         !(s->want_artifacts && ux_sb_lang_builds(ux_sb_lang(s->language)));   /* its script differs */
}

/* The spec a shape's sandboxes are prepared from: what a run of that
** language and network mode gets when it brings nothing else. */
static ux_run_spec shape_spec(const shape *sh) {
  ux_run_spec s;
  memset(&s, 0, sizeof s);
  s.language = sh->language;
  s.network = sh->network;
  s.vcpu = 1;
  return s;
}

/* One "LANG" or "LANG/semitrusted" (or "/zerotrust") of the list. */
static int parse_shape(const char *item, size_t len, shape *sh, char *err, size_t errlen) {
  const char *slash = memchr(item, '/', len);
  size_t ll = slash ? (size_t)(slash - item) : len;
  memset(sh, 0, sizeof *sh);
  if (ll == 0 || ll >= sizeof sh->language) {
    snprintf(err, errlen, "bad pool shape '%.*s'", (int)len, item);
    return -1;
  }
  memcpy(sh->language, item, ll);
  if (slash) {
    size_t ml = len - ll - 1;
    if (ml == 11 && !strncmp(slash + 1, "semitrusted", 11)) sh->network = 1;
    else if (!(ml == 9 && !strncmp(slash + 1, "zerotrust", 9))) {
      snprintf(err, errlen, "bad network mode in pool shape '%.*s' (zerotrust or semitrusted)",
               (int)len, item);
      return -1;
    }
  }
  if (!(sh->lang = ux_sb_lang(sh->language))) {
    snprintf(err, errlen, "pool shape '%s': language not installed here", sh->language);
    return -1;
  }
  ux_run_spec s = shape_spec(sh);
  if (!(sh->script = ux_sb_script(sh->lang, &s))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

static void free_shapes(void) {
  for (int i = 0; i < pool.n_shapes; i++) {
    free(pool.shapes[i].script);
    free(pool.shapes[i].ready);
  }
  pool.n_shapes = 0;
}

static int parse_shapes(const char *list, int size, char *err, size_t errlen) {
  for (const char *p = list; *p; ) {
    size_t len = strcspn(p, ",");
    if (pool.n_shapes == UX_POOL_SHAPES) {
      snprintf(err, errlen, "at most %d pool shapes", UX_POOL_SHAPES);
      return -1;
    }
    shape *sh = &pool.shapes[pool.n_shapes];
    if (parse_shape(p, len, sh, err, errlen) != 0) return -1;
    pool.n_shapes++;
    for (int i = 0; i + 1 < pool.n_shapes; i++)
      if (!strcmp(pool.shapes[i].language, sh->language) && pool.shapes[i].network == sh->network) {
        snprintf(err, errlen, "pool shape '%.*s' given twice", (int)len, p);
        return -1;
      }
    if (!(sh->ready = calloc((size_t)size, sizeof *sh->ready))) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    p += len;
    if (*p == ',' && !*++p) {
      snprintf(err, errlen, "bad pool shape '' (a comma ends the list)");
      return -1;
    }
  }
  if (pool.n_shapes == 0) { snprintf(err, errlen, "no pool shape given"); return -1; }
  return 0;
}

/* ---------------------------------------------------------------------
** Take (any thread)
** ------------------------------------------------------------------- */

static int trash_locked(ux_run *r) {
  if (pool.n_trash == pool.cap_trash) {
    int cap = pool.cap_trash ? pool.cap_trash * 2 : 8;
    ux_run **v = realloc(pool.trash, (size_t)cap * sizeof *v);
    if (!v) return -1;
    pool.trash = v;
    pool.cap_trash = cap;
  }
  pool.trash[pool.n_trash++] = r;
  return 0;
}

ux_run *ux_pool_take(const ux_run_spec *spec) {
  if (!poolable(spec)) return NULL;
  pthread_mutex_lock(&pool.lock);
  shape *sh = NULL;
  for (int i = 0; pool.running && !pool.stop && i < pool.n_shapes && !sh; i++)
    if (!strcmp(pool.shapes[i].language, spec->language) &&
        pool.shapes[i].network == (spec->network != 0)) sh = &pool.shapes[i];
  ux_run *r = NULL;
  while (sh && sh->n_ready > 0 && !r) {
    r = sh->ready[0];
    memmove(sh->ready, sh->ready + 1, (size_t)(--sh->n_ready) * sizeof *sh->ready);
    if (ux_sb_alive(r)) break;
    pool.st.discarded++;
    /* no room to queue it: the taker frees it (rare; it is dead anyway) */
    if (trash_locked(r) != 0) { pthread_mutex_unlock(&pool.lock); ux_sb_abandon(r);
                                pthread_mutex_lock(&pool.lock); }
    r = NULL;
  }
  if (sh) {
    pool.last_take = ux_now_ms();
    if (r) pool.st.hits++; else pool.st.misses++;
    pthread_cond_signal(&pool.wake);
  }
  pthread_mutex_unlock(&pool.lock);
  return r;
}

void ux_pool_break_next(int n) {
  pthread_mutex_lock(&pool.lock);
  pool.break_next = n;
  pthread_mutex_unlock(&pool.lock);
}

void ux_pool_done(void) {
  pthread_mutex_lock(&pool.lock);
  pool.live--;
  pthread_cond_broadcast(&pool.gone);
  pthread_mutex_unlock(&pool.lock);
}

/* ---------------------------------------------------------------------
** The filler
** ------------------------------------------------------------------- */

/* Preparing a sandbox competes with the runs in progress, and not only
** for the CPU: its mounts and namespaces take the kernel's global mount
** lock and expedited RCU grace periods, which the teardown at the end of
** every run waits for too (a pooled run took a millisecond longer while
** the pool refilled). So while runs keep coming (a take in the last
** QUIET_MS), a shape is refilled only below LOW_READY, so that the next
** run still finds one; the rest waits for a pause. */
int ux_pool_may_refill(int have, int size, long long since_take_ms) {
  return have < size && (have < LOW_READY || since_take_ms >= QUIET_MS);
}

/* The shape most in need of a sandbox (fewest ready and starting) that
** may get one now, or -1. Locked. */
static int neediest(long long now) {
  int best = -1, have = 0;
  for (int i = 0; i < pool.n_shapes; i++) {
    int n = pool.shapes[i].n_ready + pool.shapes[i].starting;
    if (!ux_pool_may_refill(n, pool.size, now - pool.last_take)) continue;
    if (best < 0 || n < have) { best = i; have = n; }
  }
  return best;
}

/* 1 when a shape is not full: with none starting, it waits for a pause
** in the runs. Locked. */
static int deferred(void) {
  for (int i = 0; i < pool.n_shapes; i++)
    if (pool.shapes[i].n_ready + pool.shapes[i].starting < pool.size) return 1;
  return 0;
}

static void failed(const char *why) {
  pthread_mutex_lock(&pool.lock);
  pool.st.failed++;
  int report = strcmp(pool.st.last_error, why) != 0;
  snprintf(pool.st.last_error, sizeof pool.st.last_error, "%s", why);
  pool.backoff_ms = pool.backoff_ms ? pool.backoff_ms * 2 : BACKOFF_MS;
  if (pool.backoff_ms > 2000) pool.backoff_ms = 2000;
  pool.backoff_until = ux_now_ms() + pool.backoff_ms;
  pthread_mutex_unlock(&pool.lock);
  if (report) fprintf(stderr, "unsandboxd: a pool sandbox did not start: %s\n", why);
}

/* Starts one sandbox of shape k into s; 0, or -1 (counted as failed). */
static int begin(int k, starting *s) {
  shape *sh = &pool.shapes[k];
  ux_run_spec spec = shape_spec(sh);
  char err[256] = "";
  pthread_mutex_lock(&pool.lock);
  int flags = UX_SB_POOLED | (pool.break_next > 0 ? UX_SB_BROKEN : 0);
  if (pool.break_next > 0) pool.break_next--;
  pthread_mutex_unlock(&pool.lock);
  ux_run *r = ux_sb_prepare(&spec, sh->lang, sh->script, flags, err, sizeof err);
  if (!r) { failed(err[0] ? err : "cannot prepare a sandbox"); return -1; }
  pthread_mutex_lock(&pool.lock);
  pool.live++;
  pool.st.started++;
  pthread_mutex_unlock(&pool.lock);
  *s = (starting){ r, k, ux_now_ms() + READY_MS };
  return 0;
}

/* Checks a starting sandbox: 1 when it moved on (ready or failed). */
static int advance(starting *s) {
  int rdy = ux_sb_ready(s->r);
  if (rdy == 0 && ux_now_ms() < s->deadline) return 0;
  if (rdy <= 0) {
    char why[300] = "bwrap's set-up did not finish in time";
    if (rdy < 0) ux_sb_start_error(s->r, why, sizeof why);
    failed(why);
    ux_sb_abandon(s->r);
    pthread_mutex_lock(&pool.lock);
  } else {
    pthread_mutex_lock(&pool.lock);
    shape *sh = &pool.shapes[s->shape];
    if (!pool.stop && sh->n_ready < pool.size) {
      sh->ready[sh->n_ready++] = s->r;
      s->r = NULL;
    }
    pool.backoff_ms = 0;
  }
  pool.shapes[s->shape].starting--;
  pthread_mutex_unlock(&pool.lock);
  if (s->r && rdy > 0) ux_sb_abandon(s->r);         /* stopping meanwhile */
  s->r = NULL;
  return 1;
}

/* One round: discards, new starts, readiness checks. Locked on entry
** and exit; returns 1 when something is in progress (poll again soon). */
static int round_locked(starting *st, int *n_st) {
  while (pool.n_trash > 0) {
    ux_run *r = pool.trash[--pool.n_trash];
    pthread_mutex_unlock(&pool.lock);
    ux_sb_abandon(r);
    pthread_mutex_lock(&pool.lock);
  }
  int k;
  while (!pool.stop && *n_st < PIPELINE && ux_now_ms() >= pool.backoff_until &&
         (k = neediest(ux_now_ms())) >= 0) {
    pool.shapes[k].starting++;
    pthread_mutex_unlock(&pool.lock);
    int rc = begin(k, &st[*n_st]);
    pthread_mutex_lock(&pool.lock);
    if (rc != 0) { pool.shapes[k].starting--; break; }
    (*n_st)++;
  }
  pthread_mutex_unlock(&pool.lock);
  for (int i = 0; i < *n_st; )
    if (advance(&st[i])) st[i] = st[--*n_st]; else i++;
  pthread_mutex_lock(&pool.lock);
  return *n_st > 0;
}

static void wait_locked(long long ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  pthread_cond_timedwait(&pool.wake, &pool.lock, &ts);
}

/* Frees every ready sandbox, then waits (bounded) until no pooled
** sandbox is left: the end of this thread would kill them. Locked. */
static void drain_locked(void) {
  for (int i = 0; i < pool.n_shapes; i++)
    while (pool.shapes[i].n_ready > 0) {
      ux_run *r = pool.shapes[i].ready[--pool.shapes[i].n_ready];
      pthread_mutex_unlock(&pool.lock);
      ux_sb_abandon(r);
      pthread_mutex_lock(&pool.lock);
    }
  long long end = ux_now_ms() + STOP_WAIT_MS;
  while (pool.live > 0 && ux_now_ms() < end) {
    while (pool.n_trash > 0) {
      ux_run *r = pool.trash[--pool.n_trash];
      pthread_mutex_unlock(&pool.lock);
      ux_sb_abandon(r);
      pthread_mutex_lock(&pool.lock);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&pool.gone, &pool.lock, &ts);
  }
  if (pool.live > 0)
    fprintf(stderr, "unsandboxd: %d pooled run(s) still running at the pool's stop\n", pool.live);
}

static void *filler(void *arg) {
  (void)arg;
  starting st[PIPELINE];
  int n_st = 0;
  /* Preparing sandboxes is background work: this thread and the
  ** processes it starts (they inherit both) yield the cores to runs.
  ** Nice alone was not enough: a refill woken by a take preempted the
  ** sandbox just released on the same core (half a millisecond seen in
  ** a trace). SCHED_BATCH never preempts on wake-up, yet keeps nice's
  ** share of the CPU, so the filler is never starved while it holds the
  ** pool's lock or bwrap a kernel lock (SCHED_IDLE could be). A pooled
  ** sandbox gets the run's scheduling back when it is armed (runner.c,
  ** unnice). Linux's policy and nice are per thread. */
  struct sched_param sp = { 0 };
  if (pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp) != 0 ||
      setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FILLER_NICE) != 0)
    fprintf(stderr, "unsandboxd: the pool's filler keeps its priority: %s\n", strerror(errno));
  pthread_mutex_lock(&pool.lock);
  while (!pool.stop || n_st > 0) {
    if (round_locked(st, &n_st)) {
      pthread_mutex_unlock(&pool.lock);
      struct timespec ts = { 0, 1000 * 1000L };     /* bwrap's set-up: ms */
      nanosleep(&ts, NULL);
      pthread_mutex_lock(&pool.lock);
    } else if (!pool.stop && pool.n_trash == 0) {
      long long now = ux_now_ms(), wait = pool.backoff_until - now;
      if (wait <= 0) wait = deferred() ? pool.last_take + QUIET_MS - now : 1000;
      wait_locked(wait > 0 ? wait : 1);
    }
  }
  drain_locked();
  pthread_mutex_unlock(&pool.lock);
  return NULL;
}

/* ---------------------------------------------------------------------
** Start, stop, stats
** ------------------------------------------------------------------- */

int ux_runner_pool_start(int size, const char *shapes, char *err, size_t errlen) {
  if (size < 1 || size > UX_POOL_MAX) {
    snprintf(err, errlen, "the pool size must be between 1 and %d", UX_POOL_MAX);
    return -1;
  }
  pthread_mutex_lock(&pool.lock);
  int rc = -1;
  if (pool.running) { snprintf(err, errlen, "the pool is already running"); goto out; }
  pool.size = size;
  pool.stop = 0;
  pool.backoff_ms = 0;
  pool.backoff_until = 0;
  memset(&pool.st, 0, sizeof pool.st);
  if (parse_shapes(shapes && *shapes ? shapes : UX_POOL_DEFAULT_SHAPES, size, err, errlen) != 0) {
    free_shapes();
    goto out;
  }
  /* the slots of finished pooled runs stay ours for the next ones */
  ux_slots_keep(UX_KEEP_POOL, size * pool.n_shapes + PIPELINE);
  if ((errno = pthread_create(&pool.filler, NULL, filler, NULL)) != 0) {
    snprintf(err, errlen, "cannot start the pool's thread: %s", strerror(errno));
    ux_slots_keep(UX_KEEP_POOL, 0);
    free_shapes();
    goto out;
  }
  pool.running = 1;
  rc = 0;
out:
  pthread_mutex_unlock(&pool.lock);
  return rc;
}

int ux_runner_pool_start_default(const char *shapes, char *used, size_t usedlen,
                                 char *err, size_t errlen) {
  size_t n = 0;
  used[0] = '\0';
  if (shapes && *shapes) {
    snprintf(used, usedlen, "%s", shapes);
  } else {
    /* a host without python still gets its bash pool */
    const char *p = UX_POOL_DEFAULT_SHAPES;
    while (*p) {
      char lang[32];
      size_t len = strcspn(p, ",");
      snprintf(lang, sizeof lang, "%.*s", (int)len, p);
      if (ux_sb_lang(lang) && n + len + 2 <= usedlen)
        n += (size_t)snprintf(used + n, usedlen - n, "%s%s", n ? "," : "", lang);
      p += len + (p[len] == ',');
    }
    if (!used[0]) return 0;
  }
  return ux_runner_pool_start(UX_POOL_DEFAULT_SIZE, used, err, errlen);
}

void ux_runner_pool_stop(void) {
  pthread_mutex_lock(&pool.lock);
  if (!pool.running) { pthread_mutex_unlock(&pool.lock); return; }
  pool.stop = 1;
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
  pthread_join(pool.filler, NULL);
  pthread_mutex_lock(&pool.lock);
  pool.running = 0;
  free_shapes();
  free(pool.trash);
  pool.trash = NULL;
  pool.n_trash = pool.cap_trash = 0;
  pthread_mutex_unlock(&pool.lock);
  ux_slots_keep(UX_KEEP_POOL, 0);
}

void ux_runner_pool_stats(ux_pool_stats *st) {
  pthread_mutex_lock(&pool.lock);
  *st = pool.st;
  st->running = pool.running;
  st->size = pool.running ? pool.size : 0;
  st->n_shapes = pool.running ? pool.n_shapes : 0;
  for (int i = 0; i < st->n_shapes; i++) {
    snprintf(st->shape[i].language, sizeof st->shape[i].language, "%s", pool.shapes[i].language);
    st->shape[i].network = pool.shapes[i].network;
    st->shape[i].ready = pool.shapes[i].n_ready;
  }
  pthread_mutex_unlock(&pool.lock);
}
