/*
** exec: `bash --noprofile --norc -o pipefail -c COMMAND` with cwd DIR,
** stdin /dev/null, in a new process group, stdout and stderr on two pipes.
**
** The handler polls the two pipes, the request socket (EOF there means the
** server's client went away: the group is SIGKILLed and no frame is sent)
** and a pidfd of bash. Each stream keeps its first AG_EXEC_OUTPUT_MAX bytes;
** later bytes are read and dropped (output_truncated), so the program never
** blocks on a full pipe. Kept bytes are cleaned to UTF-8 (a sequence split
** between two reads is carried over) and, with stream:true, sent at once as
** chunk events. When bash exits, whatever is left in its process group is
** SIGKILLed (exec leaves no process behind; use a PTY session for
** long-lived ones) and the pipes are drained for at most 0.5 s more. On
** timeout the whole group is SIGKILLed: timed_out true, exit_code -9. A
** bash killed by a signal reports -signal.
**
** A background exec (background:true: the commands of a living session or
** service) leaves what its command started running: bash's exit answers at
** once with the output already in the pipes, and what the processes left
** behind write later is read and dropped by a sink process (its own
** process group, so the handler's end does not take it along) until they
** close the pipes, so they neither block on a full pipe nor die of
** SIGPIPE. With follow:true the answer waits for that instead, streaming
** all along (a service's bootstrap: its daemons' output is its log). Its
** timeout may then be up to a day, or none (0); env and files come with it
** (exec_prep.h); collect:false streams the output without keeping it, at
** most output_max bytes per stream (0: no limit).
*/
#include "agent/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/buf.h"
#include "agent/exec_prep.h"
#include "agent/walk.h"

typedef struct {
  int fd;
  const char *name;
  size_t kept;
  ag_utf8_state u;
  ag_buf text;
} stream;

/* The request's options. */
typedef struct {
  const char *command;
  long long timeout;          /* seconds; 0: none (background only) */
  int streaming, background, follow, collect;
  size_t output_max;          /* bytes per stream; 0: no limit (collect:false) */
  json_t *req;                /* for env and files */
} exec_opts;

/* The command's process group, for the SIGTERM the runtime sends to its
** handlers when it shuts down: the group goes with the handler. */
static volatile sig_atomic_t cmd_pgid;

static void on_term(int sig) {
  (void)sig;
  if (cmd_pgid > 0) kill(-(pid_t)cmd_pgid, SIGKILL);
  _exit(0);
}

void ag_exec_kill_leader(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  kill(-pid, SIGKILL);
}

