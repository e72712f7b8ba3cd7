/*
** How runs are limited on this host, decided once per process: cgroup v2,
** else the v1 memory and pids controllers (and freezer), else rlimits as
** the documented fallback (not root, --cgroups off, nothing usable). The
** decision and the one-line description of the start-up message live
** here; the cgroups themselves are cgroup.c and cgroup_run.c. The runs'
** parent cgroup is limited to the memory budget (membudget.h), which is
** known before the parent is made.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/sandbox/membudget.h"
#include "server/sandbox/run_object.h"

static struct {
  pthread_mutex_t lock;
  int decided;
  ux_cg_layout cg;
  ux_isolation iso;
} lim = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void describe(const char *why) {
  ux_isolation *i = &lim.iso;
  const ux_cg_layout *c = &lim.cg;
  char net[200];
  unsigned long long claimed, budget;
  ux_membudget_usage(&claimed, &budget);
  snprintf(net, sizeof net, "; memory budget of all runs %llu MiB%s; own network namespace per "
           "run, semitrusted via %s", budget >> 20, c->version ? " (the parent's limit)" : "",
           ux_net_available() ? "slirp4netns" : "nothing (slirp4netns missing: semitrusted runs fail)");
  if (c->version == UX_CG_V2)
    snprintf(i->detail, sizeof i->detail, "cgroup v2 (%.200s/%s): memory (no swap), pids, "
             "freezer%s", c->base[UX_CG_MEM], c->name, net);
  else if (c->version == UX_CG_V1)
    snprintf(i->detail, sizeof i->detail, "cgroup v1 (%.150s/%s): memory%s, pids, %s%s; v2 not "
             "used: %.150s", c->base[UX_CG_MEM], c->name, c->memsw ? "+swap" : "",
             c->freezer ? "freezer" : "no freezer", net, c->why);
  else
    snprintf(i->detail, sizeof i->detail, "rlimits only (RLIMIT_DATA, RLIMIT_NPROC; no cgroup: "
             "%.260s)%s", why, net);
}

static void decide(int cgroups) {
  char err[300] = "";
  const char *why = err;
  memset(&lim.cg, 0, sizeof lim.cg);
  for (int i = 0; i < UX_CG_NDIR; i++) lim.cg.parent_fd[i] = -1;
  if (!cgroups) why = "turned off";
  else if (!ux_privileged()) why = "not running as root";
  else if (ux_cg_detect("/proc/self/cgroup", "/proc/self/mountinfo", &lim.cg) == UX_CG_NONE)
    why = lim.cg.why;
  else {
    unsigned long long claimed;
    ux_membudget_usage(&claimed, &lim.cg.budget);
    if (ux_cg_setup(&lim.cg, NULL, err, sizeof err) != 0) lim.cg.version = UX_CG_NONE;
  }
  ux_isolation *i = &lim.iso;
  i->cgroup = lim.cg.version == UX_CG_V2 ? "v2" : lim.cg.version == UX_CG_V1 ? "v1" : "none";
  i->memory = i->pids = lim.cg.version != UX_CG_NONE;
  i->memsw = lim.cg.version == UX_CG_V2 || (lim.cg.version == UX_CG_V1 && lim.cg.memsw);
  i->freezer = lim.cg.version != UX_CG_NONE && lim.cg.freezer;
  i->network = ux_net_available() ? "slirp4netns" : "unavailable";
  describe(why);
  lim.decided = 1;
}

void ux_runner_set_memory_budget(unsigned long long bytes) { ux_membudget_set(bytes); }

int ux_runner_init(int cgroups, ux_isolation *iso) {
  pthread_mutex_lock(&lim.lock);
  if (!lim.decided) decide(cgroups);
  if (iso) *iso = lim.iso;
  pthread_mutex_unlock(&lim.lock);
  return 0;
}

const ux_isolation *ux_runner_isolation(void) {
  ux_runner_init(1, NULL);
  return &lim.iso;
}

const ux_cg_layout *ux_runner_cg(void) {
  ux_runner_init(1, NULL);
  return &lim.cg;
}

void ux_runner_shutdown(void) {
  ux_runner_pool_stop();          /* its sandboxes are runs' cgroups too */
  ux_runner_reaper_flush();
  pthread_mutex_lock(&lim.lock);
  if (lim.decided && lim.cg.version != UX_CG_NONE) ux_cg_teardown(&lim.cg);
  lim.cg.version = UX_CG_NONE;    /* a run after this fails its cgroup */
  pthread_mutex_unlock(&lim.lock);
}

