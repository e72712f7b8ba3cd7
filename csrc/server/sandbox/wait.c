/*
** The waiter of a run (ux_run_wait) and the ways a run is killed.
**
** ux_run_wait polls the program's stdout and stderr (each kept up to its
** cap, the rest read and dropped so a chatty program never blocks),
** bwrap's --info-fd, a pidfd of the child, the cgroup's out-of-memory
** signal and the cancel eventfd, until the child is reaped and the pipes
** are drained; every poll has a timeout, so no wait outlives the ttl by
** more than the kill and drain delays. An out-of-memory kill in the run's
** cgroup (the kernel kills one process) makes the waiter kill the rest:
** a run that outgrew its memory ends whole, reported as oom_killed.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run_object.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"
#include "server/sandbox/slots.h"
#include "server/mem.h"

#define DRAIN_MS     1000     /* output still read after the child is reaped */
#define CHUNK        65536

void ux_run_free(ux_run *r) {
  ux_close_fd(&r->out_fd); ux_close_fd(&r->err_fd);
  ux_close_fd(&r->pidfd); ux_close_fd(&r->cancel_fd);
  ux_close_fd(&r->info_fd); ux_close_fd(&r->inner_fd);
  ux_close_fd(&r->block_fd); ux_close_fd(&r->code_fd); ux_close_fd(&r->sys_fd);
  /* the run's processes are proven gone when its pid namespace's init
  ** has exited (end_inner) and its outer bwrap was reaped: the slot then
  ** needs no sweep. slirp4netns, the one other process of the uid, is
  ** stopped and reaped here if the waiter has not done it yet */
  int clean = r->ns_gone && atomic_load(&r->reaped);
  ux_net_stop(&r->net);
  /* kills what is left in the run's cgroup, then removes it */
  if (r->has_cg || r->cg.name[0]) ux_cg_run_destroy(&r->cg, SWEEP_MS);
  if (r->base_fd >= 0) {
    /* a scratch volume goes with one unmount; the walk is only for the
    ** plain-directory fallback, and nothing of the run is left by now */
    if (r->run_path[0]) ux_scratch_unmount(r->run_path);
    if (r->run_name[0]) ux_tree_remove(r->base_fd, r->run_name);
    ux_close_fd(&r->base_fd);
  }
  /* the work directory stays open until the slot is given back: its
  ** inode, the slot's key, cannot be recycled while the slot is joinable */
  ux_slot_give(r->slot, clean);
  ux_close_fd(&r->work_fd);
  ux_tree_list_free(&r->before);
  for (size_t i = 0; i < r->n_inputs; i++) free(r->inputs[i]);
  free(r->inputs);
  ux_mem_release(&r->mem);     /* its processes and cgroup are gone */
  int pooled = r->pooled;
  free(r);
  if (pooled) ux_pool_done();
}

typedef struct outbuf {
  char *p; size_t len, cap, limit;
  int truncated, eof;
} outbuf;

/* Reads what is there; keeps up to `limit` bytes and discards the rest,
** so a chatty program never blocks on a full pipe. */
static void pump(ux_run *r, int channel, int *fd, outbuf *b) {
  char chunk[CHUNK];
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) { b->eof = 1; ux_close_fd(fd); return; }
  if (r->on_output) r->on_output(r->output_ctx, channel, chunk, (size_t)n);
  size_t keep = b->limit - b->len < (size_t)n ? b->limit - b->len : (size_t)n;
  if (keep < (size_t)n) b->truncated = 1;
  if (keep == 0) return;
  if (b->len + keep + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + keep + 1) cap *= 2;
    if (cap > b->limit + 1) cap = b->limit + 1;
    char *p = ux_xrealloc(b->p, cap);
    b->p = p; b->cap = cap;
  }
  memcpy(b->p + b->len, chunk, keep);
  b->len += keep;
}

/* ---------------------------------------------------------------------
** The run's pid namespace. bwrap's outer process (our child) clones the
** inner one into new user and pid namespaces, writes {"child-pid": N} to
** --info-fd and only then lets it go on: by the time the program runs,
** the waiter can know N. The inner process is the namespace's init;
** SIGKILL from an ancestor namespace always reaches it, and its death
** makes the kernel kill every other process of the namespace. A pidfd
** keeps the kill and the reap from ever hitting a reused pid.
** ------------------------------------------------------------------- */

