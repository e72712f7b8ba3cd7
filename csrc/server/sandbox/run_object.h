/*
** The run object and the helpers the runner's files share: runner.c
** (checks, arming, start), setup.c (a sandbox up to its release), pool.c
** (sandboxes prepared ahead), spawn.c (the children), wait.c (the
** waiter), workgroup.c (freeze and kill by work directory), net.c
** (slirp4netns). Internal: the public interface is runner.h.
*/
#ifndef UX_RUN_H
#define UX_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "server/sandbox/cgroup.h"
#include "server/sandbox/membudget.h"
#include "server/sandbox/net.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/bwrap_argv.h"
#include "server/sandbox/tree.h"

struct ux_run {
  unsigned long long id;
  struct ux_run *next;        /* registry, under ux_reg_lock */
  int busy;                   /* workgroup operations using it (registry lock) */
  atomic_int cancel;
  int cancel_fd;              /* eventfd */

  pid_t pid;
  atomic_int reaped;          /* the waiter has reaped pid */
  int pidfd;                  /* -1 when the kernel has no pidfd_open */
  int out_fd, err_fd;
  int block_fd;               /* bwrap's --block-fd (write end): one byte
                                 lets the program start */
  int info_fd;                /* bwrap's --info-fd, until EOF */
  char info[512]; size_t info_len;
  pid_t inner;                /* bwrap's inner process (0: not known yet) */
  int inner_fd;               /* its pidfd, -1 when not pinned */
  int sys_fd;                 /* its /proc/PID/syscall while setting up */
  int ns_gone;                /* the inner process exited: proof that every
                                 process of the pid namespace is gone */
  long long t0_ms;
  int ttl_s;
  size_t cap;

  int slot;                   /* -1 when not running as root */
  uid_t uid; gid_t gid;
  int base_fd;                /* directory holding the run directory */
  char run_name[64];          /* its name there */
  char run_path[PATH_MAX + 32];  /* and its path: a scratch volume's mount point */
  int code_fd;                /* the code directory (source placed at arming) */
  const struct ux_lang *lang; /* NULL for an argv run */
  int pooled;                 /* prepared ahead by the pool */
  int work_fd;
  dev_t wd_dev; ino_t wd_ino; /* the work directory, for workgroup.c */
  int want_artifacts;
  ux_tree_list before;
  char **inputs; size_t n_inputs;   /* input file names (not artifacts) */
  void (*on_output)(void *ctx, int channel, const char *data, size_t len);
  void *output_ctx;

  int has_cg;                 /* cg is the run's cgroup */
  ux_cg_run cg;
  long mem_mb;                /* the memory limit, MiB */
  ux_memclaim mem;            /* the runner's own claim of that limit (for
                                 runs whose spec brought none), given back
                                 when the run is freed */
  int oom_killed;
  ux_net net;                 /* slirp4netns of a semitrusted run */
};

/* ---------------------------------------------------------------------
** runner.c: process-wide state
** ------------------------------------------------------------------- */

/* The registry of started runs and the lock that guards it and every
** run's `busy`; ux_reg_idle is signalled when a busy count drops. */
extern pthread_mutex_t ux_reg_lock;
extern pthread_cond_t ux_reg_idle;
ux_run *ux_reg_first(void);         /* under ux_reg_lock */

/* The cgroup layout in force (version UX_CG_NONE: rlimits). */
const ux_cg_layout *ux_runner_cg(void);

/* The directory for run directories (ux_runner_set_tmpdir), and a new,
** never reused run id. */
void ux_runner_tmpdir(char *out, size_t size);
unsigned long long ux_reg_next_id(void);

/* RLIMIT_CPU for a ttl: a backstop behind the wall clock. */
void ux_sb_cpu_limit(int ttl_s, struct rlimit *l);

int ux_privileged(void);
void ux_close_fd(int *fd);

/* ---------------------------------------------------------------------
** spawn.c: the forked children (async-signal-safe code only)
** ------------------------------------------------------------------- */

#define UX_MAX_LIMITS 8

typedef struct ux_child_plan {
  int fds[UX_FD_COUNT];       /* sources for fds 0..UX_FD_COUNT-1; -1 closed */
  int cg_fds[UX_CG_NDIR];     /* cgroup.procs to join first */
  int n_cg;
  struct rlimit lim[UX_MAX_LIMITS];
  int res[UX_MAX_LIMITS];
  int nlim;
  int drop;                   /* setuid to uid/gid */
  int mount;                  /* bind the dirs at UX_SB_MNT_* first */
  int mntns;                  /* the mount namespace to copy (mounts.c); -1: ours */
  int devpts;                 /* mount a terminal file system of its own on
                                 UX_SB_DEV/pts there (ux_child_dev) */
  int ro_dir[UX_SB_RO_BINDS]; /* ro bind n is a directory (else a file) */
  int n_ro;
  uid_t uid; gid_t gid;
  pid_t parent;
  char **argv;
} ux_child_plan;

