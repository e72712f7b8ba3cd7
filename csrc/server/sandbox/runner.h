/*
** The sandbox runner of unsandboxd: runs one program under bubblewrap with
** its own user, pid, network, ipc and uts namespaces, its own cgroup
** (memory and process limits for all its processes together), a
** wall-clock ttl and capped output. It knows nothing of HTTP or JSON.
**
** Thread-safety: ux_run_start/ux_run_wait are called from one worker
** thread per run; ux_run_cancel may be called from any thread. The same
** thread must call ux_run_start and ux_run_wait and stay alive meanwhile:
** a sandbox is killed (PR_SET_PDEATHSIG) when the thread that started it
** exits (the run's own thread, or the pool's thread for a sandbox
** prepared ahead), so a crashed or stopped server never leaves programs
** running.
**
** Process-wide effects (when running as root): ux_runner_init makes the
** parent cgroup unsandboxd-PID-START next to the server's own cgroup (and
** removes those of dead servers); runs use uids 200000+slot
** (slots coordinated across processes by flocks in /run/unsandboxd; runs
** of one persistent work directory share a slot while any of them runs),
** and the first run makes the process a child subreaper
** (PR_SET_CHILD_SUBREAPER) so it can reap bwrap's orphaned inner process.
** Never call waitpid(-1, ..) or wait() elsewhere in the server: it could
** steal a run's status.
*/
#ifndef UX_RUNNER_H
#define UX_RUNNER_H

#include <stddef.h>

typedef struct ux_file {
  char *name;             /* relative path inside the work directory */
  unsigned char *data;
  size_t len;
  unsigned mode;          /* permission bits; 0: 0644 */
} ux_file;

/* A host file or directory made visible read-only inside the sandbox. */
typedef struct ux_ro_bind {
  int fd;                 /* > 0: an open fd of it (O_PATH will do); the
                             runner binds what the fd refers to, so the
                             host path need not be traversable by the
                             sandbox's uid (e.g. under /root) */
  const char *src;        /* else its absolute host path, opened by the
                             runner (as root) */
  const char *dest;       /* absolute path inside; see
                             ux_sb_check_mount_point for what is refused */
} ux_ro_bind;

typedef struct ux_run_spec {
  const char *language;   /* a name from ux_languages() (unused with argv) */
  const char *code;       /* program text (for "bash": a script) */
  size_t code_len;
  const char *const *argv;/* NULL-terminated: run this program directly
                             instead of language + code (code must be
                             NULL); found through PATH inside */
  const char *const *env; /* "KEY=VALUE" strings, n_env of them */
  size_t n_env;
  const ux_file *files;   /* input files placed in the work directory */
  size_t n_files;
  int network;            /* 0 = zerotrust (no network), 1 = semitrusted */
  int ttl_s;              /* wall-clock limit in seconds; 0 = none */
  int vcpu;               /* 1..8: scales the memory limit
                             (ux_run_memory_bytes, membudget.h) */
  const struct ux_memclaim *mem;  /* a claim of the caller's that covers
                             that limit while the run lives (it is given
                             back by the caller, after the run); NULL or
                             smaller: the runner claims the limit from the
                             budget itself for the run's life, waiting up
                             to UX_MEM_RUN_WAIT_MS for room, and the run
                             fails to start when there is none */
  size_t output_cap;      /* per stream, bytes; 0 = default (1 MiB) */
  unsigned long long fsize; /* largest file the program may write
                             (RLIMIT_FSIZE, also on out_fd); 0 = 64 MiB */
  const char *workdir;    /* persistent host directory mounted as the work
                             directory (sessions, services); NULL = a fresh
                             temporary one, removed after the run. Runs
                             may share one concurrently (a service's
                             bootstrap and its commands): they then run as
                             one uid, and killing one spares the others */
  int workdir_fd;         /* > 0: that directory, already open (a volume
                             in use, volume.h); the runner uses a dup and
                             workdir only names it in messages */
  int want_artifacts;     /* collect files the program created */
  int in_fd;              /* > 0: the program's stdin (else /dev/null) */
  int out_fd;             /* > 0: its stdout goes straight there, not to
                             the result (stderr is still captured) */
  int pass_fd;            /* > 0: open as fd 10 in the program */
  const ux_ro_bind *ro_binds;   /* at most 8 */
  size_t n_ro_binds;
  const char *work_mount; /* where the work directory appears inside, also
                             the cwd and HOME; NULL = "/sandbox" */
  /* Called on the waiting thread with every piece of output as it is
  ** read (channel 1 stdout, 2 stderr), before the capture cap applies:
  ** how a service keeps the tail of its log. Must not block. */
  void (*on_output)(void *ctx, int channel, const char *data, size_t len);
  void *output_ctx;
} ux_run_spec;