/* 1 when /proc says `pid` is bwrap's inner process of run r: a child of
** its outer bwrap (or of this process, which inherits it as subreaper
** once the outer one exited) and pid 1 of a namespace of its own. */
static int is_inner(const ux_run *r, pid_t pid) {
  char buf[2048];
  if (ux_proc_status((long)pid, buf, sizeof buf) != 0) return 0;
  char *pp = strstr(buf, "\nPPid:"), *ns = strstr(buf, "\nNSpid:");
  long ppid;
  if (!pp || !ns || sscanf(pp + 6, "%ld", &ppid) != 1) return 0;
  if (ppid != (long)r->pid && ppid != (long)getpid()) return 0;
  char *eol = strchr(ns + 1, '\n');
  if (eol) *eol = '\0';
  char *last = strrchr(ns, '\t'), *first = strchr(ns, '\t');
  return last && first && last != first && strtol(last + 1, NULL, 10) == 1;
}

/* Pins the inner process named by the info: open a pidfd, check that it
** is the right process, then that it still is (not reaped since), so the
** check applied to the pidfd's process rather than to a successor. */
static void pin_inner(ux_run *r) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  int fd = (int)syscall(SYS_pidfd_open, r->inner, 0);
  if (fd < 0) return;
  if (is_inner(r, r->inner) && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0) {
    r->inner_fd = fd;
    return;
  }
  close(fd);
#endif
}

/* Reads what bwrap wrote to the info fd so far; pins the inner process
** once its pid is complete. */
void ux_read_info(ux_run *r) {
  while (r->info_fd >= 0) {
    size_t room = sizeof r->info - 1 - r->info_len;
    ssize_t n = room ? read(r->info_fd, r->info + r->info_len, room) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { ux_close_fd(&r->info_fd); break; }
    r->info_len += (size_t)n;
  }
  r->info[r->info_len] = '\0';
  if (r->inner) return;
  const char *k = strstr(r->info, "\"child-pid\"");
  if (!k || !(k = strchr(k, ':'))) return;
  char *end;
  long pid = strtol(k + 1, &end, 10);
  if (end == k + 1 || pid <= 0 || pid > INT_MAX) return;
  if (*end == '\0' && r->info_fd >= 0) return;    /* more digits may follow */
  r->inner = (pid_t)pid;
  pin_inner(r);
}

/*
** Kills the run: its pid namespace, through the pinned inner process;
** the outer bwrap then reaps it and exits. Killing the outer one as well
** (`all`, the waiter's escalation after a second) is never needed then,
** but harmless: the inner one, orphaned, comes to this process (child
** subreaper), and ux_run_wait reaps it.
** Without a pinned inner process: a run alone on its slot uid still
** kills every process of the uid but the outer bwrap; one that shares
** its uid must not. It waits (the waiter calls again every 50 ms) for
** the info, which comes within milliseconds of the start (killing the
** outer bwrap between its clone and that write would strand the inner
** one, waiting forever for a go-ahead), and once there is none to wait
** for kills the outer bwrap, whose death takes the namespace along
** (--die-with-parent). Without a slot uid (not root) the process group
** is all there is.
*/
void ux_kill_tree(ux_run *r, int all) {
  ux_read_info(r);
  /* the cgroup holds exactly this run: every process of it, a frozen
  ** one too (thawed so the kill lands), and its slirp4netns */
  if (r->has_cg) ux_cg_run_kill(&r->cg);
  if (r->inner_fd >= 0) ux_pidfd_kill(r->inner_fd);
  else if (r->slot >= 0 && !ux_slot_shared(r->slot)) ux_kill_uid(r->uid, r->pid);
  else if (r->slot < 0 || r->info_fd < 0) all = 1;
  if (all) { kill(-r->pid, SIGKILL); kill(r->pid, SIGKILL); }
}