void ux_plan_limit(ux_child_plan *p, int res, rlim_t soft, rlim_t hard);

/* Starts the child of a plan (see spawn.c): it execs bwrap, or writes
** {step, errno} to UX_FD_EXECERR when a step fails and _exits 127. The
** calling thread waits until it has exec'd or exited, and is the one
** whose end kills it (PR_SET_PDEATHSIG). pid, or -1 with errno; *pidfd
** is its pidfd (close-on-exec), -1 on a kernel without pidfds. */
pid_t ux_spawn_bwrap(const ux_child_plan *p, int *pidfd);

/* The same for any child function that ends in execve or _exit and makes
** only async-signal-safe calls (it shares the caller's memory until then;
** every signal is blocked when it starts). */
pid_t ux_spawn(int (*fn)(void *), void *arg, int *pidfd);

/* Moves fds[i] to fd i for i < n (-1: close i), closes every fd >= n.
** Async-signal-safe. 0 or -1. */
int ux_place_fds(const int *fds, int n);

/* What each step of ux_spawn_child is, for the error message. */
const char *ux_spawn_step(int step);

/* ---------------------------------------------------------------------
** mounts.c
** ------------------------------------------------------------------- */

/* An fd of the mount namespace a sandbox's child copies before it
** mounts its directories and execs bwrap: this process's, made once,
** with every mount detached but /, /proc, /dev, /usr, /etc and what is
** below /usr and /etc. -1 when it could not be made (the child then
** copies this process's own namespace whole). */
int ux_child_mntns(void);

/* UX_SB_DEV when that namespace holds the sandboxes' /dev (a read-only
** tmpfs with the host's null, zero, full, random, urandom and tty nodes,
** bwrap's symlinks, and empty pts and shm directories, on which each
** child mounts its own devpts and bwrap its own tmpfs), else NULL (bwrap
** makes one with --dev). */
const char *ux_child_dev(void);

/* ---------------------------------------------------------------------
** setup.c: a sandbox up to its release
** ------------------------------------------------------------------- */

/* Everything of a run but its source, input files and release: bwrap is
** left waiting on its block fd (and a semitrusted run's network is up).
** Flags: UX_SB_POOLED leaves RLIMIT_CPU to the arming (the ttl is not
** known yet); UX_SB_BROKEN (tests) makes bwrap's set-up fail. NULL with
** err. */
enum { UX_SB_POOLED = 1, UX_SB_BROKEN = 2 };
ux_run *ux_sb_prepare(const ux_run_spec *spec, const struct ux_lang *lang, const char *script,
                      int flags, char *err, size_t errlen);

/* 1 when bwrap has finished its set-up and waits on the block fd, 0 not
** yet, -1 when the sandbox died (discard it). */
int ux_sb_ready(ux_run *r);

/* Waits (at most UX_SB_NET_MS) until ux_sb_ready; 0, or -1 with err
** ("sandbox failed to start: " and bwrap's message when it died). */
int ux_sb_await_ready(ux_run *r, char *err, size_t errlen);

/* The message for a sandbox that died before its release. */
void ux_sb_start_error(ux_run *r, char *err, size_t errlen);

/* 1 while the outer bwrap and the pinned inner process both live. */
int ux_sb_alive(ux_run *r);

/* Kills, reaps and frees a sandbox that must not go on. */
void ux_sb_abandon(ux_run *r);

/* ---------------------------------------------------------------------
** pool.c
** ------------------------------------------------------------------- */

/* A ready sandbox prepared for `spec`'s shape, out of the pool, or NULL
** (no pool, not a pooled shape, none ready). The caller arms it. */
ux_run *ux_pool_take(const ux_run_spec *spec);

/* A pooled run has been freed (ux_run_free calls it). */
void ux_pool_done(void);

/* Whether a shape with `have` sandboxes ready or starting, of `size`,
** gets another one now, `since_take_ms` after a run last looked for one:
** while runs keep coming only below a low mark (pool.c, neediest). */
int ux_pool_may_refill(int have, int size, long long since_take_ms);

/* Tests: the next n sandboxes the pool prepares fail their set-up inside
** bwrap (UX_SB_BROKEN), as a sandbox that cannot start would. */
void ux_pool_break_next(int n);

/* ---------------------------------------------------------------------
** wait.c
** ------------------------------------------------------------------- */

/* Reads what bwrap wrote to the info fd so far; pins the inner process
** once its pid is complete. */
void ux_read_info(ux_run *r);

/* Kills the run (see wait.c); `all`: the outer bwrap as well. */
void ux_kill_tree(ux_run *r, int all);

/* Takes r out of the registry once no workgroup operation uses it. */
void ux_run_unregister(ux_run *r);

/* Frees a run that never reached ux_run_wait or has finished it. */
void ux_run_free(ux_run *r);

/* ---------------------------------------------------------------------
** reaper.c
** ------------------------------------------------------------------- */

/* Frees a finished, unregistered run on the reaper thread. */
void ux_reaper_free(ux_run *r);

#endif