void ag_exec_child_signals(void) {
  sigset_t none;
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static pid_t spawn(const ag_fs *fs, const exec_opts *o, int out[2], int err[2], ag_err *e) {
  sigset_t term, old;
  pid_t pid;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &old);    /* no SIGTERM before cmd_pgid is set */
  signal(SIGTERM, on_term);
  pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    return ag_sysfail(e, "fork");
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    setpgid(0, 0);
    ag_exec_child_signals();
    if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0 || fchdir(fs->root) < 0)
      _exit(127);
    ag_exec_prep_env(o->req);
    execlp("bash", "bash", "--noprofile", "--norc", "-o", "pipefail", "-c", o->command, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  cmd_pgid = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* Reads what a pipe has; returns 0 at EOF, -1 when it is empty for now,
** 1 otherwise. */
static int pump(stream *s, ag_conn *c, const exec_opts *o, int *truncated) {
  char buf[16384];
  ssize_t n = read(s->fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR ? 1 : errno == EAGAIN ? -1 : 0;
  if (n == 0) return 0;
  size_t keep = (size_t)n;
  if (o->output_max && s->kept + keep > o->output_max) { keep = o->output_max - s->kept; *truncated = 1; }
  if (keep > 0) {
    size_t before = s->text.len;
    s->kept += keep;
    ag_utf8_clean(&s->u, buf, keep, s->kept == o->output_max, 0, &s->text);
    if (o->streaming && s->text.len > before)
      ag_conn_event_chunk(c, s->name, s->text.p + before, s->text.len - before);
    if (!o->collect) ag_buf_reset(&s->text);
  }
  return 1;
}

static void finish_stream(stream *s, ag_conn *c, const exec_opts *o) {
  size_t before = s->text.len;
  ag_utf8_clean(&s->u, "", 0, 1, 1, &s->text);
  if (o->streaming && s->text.len > before)
    ag_conn_event_chunk(c, s->name, s->text.p + before, s->text.len - before);
  if (!o->collect) ag_buf_reset(&s->text);
}

/* Reads both pipes until they are empty for now (what the processes that
** ended wrote is all there). */
static void pump_now(stream s[2], ag_conn *c, const exec_opts *o, int *truncated) {
  for (int k = 0; k < 2; k++) {
    int r;
    while (s[k].fd >= 0 && (r = pump(&s[k], c, o, truncated)) != -1)
      if (r == 0) { close(s[k].fd); s[k].fd = -1; }
  }
}

int ag_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

typedef struct {
  stream s[2];
  pid_t pid;
  int pidfd, status, exited, timed_out, truncated, gone;
} run;

/* The poll loop; returns when the pipes are done or the client is gone. */
static void supervise(run *r, ag_conn *c, const exec_opts *o, double deadline) {
  double drain_until = 0;
  while (!r->gone && (r->s[0].fd >= 0 || r->s[1].fd >= 0 || !r->exited)) {
    struct pollfd p[4];
    int n = 0, wait_ms;
    double now = ag_now(), until = r->exited ? drain_until : deadline;
    if (now >= until) {
      if (r->exited) break;                         /* drained long enough */
      kill(-r->pid, SIGKILL);
      waitpid(r->pid, &r->status, 0);
      r->exited = r->timed_out = 1;
      drain_until = ag_now() + 0.2;
      continue;
    }
    wait_ms = until - now > 60 ? 60000 : (int)((until - now) * 1000) + 1;
    p[n++] = (struct pollfd){ c->fd, (short)(POLLIN | (c->out.len ? POLLOUT : 0)), 0 };
    p[n++] = (struct pollfd){ r->exited ? -1 : r->pidfd, POLLIN, 0 };
    p[n++] = (struct pollfd){ r->s[0].fd, POLLIN, 0 };
    p[n++] = (struct pollfd){ r->s[1].fd, POLLIN, 0 };
    if (poll(p, (nfds_t)n, wait_ms) < 0 && errno != EINTR) break;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) ag_conn_watch(c);
    if (p[0].revents & POLLOUT) ag_conn_flush(c);
    if (c->peer_gone) { r->gone = 1; break; }
    for (int k = 0; k < 2; k++)
      if (p[2 + k].revents && !pump(&r->s[k], c, o, &r->truncated)) {
        close(r->s[k].fd);
        r->s[k].fd = -1;
      }
    if (!r->exited && p[1].revents) {
      waitpid(r->pid, &r->status, 0);
      r->exited = 1;
      if (!o->background) kill(-r->pid, SIGKILL);    /* what it left behind */
      drain_until = o->follow ? deadline : ag_now() + 0.5;
      if (o->background && !o->follow) {             /* answer now; the sink reads on */
        pump_now(r->s, c, o, &r->truncated);
        break;
      }
    }
    if (c->out.len) ag_conn_flush(c);
  }
}

#define DAY 86400
#define OUTPUT_MAX_MAX (16 << 20)

static int exec_args(json_t *req, exec_opts *o, ag_err *e) {
  static const char *const keys[] = { "command", "timeout_seconds", "stream", "background", "follow",
                                      "collect", "output_max", "env", "files", NULL };
  size_t len;
  long long max;
  memset(o, 0, sizeof *o);
  o->req = req;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "command", NULL, 0, &o->command, &len, e) < 0 ||
      ag_arg_bool(req, "stream", 0, &o->streaming, e) < 0 ||
      ag_arg_bool(req, "background", 0, &o->background, e) < 0 ||
      ag_arg_bool(req, "follow", 0, &o->follow, e) < 0 ||
      ag_arg_bool(req, "collect", 1, &o->collect, e) < 0 ||
      ag_arg_int(req, "timeout_seconds", 30, o->background ? 0 : 1, o->background ? DAY : 30, &o->timeout, e) < 0 ||
      ag_arg_int(req, "output_max", o->collect ? AG_EXEC_OUTPUT_MAX : 0, 0,
                 o->collect ? AG_EXEC_OUTPUT_MAX : OUTPUT_MAX_MAX, &max, e) < 0)
    return -1;
  o->output_max = (size_t)max;
  size_t most = o->background ? AG_EXEC_BACKGROUND_COMMAND_MAX : AG_EXEC_COMMAND_MAX;
  if (len > most) return ag_fail(e, AG_INVALID, "argument 'command' is %zu bytes, more than %zu", len, most);
  if (!o->background && (o->follow || json_object_get(req, "env") || json_object_get(req, "files")))
    return ag_fail(e, AG_INVALID, "arguments 'follow', 'env' and 'files' need 'background'");
  if (!o->collect && !o->streaming) return ag_fail(e, AG_INVALID, "argument 'collect' false needs 'stream'");
  if (o->collect && !o->output_max) o->output_max = AG_EXEC_OUTPUT_MAX;
  return ag_exec_prep_check(req, e);
}