/*
** After the outer bwrap was reaped: the namespace can outlive the
** program's main process (a program that left a background process
** behind), so the inner process is killed, then reaped once the kernel
** has emptied the namespace (it is our child by now, unless the outer
** bwrap reaped it already: ECHILD). Without a pinned inner process, a
** run alone on its slot sweeps the uid as before; one that shares it
** leaves any straggler to the sweep of the slot's last run.
*/
static void end_inner(ux_run *r) {
  ux_read_info(r);
  if (r->inner_fd < 0) {
    if (r->slot >= 0 && !ux_slot_shared(r->slot)) ux_sweep_uid(r->uid);
    return;
  }
  ux_pidfd_kill(r->inner_fd);
  /* the init of a pid namespace exits only once the kernel has killed
  ** and reaped every other process of it: its pidfd readable is the
  ** proof that nothing of the run is left (checked below, whoever reaped
  ** it: us, or the outer bwrap before it exited) */
  long long end = ux_now_ms() + SWEEP_MS;
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc = waitid((idtype_t)P_PIDFD, (id_t)r->inner_fd, &si, WEXITED | WNOHANG);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || si.si_pid != 0) break;        /* reaped, or not ours */
    long long left = end - ux_now_ms();
    if (left <= 0) break;                        /* the slot's sweep reaps it */
    struct pollfd pf = { r->inner_fd, POLLIN, 0 };
    if (poll(&pf, 1, left > 50 ? 50 : (int)left) < 0 && errno != EINTR) break;
  }
  r->ns_gone = !ux_pidfd_alive(r->inner_fd);
  ux_close_fd(&r->inner_fd);
}

static char *finish_buf(outbuf *b) {
  if (!b->p) b->p = ux_xmalloc(1);
  b->p[b->len] = '\0';
  return b->p;
}

/* The waiter's state. */
typedef struct waiter {
  ux_run *r;
  ux_run_result *res;
  outbuf ob, eb;
  int status, reaped;
  long long killed;           /* when the ttl, a cancel or an OOM killed it */
  long long deadline, drain_end;
} waiter;

/* Reaps the outer bwrap if it has exited; then the stragglers. */
static void try_reap(waiter *w) {
  ux_run *r = w->r;
  pid_t p = waitpid(r->pid, &w->status, WNOHANG);
  if (p != r->pid && !(p < 0 && errno == ECHILD)) return;
  w->reaped = 1;
  atomic_store(&r->reaped, 1);
  w->res->elapsed_ms = (long)(ux_now_ms() - r->t0_ms);
  end_inner(r);                          /* stragglers, if any */
  if (r->slot < 0) kill(-r->pid, SIGKILL);
  ux_net_stop(&r->net);
  w->drain_end = ux_now_ms() + DRAIN_MS;
  ux_close_fd(&r->pidfd);
}

/* An OOM kill in the run's cgroup ends the whole run. */
static void check_oom(waiter *w) {
  if (!w->r->has_cg || w->r->oom_killed || ux_cg_run_oom_kills(&w->r->cg) <= 0) return;
  w->r->oom_killed = 1;
  if (!w->reaped && !w->killed) { w->killed = ux_now_ms(); ux_kill_tree(w->r, 0); }
}

/* One poll of the waiter; 0 to go on, -1 when poll itself failed. */
static int wait_step(waiter *w) {
  ux_run *r = w->r;
  long long now = ux_now_ms();
  if (!w->reaped && w->killed) /* new processes, then the outer bwrap too */
    ux_kill_tree(r, now - w->killed > 1000);
  if (!w->reaped && !w->killed && w->deadline >= 0 && now >= w->deadline) {
    w->res->timed_out = 1; w->killed = now; ux_kill_tree(r, 0);
  }
  struct pollfd pf[6];
  int np = 0, io = -1, ie = -1, ic = -1, ii = -1, im = -1;
  if (r->out_fd >= 0) { io = np; pf[np++] = (struct pollfd){ r->out_fd, POLLIN, 0 }; }
  if (!w->reaped && r->info_fd >= 0) { ii = np; pf[np++] = (struct pollfd){ r->info_fd, POLLIN, 0 }; }
  if (r->err_fd >= 0) { ie = np; pf[np++] = (struct pollfd){ r->err_fd, POLLIN, 0 }; }
  /* a readable pidfd just ends the poll; try_reap reaps */
  if (r->pidfd >= 0) pf[np++] = (struct pollfd){ r->pidfd, POLLIN, 0 };
  if (!w->reaped && !w->killed) { ic = np; pf[np++] = (struct pollfd){ r->cancel_fd, POLLIN, 0 }; }
  if (!w->reaped && r->cg.oom_fd >= 0 && !r->oom_killed)
    { im = np; pf[np++] = (struct pollfd){ r->cg.oom_fd, r->cg.oom_events, 0 }; }

  long long wait = w->reaped ? w->drain_end - now : 1000;
  if (!w->reaped && !w->killed && w->deadline >= 0 && w->deadline - now < wait) wait = w->deadline - now;
  if (!w->reaped && r->pidfd < 0 && wait > 50) wait = 50;   /* no pidfd: tick */
  if (w->killed && wait > 50) wait = 50;
  if (wait < 0) wait = 0;
  int n = poll(pf, (nfds_t)np, (int)wait);
  if (n < 0 && errno != EINTR) return -1;
  if (n <= 0) return 0;
  if (io >= 0 && pf[io].revents) pump(r, 1, &r->out_fd, &w->ob);
  if (ie >= 0 && pf[ie].revents) pump(r, 2, &r->err_fd, &w->eb);
  if (ii >= 0 && pf[ii].revents) ux_read_info(r);
  if (im >= 0 && pf[im].revents) check_oom(w);
  if (ic >= 0 && pf[ic].revents && atomic_load(&r->cancel)) {
    w->res->cancelled = 1; w->killed = ux_now_ms(); ux_kill_tree(r, 0);
  }
  return 0;
}

