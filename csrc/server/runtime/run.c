/*
** A runtime's own thread: it starts the sandbox and waits for it, as the
** runner requires of one thread (runner.h: the sandbox dies with the
** thread that started it), then tells the registry why the runtime
** ended and gives its volume back.
**
** The sandbox is one ordinary runner run: unsandboxd-agent, bound
** read-only at a fixed path, in mode runtime on the volume (mounted at
** /workspace for the Control Plane, where its shape says for a living
** session or service), with the agent's end of a SOCK_SEQPACKET control
** channel as fd 10, the network and vcpu of its shape, no ttl (the
** watcher owns the TTLs), and files as large as the volume (a platform
** runtime is a pod, a session a container, whose only bound on a file is
** its disk; one-shot runs keep the runner's 64 MiB). The runner's kill
** paths (the run's pid namespace, its cgroup) make sure nothing the
** runtime started outlives it.
*/
#include "server/runtime/runtime_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"

#define AGENT_STDERR_CAP (64 * 1024)   /* kept for the end's message */
#define KILLED           (128 + 9)     /* the run's exit code after SIGKILL */

#define ENV_MAX 64                     /* the registry's and the runtime's own */

/* Starts the sandbox with agent_end as its control channel. */
static ux_run *start_run(ux_rt *rt, int agent_end, char *err, size_t errlen) {
  ux_runtimes *rts = rt->rts;
  const char *const argv[] = { UX_RT_AGENT_IN, "runtime", "--root", rt->root,
                               "--control-fd", "10", NULL };
  const char *env[ENV_MAX];
  size_t n_env = 0;
  for (size_t i = 0; i < rts->n_env && n_env < ENV_MAX; i++) env[n_env++] = rts->env[i];
  for (size_t i = 0; rt->env[i] && n_env < ENV_MAX; i++) env[n_env++] = rt->env[i];
  ux_ro_bind bind = { rts->agent_fd, NULL, UX_RT_AGENT_IN };
  ux_run_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.argv = argv;
  spec.env = env;
  spec.n_env = n_env;
  spec.network = rt->network;
  spec.ttl_s = 0;                        /* the watcher enforces the TTLs */
  spec.fsize = ux_volume_disk_bytes();   /* 0 (never: the size is set at start) = default */
  spec.vcpu = rt->vcpu;
  spec.mem = &rt->mem;                   /* claimed by ux_runtimes_start */
  spec.output_cap = AGENT_STDERR_CAP;
  spec.workdir = rt->volume;             /* named in messages only */
  spec.workdir_fd = rt->volume_fd;
  spec.pass_fd = agent_end;
  spec.ro_binds = &bind;
  spec.n_ro_binds = 1;
  spec.work_mount = rt->root;
  return ux_run_start(&spec, err, errlen);
}

/* The last non-empty line of the agent's stderr, printable ASCII only
** (it comes from inside the sandbox and ends up in logs and replies). */
static void last_line(const char *text, size_t len, char *out, size_t outlen) {
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
  size_t start = len;
  while (start > 0 && text[start - 1] != '\n') start--;
  size_t n = 0;
  for (size_t i = start; i < len && n + 1 < outlen; i++) {
    unsigned char c = (unsigned char)text[i];
    out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  if (outlen) out[n] = '\0';
}

/* Why a runtime ended on its own (no stop was asked, or the run's own
** end says more than a soft stop: then the cancel, if it came after the
** agent's exit, is not the story). */
static int own_end(const ux_run_result *res, int count_cancel, char *why, size_t whylen) {
  char line[160] = "";
  if (res->oom_killed) {
    snprintf(why, whylen, "the runtime ran out of memory (%ld MiB)", res->memory_limit_mb);
    return UX_RT_FAILED;
  }
  if (res->error[0]) {
    snprintf(why, whylen, "%s", res->error);
    return UX_RT_FAILED;
  }
  if (res->cancelled && count_cancel) {
    snprintf(why, whylen, "the runtime's sandbox was stopped from outside (its volume was "
             "removed or restored)");
    return UX_RT_RELEASED;
  }
  last_line(res->err ? res->err : "", res->err_len, line, sizeof line);
  snprintf(why, whylen, "the runtime's agent exited with status %d%s%s", res->exit_code,
           line[0] ? ": " : "", line);
  return UX_RT_FAILED;
}

/* Records the end (mu not held) and reports it through on_end. */
static void finish(ux_rt *rt, const ux_run_result *res, const char *start_err) {
  ux_runtimes *rts = rt->rts;
  char why[256];
  int status;
  pthread_mutex_lock(&rts->mu);
  int control = rt->control;
  rt->control = -1;
  if (!res) {
    status = UX_RT_FAILED;
    snprintf(why, sizeof why, "the runtime could not start: %s", start_err);
  } else if (rt->kill && (!rt->kill_soft || (res->cancelled && res->exit_code == KILLED &&
                                              !res->oom_killed && !res->error[0]))) {
    /* asked for, or soft and the run shows nothing but our own kill */
    status = rt->kill_status;
    snprintf(why, sizeof why, "%s", rt->kill_why);
  } else {
    status = own_end(res, !rt->kill, why, sizeof why);
  }
  pthread_mutex_unlock(&rts->mu);
  if (control >= 0) close(control);
  ux_volume_release(rt->volume);
  ux_mem_release(&rt->mem);              /* its processes are gone */

  pthread_mutex_lock(&rts->mu);
  rt->status = status;
  snprintf(rt->why, sizeof rt->why, "%s", why);
  rt->done = 1;
  rt->ended_ms = ux_now_ms();
  int report = !rt->released && rts->cfg.on_end;
  pthread_cond_broadcast(&rts->changed);
  pthread_mutex_unlock(&rts->mu);
  if (report) rts->cfg.on_end(rts->cfg.ctx, rt->sb_id, status, why);
  pthread_mutex_lock(&rts->mu);
  rt->reported = 1;
  pthread_cond_broadcast(&rts->changed);
  pthread_mutex_unlock(&rts->mu);
  ux_rt_wake(rts);                       /* the watcher joins this thread */
}

void *ux_rt_thread(void *arg) {
  ux_rt *rt = arg;
  ux_runtimes *rts = rt->rts;
  char err[256] = "";
  int sv[2] = { -1, -1 };
  ux_run *run = NULL;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    snprintf(err, sizeof err, "cannot make the control channel: %s", strerror(errno));
  else
    run = start_run(rt, sv[1], err, sizeof err);
  /* the runner holds its own copies now: the sandbox has the agent's
  ** end, and its work directory through a dup of the volume's fd */
  if (sv[1] >= 0) close(sv[1]);
  close(rt->volume_fd);
  pthread_mutex_lock(&rts->mu);
  rt->volume_fd = -1;
  if (run) {
    rt->control = sv[0];
    rt->run_id = ux_run_id(run);
    /* stopped while starting (a soft stop is the watcher's, once due) */
    if (rt->kill && !rt->cancel_at) ux_run_cancel_id(rt->run_id);
  } else if (sv[0] >= 0) {
    close(sv[0]);
  }
  pthread_mutex_unlock(&rts->mu);
  ux_rt_wake(rts);                       /* the watcher sends the first ping */
  if (!run) {
    finish(rt, NULL, err);
    return NULL;
  }
  ux_run_result res;
  ux_run_wait(run, &res);
  finish(rt, &res, NULL);
  ux_run_result_free(&res);
  return NULL;
}