typedef struct ux_run_result {
  char *out;  size_t out_len;  int out_truncated;
  char *err;  size_t err_len;  int err_truncated;
  int exit_code;          /* the program's exit status; 128+N for signal N */
  int timed_out;          /* killed at its ttl */
  int cancelled;          /* killed by ux_run_cancel (or kill_workdir) */
  int oom_killed;         /* it outgrew its memory limit: the kernel killed
                             a process and the runner the rest */
  long memory_limit_mb;   /* that limit; 0 without a memory cgroup */
  long elapsed_ms;        /* wall clock of the run */
  ux_file *artifacts;  size_t n_artifacts;
  char error[256];        /* set when the sandbox itself could not run */
} ux_run_result;

typedef struct ux_run ux_run;

/* The most a result of spec can hold, for a caller that keeps it: bytes
** of stdout and of stderr each (the rest is dropped and flagged), and of
** the artifacts' contents together (0 when none are wanted). */
void ux_run_result_caps(const ux_run_spec *spec, size_t *per_stream, size_t *artifacts);

/* Prepares the work directory and starts the sandbox. Returns NULL and
** writes a message to err for bad specs (unknown language, a file name
** that escapes the work directory) or when bwrap cannot be started. */
ux_run *ux_run_start(const ux_run_spec *spec, char *err, size_t errlen);

/* Blocks until the run ends, fills res, and frees the run. */
void ux_run_wait(ux_run *run, ux_run_result *res);

/* The same, but returns as soon as every process of the run is gone and
** res is filled: what is left (cgroup, run directory, scratch volume,
** slot) is released by a background thread. The run is unregistered
** before it returns (cancels by id no longer find it). For a caller that
** answers a client first; ux_runner_reaper_flush (and ux_runner_shutdown)
** wait until everything released so is. */
void ux_run_wait_detached(ux_run *run, ux_run_result *res);
void ux_runner_reaper_flush(void);

/* Kills the run's whole process tree; the waiter reports cancelled.
** A run that ux_run_wait already freed is ignored (runs are looked up in a
** registry), but only ux_run_cancel_id is immune to a freed run's address
** being reused by a new one: prefer it when the canceller may race the end
** of the wait. */
void ux_run_cancel(ux_run *run);

/* A unique, never reused id of the run (nonzero); valid after start. */
unsigned long long ux_run_id(const ux_run *run);

/* Cancels the run with this id if it is still running: 1, else 0. Safe
** from any thread at any time. */
int ux_run_cancel_id(unsigned long long id);

/* An fd of the network namespace of the run with this id (its inner
** process's, checked alive through its pidfd after the open), for a
** caller that makes sockets in it (a service's forwarded ports); -1 when
** the run is not known or not started yet. The caller closes it. */
int ux_run_netns_id(unsigned long long id);

void ux_run_result_free(ux_run_result *res);

/* Languages whose interpreter or compiler is installed on this machine,
** probed once; in the service's order (spec §5.6), others after them. */
const char *const *ux_languages(size_t *n);
int ux_language_known(const char *name);

/* Checked at start-up: bubblewrap present and user namespaces usable. */
int ux_runner_check(char *err, size_t errlen);

/* How runs are isolated and limited, decided once by ux_runner_init. */
typedef struct ux_isolation {
  const char *cgroup;     /* "v2", "v1", or "none" (rlimits only) */
  int memory, memsw, pids, freezer;   /* what the cgroups enforce */
  const char *network;    /* semitrusted: "slirp4netns", or "unavailable"
                             (semitrusted runs then fail to start) */
  char detail[640];       /* one line for the start-up message: what is in
                             force and why nothing better was */
} ux_isolation;

/* Chooses, once, how runs are limited: with `cgroups` nonzero and as
** root, cgroup v2 if usable, else v1 (memory + pids, freezer when
** mounted), else rlimits (RLIMIT_DATA, RLIMIT_NPROC: the fallback). Makes
** the server's parent cgroup. Call at start-up before any run; a first
** run without it chooses as with cgroups = 1. Later calls only report.
** Fills *iso (may be NULL); returns 0. */
int ux_runner_init(int cgroups, ux_isolation *iso);

/* The memory budget of all runs together (bytes; 0 = the default share
** of the machine's memory, membudget.h): every run's limit is claimed
** from it, and the runs' parent cgroup gets it as its limit. Call before
** ux_runner_init. */
void ux_runner_set_memory_budget(unsigned long long bytes);

/* What ux_runner_init decided (deciding now if it was not called). */
const ux_isolation *ux_runner_isolation(void);