/* What the background processes write after the answer: read and dropped
** by a process of its own (outside the handler's group, which dies with
** the handler) until every writer has closed the pipes. */
static void sink(stream s[2]) {
  if (s[0].fd < 0 && s[1].fd < 0) return;
  pid_t pid = fork();
  if (pid == 0) {
    char buf[16384];
    setpgid(0, 0);
    for (int k = 0; k < 2; k++) if (s[k].fd >= 0) fcntl(s[k].fd, F_SETFL, 0);
    for (int k = 0; k < 2; k++)
      while (s[k].fd >= 0 && (read(s[k].fd, buf, sizeof buf) > 0 || errno == EINTR)) {}
    _exit(0);
  }
  if (pid > 0) setpgid(pid, pid);  /* both sides: the handler's group dies with it */
  for (int k = 0; k < 2; k++) if (s[k].fd >= 0) { close(s[k].fd); s[k].fd = -1; }
}

void ag_exec_serve(const ag_fs *fs, json_t *req, ag_conn *c) {
  exec_opts o;
  int out[2] = { -1, -1 }, err[2] = { -1, -1 };
  run r;
  ag_err e;
  memset(&r, 0, sizeof r);
  r.pidfd = -1;
  if (exec_args(req, &o, &e) < 0 || ag_exec_prep_files(fs, req, &e) < 0) goto fail;
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) { ag_sysfail(&e, "pipe"); goto fail; }
  if ((r.pid = spawn(fs, &o, out, err, &e)) < 0) goto fail;
  close(out[1]); close(err[1]);
  out[1] = err[1] = -1;
  if ((r.pidfd = (int)syscall(SYS_pidfd_open, r.pid, 0)) < 0) {
    ag_sysfail(&e, "pidfd_open");
    ag_exec_kill_leader(r.pid);
    waitpid(r.pid, NULL, 0);
    goto fail;
  }
  r.s[0] = (stream){ out[0], "stdout", 0, { { 0 }, 0 }, { 0 } };
  r.s[1] = (stream){ err[0], "stderr", 0, { { 0 }, 0 }, { 0 } };
  out[0] = err[0] = -1;
  for (int k = 0; k < 2; k++) fcntl(r.s[k].fd, F_SETFL, O_NONBLOCK);
  supervise(&r, c, &o, o.timeout ? ag_now() + (double)o.timeout : 1e300);
  if (!r.exited) { ag_exec_kill_leader(r.pid); waitpid(r.pid, &r.status, 0); }
  for (int k = 0; k < 2; k++) {
    if (r.s[k].fd >= 0 && (!o.background || r.gone)) { close(r.s[k].fd); r.s[k].fd = -1; }
    finish_stream(&r.s[k], c, &o);
  }
  close(r.pidfd);
  if (!r.gone) {
    json_t *res = json_pack("{s:i, s:s%, s:s%, s:b, s:b}", "exit_code", r.timed_out ? -9 : ag_exit_code(r.status),
                            "stdout", r.s[0].text.p ? r.s[0].text.p : "", r.s[0].text.len,
                            "stderr", r.s[1].text.p ? r.s[1].text.p : "", r.s[1].text.len,
                            "timed_out", r.timed_out, "output_truncated", r.truncated);
    if (res && o.streaming) json_object_set_new(res, "stream_chunks", json_integer((json_int_t)c->chunks));
    ag_conn_final_ok(c, res);
    ag_conn_flush_wait(c, 30000);
  }
  sink(r.s);
  ag_buf_free(&r.s[0].text);
  ag_buf_free(&r.s[1].text);
  return;
fail:
  for (int k = 0; k < 2; k++) { if (out[k] >= 0) close(out[k]); if (err[k] >= 0) close(err[k]); }
  ag_conn_final_err(c, &e);
  ag_conn_flush_wait(c, 30000);
}
