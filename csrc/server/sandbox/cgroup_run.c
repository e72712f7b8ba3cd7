/*
** One run's cgroup (see cgroup.h): "run-ID" below the server's parent in
** each hierarchy in use, made with its limits before the fork and joined
** by the child through cgroup.procs fds opened here, so the child's part
** is a single write(2) per hierarchy.
**
** Out-of-memory kills are watched rather than polled: v2 signals a change
** of memory.events with POLLPRI on an open fd of it; v1 signals an
** eventfd registered through cgroup.event_control for memory.oom_control.
** The waiter reads the oom_kill counter when woken (and once at the end).
**
** Freezing: v2 cgroup.freeze, done when cgroup.events says "frozen 1";
** v1 freezer.state, done when it reads FROZEN. A v1 frozen task does not
** die of SIGKILL until thawed, so a kill thaws after signalling.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/cgroup.h"

void ux_cg_run_init(ux_cg_run *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < UX_CG_NDIR; i++) c->parent_fd[i] = c->dir_fd[i] = c->procs_fd[i] = -1;
  c->oom_fd = -1;
}

static int write_num(int dirfd, const char *file, unsigned long long v) {
  char num[32];
  snprintf(num, sizeof num, "%llu", v);
  return ux_cg_write(dirfd, file, num);
}

/* The limits of a new run cgroup; 0 or -1 with err. */
static int set_limits(const ux_cg_run *c, int memsw, const ux_cg_limits *lim,
                      char *err, size_t errlen) {
  int mem = c->dir_fd[UX_CG_MEM];
  int pids = c->version == UX_CG_V2 ? mem : c->dir_fd[UX_CG_PIDS];
  const char *bad = NULL;
  if (lim->memory && c->version == UX_CG_V2) {
    if (write_num(mem, "memory.max", lim->memory) != 0) bad = "memory.max";
    /* no swap for a run; absent when the kernel has no swap accounting */
    else if (ux_cg_write(mem, "memory.swap.max", "0") != 0 && errno != ENOENT) bad = "memory.swap.max";
    /* an OOM kill takes the whole run, not one process of it */
    else if (ux_cg_write(mem, "memory.oom.group", "1") != 0 && errno != ENOENT) bad = "memory.oom.group";
  } else if (lim->memory) {
    if (write_num(mem, "memory.limit_in_bytes", lim->memory) != 0) bad = "memory.limit_in_bytes";
    else if (memsw && write_num(mem, "memory.memsw.limit_in_bytes", lim->memory) != 0)
      bad = "memory.memsw.limit_in_bytes";
  }
  if (!bad && lim->pids && write_num(pids, "pids.max", (unsigned long long)lim->pids) != 0)
    bad = "pids.max";
  if (!bad) return 0;
  snprintf(err, errlen, "cannot set %s of the run's cgroup: %s", bad, strerror(errno));
  return -1;
}

