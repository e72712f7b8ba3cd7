/*
** The sandbox runner of unsandboxd: runs one program under bubblewrap with
** its own user, pid, network, ipc and uts namespaces, resource limits, a
** wall-clock ttl and capped output. It knows nothing of HTTP or JSON.
**
** Thread-safety: ux_run_start/ux_run_wait are called from one worker
** thread per run; ux_run_cancel may be called from any thread. The same
** thread must call ux_run_start and ux_run_wait and stay alive meanwhile:
** the sandbox is killed (PR_SET_PDEATHSIG) when the starting thread exits,
** so a crashed or stopped server never leaves programs running.
**
** Process-wide effects (when running as root): runs use uids 200000+slot
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
} ux_file;

typedef struct ux_run_spec {
  const char *language;   /* a name from ux_languages() */
  const char *code;       /* program text (for "bash": a script) */
  size_t code_len;
  const char *const *env; /* "KEY=VALUE" strings, n_env of them */
  size_t n_env;
  const ux_file *files;   /* input files placed in the work directory */
  size_t n_files;
  int network;            /* 0 = zerotrust (no network), 1 = semitrusted */
  int ttl_s;              /* wall-clock limit in seconds; 0 = none */
  int vcpu;               /* 1..8: scales the memory limit */
  size_t output_cap;      /* per stream, bytes; 0 = default (1 MiB) */
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
  int cancelled;          /* killed by ux_run_cancel */
  long elapsed_ms;        /* wall clock of the run */
  ux_file *artifacts;  size_t n_artifacts;
  char error[256];        /* set when the sandbox itself could not run */
} ux_run_result;

typedef struct ux_run ux_run;

/* Prepares the work directory and starts the sandbox. Returns NULL and
** writes a message to err for bad specs (unknown language, a file name
** that escapes the work directory) or when bwrap cannot be started. */
ux_run *ux_run_start(const ux_run_spec *spec, char *err, size_t errlen);

/* Blocks until the run ends, fills res, and frees the run. */
void ux_run_wait(ux_run *run, ux_run_result *res);

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

void ux_run_result_free(ux_run_result *res);

/* Cancels every run whose work directory is dir_fd's directory and waits
** until they have all ended: 0, or -1 when timeout_ms passed first. */
int ux_runner_kill_workdir(int dir_fd, int timeout_ms);

/* Languages whose interpreter or compiler is installed on this machine,
** probed once; names sorted. */
const char *const *ux_languages(size_t *n);
int ux_language_known(const char *name);

/* Checked at start-up: bubblewrap present and user namespaces usable. */
int ux_runner_check(char *err, size_t errlen);

/* Where private run directories (source, temporary work directory) are
** made; default /tmp. Call before the first run (e.g. with DATA/tmp). The
** sandbox receives them as open fds, so DIR may be private to root. */
void ux_runner_set_tmpdir(const char *dir);

#endif
