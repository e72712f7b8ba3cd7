/*
** Freezing and killing every run of one persistent work directory (the
** lead's quiescing before a snapshot, restore or delete of a session or
** service). Runs are matched by the device and inode of their work
** directory, read when they started.
**
** The matching runs are marked busy under the registry lock, then worked
** on without it (a freeze waits for the kernel): ux_run_unregister waits
** for busy to drop, so a run's cgroup is never removed under an operation
** here. Each operation is bounded in time.
**
** With cgroups, each run is frozen or killed through its own cgroup, so
** a run started later (the archiver) is never caught. Without them
** (rlimits mode) the runs of one work directory share a slot uid, and
** the fallback works on that uid: SIGSTOP/SIGCONT, or SIGKILL, to each of
** its processes.
*/
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run_object.h"
#include "server/sandbox/slots.h"
#include "server/mem.h"

#define FREEZE_MS 2000        /* the kernel reports a freeze done within */

typedef struct group {
  ux_run **v;
  size_t n;
} group;

/* The registered runs of the directory dir_fd, each marked busy. */
static int collect(int dir_fd, group *g) {
  struct stat st;
  g->v = NULL;
  g->n = 0;
  if (fstat(dir_fd, &st) != 0) return -1;
  pthread_mutex_lock(&ux_reg_lock);
  size_t cap = 0;
  for (ux_run *r = ux_reg_first(); r; r = r->next) if (r->wd_dev == st.st_dev && r->wd_ino == st.st_ino) cap++;
  if (cap && !(g->v = ux_xcalloc(cap, sizeof *g->v))) {
    pthread_mutex_unlock(&ux_reg_lock);
    errno = ENOMEM;
    return -1;
  }
  for (ux_run *r = ux_reg_first(); r && g->n < cap; r = r->next)
    if (r->wd_dev == st.st_dev && r->wd_ino == st.st_ino) { r->busy++; g->v[g->n++] = r; }
  pthread_mutex_unlock(&ux_reg_lock);
  return 0;
}

static void release(group *g) {
  pthread_mutex_lock(&ux_reg_lock);
  for (size_t i = 0; i < g->n; i++) g->v[i]->busy--;
  pthread_cond_broadcast(&ux_reg_idle);
  pthread_mutex_unlock(&ux_reg_lock);
  free(g->v);
}

/* The slot uids of a group without cgroups (one, in practice). */
static void signal_uids(const group *g, int sig) {
  for (size_t i = 0; i < g->n; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++) seen |= g->v[j]->uid == g->v[i]->uid;
    if (!seen && g->v[i]->slot >= 0) ux_signal_uid(g->v[i]->uid, sig);
  }
}

int ux_runner_freeze_workdir(int dir_fd, int frozen) {
  group g;
  if (collect(dir_fd, &g) != 0) return -1;
  int rc = 0, e = 0;
  for (size_t i = 0; i < g.n; i++) {
    ux_run *r = g.v[i];
    if (r->has_cg && r->cg.freezer) {
      if (ux_cg_run_freeze(&r->cg, frozen, FREEZE_MS) != 0) { rc = -1; e = errno; }
    } else if (r->slot < 0) {
      rc = -1; e = ENOTSUP;           /* not root: no slot uid to stop */
    }
  }
  /* the fallback: every process of the slot uid */
  int fallback = 0;
  for (size_t i = 0; i < g.n; i++) fallback |= !(g.v[i]->has_cg && g.v[i]->cg.freezer);
  if (fallback) signal_uids(&g, frozen ? SIGSTOP : SIGCONT);
  size_t n = g.n;
  release(&g);
  if (rc != 0) { errno = e; return -1; }
  return (int)n;
}

/* 1 when no process of the group is left. */
static int group_gone(const group *g) {
  for (size_t i = 0; i < g->n; i++) {
    ux_run *r = g->v[i];
    if (r->has_cg) { if (ux_cg_run_populated(&r->cg) != 0) return 0; }
    else if (r->slot >= 0) { if (ux_kill_uid(r->uid, 0) > 0) return 0; }
    else if (!atomic_load(&r->reaped)) return 0;   /* not root: the waiter kills */
  }
  return 1;
}

int ux_runner_kill_workdir(int dir_fd, int timeout_ms) {
  group g;
  if (collect(dir_fd, &g) != 0) return -1;
  long long end = ux_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int gone = 0;
  for (;;) {
    for (size_t i = 0; i < g.n; i++) {
      ux_run *r = g.v[i];
      /* the waiter reports it cancelled (and kills too) */
      ux_run_cancel_id(r->id);
      if (r->has_cg) ux_cg_run_kill(&r->cg);
      else if (r->slot >= 0) ux_kill_uid(r->uid, 0);
    }
    if ((gone = group_gone(&g)) || ux_now_ms() >= end) break;
    struct timespec ts = { 0, 10 * 1000000L };
    nanosleep(&ts, NULL);
  }
  release(&g);
  if (!gone) { errno = ETIMEDOUT; return -1; }
  return 0;
}