/* The out-of-memory watch: v2 memory.events (POLLPRI), v1 an eventfd
** registered for memory.oom_control. Missing files leave it off. */
static void watch_oom(ux_cg_run *c) {
  int mem = c->dir_fd[UX_CG_MEM];
  if (c->version == UX_CG_V2) {
    c->oom_fd = openat(mem, "memory.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    c->oom_events = POLLPRI;
    return;
  }
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int ofd = openat(mem, "memory.oom_control", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  char line[64];
  snprintf(line, sizeof line, "%d %d", efd, ofd);
  if (efd >= 0 && ofd >= 0 && ux_cg_write(mem, "cgroup.event_control", line) == 0) {
    c->oom_fd = efd;
    c->oom_events = POLLIN;
    efd = -1;
  }
  if (efd >= 0) close(efd);
  if (ofd >= 0) close(ofd);     /* the kernel holds its own reference */
}

int ux_cg_run_create(const ux_cg_layout *l, unsigned long long id,
                     const ux_cg_limits *lim, ux_cg_run *c, char *err, size_t errlen) {
  ux_cg_run_init(c);
  c->version = l->version;
  c->freezer = l->freezer;
  c->kill = l->kill;
  snprintf(c->name, sizeof c->name, "run-%llu", id);
  snprintf(c->tail, sizeof c->tail, "/%s/%s", l->name, c->name);
  for (int i = 0; i < UX_CG_NDIR; i++) {
    if (l->parent_fd[i] < 0) continue;
    c->parent_fd[i] = l->parent_fd[i];
    /* an existing one can only be a leftover of this very run id */
    if ((mkdirat(l->parent_fd[i], c->name, 0755) != 0 && errno != EEXIST) ||
        (c->dir_fd[i] = openat(l->parent_fd[i], c->name,
                               O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
        (c->procs_fd[i] = openat(c->dir_fd[i], "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0) {
      snprintf(err, errlen, "cannot create the run's cgroup %s: %s", c->name, strerror(errno));
      ux_cg_run_destroy(c, 0);
      return -1;
    }
  }
  if (c->dir_fd[UX_CG_MEM] < 0) {
    snprintf(err, errlen, "no memory cgroup parent");
    ux_cg_run_destroy(c, 0);
    return -1;
  }
  if (set_limits(c, l->memsw, lim, err, errlen) != 0) { ux_cg_run_destroy(c, 0); return -1; }
  if (lim->memory) watch_oom(c);
  return 0;
}

int ux_cg_run_join_fds(const ux_cg_run *c, int fds[UX_CG_NDIR]) {
  int n = 0;
  for (int i = 0; i < UX_CG_NDIR; i++)
    if (c->procs_fd[i] >= 0) fds[n++] = c->procs_fd[i];
  return n;
}

int ux_cg_join(const int *fds, int n) {
  for (int i = 0; i < n; i++) {
    ssize_t w;
    do w = write(fds[i], "0", 1); while (w < 0 && errno == EINTR);
    if (w != 1) return -1;
  }
  return 0;
}

long ux_cg_run_oom_kills(const ux_cg_run *c) {
  int mem = c->dir_fd[UX_CG_MEM];
  if (mem < 0) return 0;
  char buf[1024];
  if (c->version == UX_CG_V1 && c->oom_fd >= 0) {
    unsigned long long ev;
    if (read(c->oom_fd, &ev, sizeof ev) < 0) { /* no event pending: fine */ }
  }
  const char *file = c->version == UX_CG_V2 ? "memory.events" : "memory.oom_control";
  if (ux_cg_read(mem, file, buf, sizeof buf) <= 0) return 0;
  long long n = ux_cg_key(buf, "oom_kill");
  return n > 0 ? (long)n : 0;
}

/* The freezer's directory and file: v2 the run's own, v1 the freezer's. */
static int freezer_dir(const ux_cg_run *c) {
  return c->version == UX_CG_V2 ? c->dir_fd[UX_CG_MEM] : c->dir_fd[UX_CG_FRZ];
}

/* 1 when the kernel reports the state reached, 0 not yet, -1 unreadable. */
static int freeze_done(const ux_cg_run *c, int frozen) {
  char buf[512];
  if (c->version == UX_CG_V2) {
    if (ux_cg_read(c->dir_fd[UX_CG_MEM], "cgroup.events", buf, sizeof buf) <= 0) return -1;
    long long f = ux_cg_key(buf, "frozen");
    return f < 0 ? -1 : (f == frozen);
  }
  if (ux_cg_read(c->dir_fd[UX_CG_FRZ], "freezer.state", buf, sizeof buf) <= 0) return -1;
  return strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
}

int ux_cg_run_freeze(const ux_cg_run *c, int frozen, int timeout_ms) {
  int fd = freezer_dir(c);
  if (!c->freezer || fd < 0) { errno = ENOTSUP; return -1; }
  int rc = c->version == UX_CG_V2
         ? ux_cg_write(fd, "cgroup.freeze", frozen ? "1" : "0")
         : ux_cg_write(fd, "freezer.state", frozen ? "FROZEN" : "THAWED");
  if (rc != 0) return -1;
  long long end = ux_now_ms() + timeout_ms;
  for (;;) {
    int done = freeze_done(c, frozen);
    if (done == 1) return 0;
    if (done < 0) { errno = EIO; return -1; }
    long long left = end - ux_now_ms();
    if (left <= 0) { errno = ETIMEDOUT; return -1; }
    struct timespec ts = { 0, 5 * 1000000L };
    nanosleep(&ts, NULL);
  }
}

int ux_cg_run_kill(const ux_cg_run *c) {
  int mem = c->dir_fd[UX_CG_MEM];
  if (mem < 0) { errno = EINVAL; return -1; }
  if (c->version == UX_CG_V2 && c->kill && ux_cg_write(mem, "cgroup.kill", "1") == 0) return 0;
  /* by pid: freeze first when possible, so nothing forks in between */
  int frz = c->freezer && freezer_dir(c) >= 0 &&
            ux_cg_run_freeze(c, 1, 500) == 0;
  ux_cg_kill_procs(mem, c->tail);
  if (frz || (c->freezer && freezer_dir(c) >= 0)) ux_cg_run_freeze(c, 0, 500);
  return 0;
}

int ux_cg_run_populated(const ux_cg_run *c) {
  int mem = c->dir_fd[UX_CG_MEM];
  if (mem < 0) return -1;
  char buf[512];
  if (c->version == UX_CG_V2) {
    if (ux_cg_read(mem, "cgroup.events", buf, sizeof buf) <= 0) return -1;
    long long p = ux_cg_key(buf, "populated");
    return p < 0 ? -1 : p > 0;
  }
  long n = ux_cg_read(mem, "cgroup.procs", buf, sizeof buf);
  return n < 0 ? -1 : n > 0;
}

void ux_cg_run_destroy(ux_cg_run *c, int timeout_ms) {
  if (c->oom_fd >= 0) { close(c->oom_fd); c->oom_fd = -1; }
  for (int i = 0; i < UX_CG_NDIR; i++) {
    if (c->procs_fd[i] >= 0) { close(c->procs_fd[i]); c->procs_fd[i] = -1; }
    if (c->dir_fd[i] >= 0) { close(c->dir_fd[i]); c->dir_fd[i] = -1; }
    if (c->parent_fd[i] >= 0 && c->name[0])
      ux_cg_remove_tree(c->parent_fd[i], c->name, c->tail, timeout_ms);
    c->parent_fd[i] = -1;
  }
}