/* The result once the run is over: exit code, bwrap's own failure,
** output, artifacts. */
static void collect(waiter *w) {
  ux_run *r = w->r;
  ux_run_result *res = w->res;
  if (WIFEXITED(w->status)) res->exit_code = WEXITSTATUS(w->status);
  else if (WIFSIGNALED(w->status)) res->exit_code = 128 + WTERMSIG(w->status);
  check_oom(w);                       /* a kill just before the end */
  res->oom_killed = r->oom_killed;
  res->memory_limit_mb = r->mem_mb;

  res->out = finish_buf(&w->ob); res->out_len = w->ob.len; res->out_truncated = w->ob.truncated;
  res->err = finish_buf(&w->eb); res->err_len = w->eb.len; res->err_truncated = w->eb.truncated;

  if (r->want_artifacts && r->work_fd >= 0) {
    ux_tree_list after = { 0 };
    ux_file *skip = NULL;
    if (r->n_inputs && (skip = ux_xcalloc(r->n_inputs, sizeof *skip)))
      for (size_t i = 0; i < r->n_inputs; i++) skip[i].name = r->inputs[i];
    if (ux_tree_list_files(r->work_fd, &after) == 0)
      ux_tree_collect(r->work_fd, &r->before, &after, skip, skip ? r->n_inputs : 0,
                    &res->artifacts, &res->n_artifacts);
    free(skip);
    ux_tree_list_free(&after);
  }
}

/* Waits for the end of every process of the run and fills res; the run
** stays allocated (and registered) for the caller to free. 0, or -1 for
** no run. */
static int wait_end(ux_run *r, ux_run_result *res) {
  memset(res, 0, sizeof *res);
  if (!r) { snprintf(res->error, sizeof res->error, "no run"); return -1; }
  waiter w = { .r = r, .res = res, .ob = { .limit = r->cap }, .eb = { .limit = r->cap },
               .deadline = r->ttl_s > 0 ? r->t0_ms + (long long)r->ttl_s * 1000 : -1,
               .drain_end = -1 };
  for (;;) {
    if (!w.reaped) try_reap(&w);
    if (w.reaped && (r->out_fd < 0 || w.ob.eof) && (r->err_fd < 0 || w.eb.eof)) break;
    if (w.reaped && ux_now_ms() >= w.drain_end) break;
    if (wait_step(&w) != 0) break;
  }
  if (!w.reaped) {  /* poll failed: never leave the sandbox behind */
    ux_kill_tree(r, 1);
    while (waitpid(r->pid, &w.status, 0) < 0 && errno == EINTR) {}
    res->elapsed_ms = (long)(ux_now_ms() - r->t0_ms);
    end_inner(r);
    ux_net_stop(&r->net);
  }
  collect(&w);
  return 0;
}

void ux_run_wait(ux_run *r, ux_run_result *res) {
  if (wait_end(r, res) != 0) return;
  ux_run_unregister(r);
  ux_run_free(r);
}

void ux_run_wait_detached(ux_run *r, ux_run_result *res) {
  if (wait_end(r, res) != 0) return;
  ux_run_unregister(r);
  ux_reaper_free(r);
}

void ux_run_result_free(ux_run_result *res) {
  if (!res) return;
  free(res->out); free(res->err);
  for (size_t i = 0; i < res->n_artifacts; i++) {
    free(res->artifacts[i].name);
    free(res->artifacts[i].data);
  }
  free(res->artifacts);
  res->out = res->err = NULL;
  res->artifacts = NULL;
  res->n_artifacts = 0;
}