/* Stops the pool (ux_runner_pool_stop), waits for the background releases
** (ux_runner_reaper_flush), then removes the server's parent cgroup once
** every run has ended. */
void ux_runner_shutdown(void);

/*
** Quiescing the runs of one persistent work directory (runs that share it
** share a slot: a session's commands, a service's bootstrap and its
** executions). `dir_fd` is an open fd of that directory (compared by
** device and inode). Runs still inside ux_run_start when these are called
** are not seen: stop starting runs of the directory first. A run started
** after a freeze is not frozen (each run has its own cgroup), so an
** archiver can run next to a frozen service.
*/

/* Freezes (frozen = 1) or thaws (0) every run of the work directory and
** waits until the kernel reports it done. Returns how many runs, or -1
** (errno) when one could not be: the freeze may then be partial (thaw to
** undo). With a cgroup freezer (v2, or v1's freezer) a frozen run cannot
** tell; without one (rlimits mode) it falls back to SIGSTOP/SIGCONT of
** every process of the slot uid: a quiescing aid, not a guarantee (a
** process forked at that instant may escape, and a process of the run
** could SIGCONT another). A run's ttl keeps running while it is frozen. */
int ux_runner_freeze_workdir(int dir_fd, int frozen);

/* Kills every run of the work directory (their results say cancelled) and
** returns 0 once all their processes are gone, or -1 when timeout_ms
** passed first. Frozen runs are killed too. */
int ux_runner_kill_workdir(int dir_fd, int timeout_ms);

/*
** Sandboxes prepared ahead. ux_runner_pool_start keeps, for each shape
** of the comma-separated list ("LANG" or "LANG/semitrusted"; NULL or ""
** = UX_POOL_DEFAULT_SHAPES), up to `size` sandboxes started and waiting:
** namespaces, mounts, cgroup, slot, scratch volume and (semitrusted)
** network done. A run of that language and network mode that brings
** nothing else (no argv, env, persistent work directory, fds, ro binds
** or work_mount; vcpu 1) takes one in ux_run_start; a thread refills the
** pool. A sandbox serves one run only. With none ready, or for any other
** spec, a run starts as without a pool. Call after ux_runner_init;
** ux_runner_pool_stop (also done by ux_runner_shutdown) frees the idle
** sandboxes and waits (bounded) for pooled runs to end. 0 or -1 with err
** (a bad size or shape, a language not installed).
*/
#define UX_POOL_SHAPES 16
#define UX_POOL_MAX    64
#define UX_POOL_DEFAULT_SHAPES "bash,python"

int ux_runner_pool_start(int size, const char *shapes, char *err, size_t errlen);

/* The pool a server has when not told a size (no --pool): small, so that
** the runs a user meets first are pooled ones, at the cost of a few idle
** sandboxes. UX_POOL_DEFAULT_SIZE for each shape of `shapes`, or, when
** NULL or "", of each default shape whose language is installed here (none
** installed: no pool, and 0). The shapes started go to `used` ("" for
** none). 0, or -1 with err. */
#define UX_POOL_DEFAULT_SIZE 2
int ux_runner_pool_start_default(const char *shapes, char *used, size_t usedlen,
                                 char *err, size_t errlen);
void ux_runner_pool_stop(void);

typedef struct ux_pool_stats {
  int running, size, n_shapes;
  struct { char language[32]; int network; int ready; } shape[UX_POOL_SHAPES];
  unsigned long long started;   /* sandboxes prepared (ready or not) */
  unsigned long long failed;    /* of them, never ready (discarded) */
  unsigned long long hits;      /* runs that took a ready sandbox */
  unsigned long long misses;    /* runs of a pooled shape that found none */
  unsigned long long discarded; /* ready ones found dead when taken */
  char last_error[256];         /* why the last failed one failed */
} ux_pool_stats;

void ux_runner_pool_stats(ux_pool_stats *st);

/* Runs started and not yet waited for: sandboxes running a program. */
int ux_runner_live(void);

/* Slots (uids) whose runs all ended with their processes proven gone
** are kept locked, idle, by this process, up to n of them (default 0,
** plus the pool's own), so the next runs take one without first sweeping
** /proc for leftovers of its uid. The server keeps as many as it runs
** sandboxes at once; each kept slot holds one fd (its flock). */
void ux_runner_keep_slots(int n);

/* Where private run directories (source, temporary work directory) are
** made; default /tmp. Call before the first run (e.g. with DATA/tmp). The
** sandbox receives them as open fds, so DIR may be private to root. */
void ux_runner_set_tmpdir(const char *dir);

#endif
