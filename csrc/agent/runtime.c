/*
** The runtime's scheduler.
**
** One event loop (poll) in the main process owns the control socket, the
** request connections whose frame is still arriving, and (sessions.c) the
** PTY sessions, which are state shared by many requests. Every other
** request (ping, file ops, exec, checkpoint, restore) is stateless: once
** its frame is read, a handler process is forked for it, in its own
** process group, and the loop goes on, so a slow grep or a 30 s exec never
** delays another request. A fork per request costs well under a
** millisecond here and gives each request its own memory, its own
** failures and a kill switch (its process group).
**
** SIGCHLD and SIGTERM arrive through a signalfd. EOF on the control socket
** (the server is gone) or SIGTERM: every handler gets SIGTERM (an exec
** handler kills its command's group on it), then every handler's process
** group and every session's shell SIGKILL, then the agent exits.
*/
#include "agent/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/conn.h"
#include "agent/exec.h"
#include "agent/files.h"
#include "agent/procs.h"
#include "agent/sessions.h"
#include "agent/terminal.h"
#include "agent/tree.h"
#include "agent/walk.h"

#define MAX_PENDING 64        /* connections whose request is being read */
#define MAX_HANDLERS 64       /* forked handlers running at once */
#define READ_SECONDS 30.0     /* to deliver a request frame */
#define FINAL_FLUSH_MS 30000  /* for a handler to hand over its final frame */

typedef struct {
  ag_conn c;
  int datafd;
  double deadline;
} pending;

static struct {
  ag_fs fs;
  int control, sigfd, stop;
  pending *pend[MAX_PENDING];
  size_t npend;
  pid_t handler[MAX_HANDLERS];
  size_t nhandlers;
} rt;

/* OP_FILE_OR_FD: a file op whose content travels either in its frame or,
** when the server sends a data fd, through that fd (the routes' big
** bodies, which would cost an encoding and a parse of megabytes each way) */
enum { OP_FILE, OP_FILE_FD, OP_FILE_OR_FD, OP_PING, OP_EXEC, OP_CHECKPOINT, OP_RESTORE, OP_TERMINAL };

static const struct {
  const char *name;
  int kind;
  ag_file_fn fn;
  ag_file_fd_fn fd_fn;            /* OP_FILE_FD, OP_FILE_OR_FD */
} ops[] = {
  { "ping", OP_PING, NULL, NULL },
  { "file_list", OP_FILE, ag_op_file_list, NULL },
  { "file_read", OP_FILE, ag_op_file_read, NULL },
  { "file_read_binary", OP_FILE_OR_FD, NULL, ag_op_file_read_binary },
  { "file_glob", OP_FILE, ag_op_file_glob, NULL },
  { "file_grep", OP_FILE, ag_op_file_grep, NULL },
  { "file_write", OP_FILE, ag_op_file_write, NULL },
  { "file_write_binary", OP_FILE_OR_FD, NULL, ag_op_file_write_binary },
  { "file_edit", OP_FILE, ag_op_file_edit, NULL },
  { "file_read_fd", OP_FILE_FD, NULL, ag_op_file_read_fd },
  { "file_write_fd", OP_FILE_FD, NULL, ag_op_file_write_fd },
  { "exec", OP_EXEC, NULL, NULL },
  { "checkpoint", OP_CHECKPOINT, NULL, NULL },
  { "restore", OP_RESTORE, NULL, NULL },
  { "terminal", OP_TERMINAL, NULL, NULL },
};

static void drop_pending(size_t i) {
  pending *p = rt.pend[i];
  ag_conn_close(&p->c);
  if (p->datafd >= 0) close(p->datafd);
  free(p);
  rt.pend[i] = rt.pend[--rt.npend];
}

/* A final error frame from the loop itself: tiny, into a fresh socket, so
** one non-blocking write is enough; if it is not, the server hears EOF. */
static void answer_error(ag_conn *c, const ag_err *e) {
  ag_conn_final_err(c, e);
  ag_conn_flush(c);
}

/* What a handler process does; it never returns. */
static void handler(pending *p, json_t *req, size_t op) {
  json_t *result = NULL;
  static const char *const no_keys[] = { NULL };
  ag_err e;
  int rc = -1;
  switch (ops[op].kind) {
  case OP_PING:
    rc = ag_args_only(req, no_keys, &e);
    /* procs: what runs besides the agent (a service is up while any does) */
    if (rc == 0) result = json_pack("{s:i, s:i, s:I}", "pid", (int)getppid(), "uid", (int)getuid(),
                                    "procs", (json_int_t)ag_procs_count(rt.handler, rt.nhandlers));
    if (rc == 0 && !result) rc = ag_fail(&e, AG_INTERNAL, "out of memory");
    break;
  case OP_FILE: rc = ops[op].fn(&rt.fs, req, &result, &e); break;
  case OP_FILE_FD:
  case OP_FILE_OR_FD: rc = ops[op].fd_fn(&rt.fs, req, p->datafd, &result, &e); break;
  case OP_CHECKPOINT: rc = ag_op_checkpoint(&rt.fs, req, p->datafd, &result, &e); break;
  case OP_RESTORE: rc = ag_op_restore(&rt.fs, req, p->datafd, &result, &e); break;
  case OP_EXEC: ag_exec_serve(&rt.fs, req, &p->c); _exit(0);
  case OP_TERMINAL: ag_terminal_serve(&rt.fs, req, p->datafd, &p->c); _exit(0);
  }
  if (rc == 0) ag_conn_final_ok(&p->c, result);
  else ag_conn_final_err(&p->c, &e);
  ag_conn_flush_wait(&p->c, FINAL_FLUSH_MS);
  _exit(0);
}

/* In a new child: forget everything of the loop but this request. */
static void child_setup(pending *mine) {
  sigset_t none;
  setpgid(0, 0);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGTERM, SIG_DFL);
  close(rt.control);
  close(rt.sigfd);
  for (size_t i = 0; i < rt.npend; i++)
    if (rt.pend[i] != mine) {
      close(rt.pend[i]->c.fd);
      if (rt.pend[i]->datafd >= 0) close(rt.pend[i]->datafd);
    }
  ag_sessions_close_fds();
}

/* The index of op `name` in ops[], or -1. */
static long op_index(const char *name) {
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i].name, name)) return (long)i;
  return -1;
}

static int takes_data_fd(int kind) {
  return kind == OP_CHECKPOINT || kind == OP_RESTORE || kind == OP_FILE_FD || kind == OP_TERMINAL;
}

/* A request frame has arrived on pend[i]: hand it to sessions or fork. */
static void dispatch(size_t i, json_t *req) {
  pending *p = rt.pend[i];
  const char *op = json_string_value(json_object_get(req, "op"));
  ag_err e;
  long op_i;
  pid_t pid;
  if (!op) {
    ag_fail(&e, AG_INVALID, json_object_get(req, "op") ? "argument 'op' must be a string" : "missing argument 'op'");
  } else if (ag_sessions_is_op(op)) {
    if (p->datafd >= 0) ag_fail(&e, AG_INVALID, "op '%s' takes no data fd", op);
    else {
      ag_sessions_request(&p->c, req);   /* takes the connection and req */
      drop_pending(i);
      return;
    }
  } else if ((op_i = op_index(op)) < 0) {
    char s[AG_SHOW_MAX];
    ag_fail(&e, AG_INVALID, "unknown op '%s'", ag_show(op, s, sizeof s));
  } else if (ops[op_i].kind != OP_FILE_OR_FD && takes_data_fd(ops[op_i].kind) != (p->datafd >= 0)) {
    ag_fail(&e, AG_INVALID, p->datafd >= 0 ? "op '%s' takes no data fd" : "op '%s' needs a data fd", op);
  } else if (rt.nhandlers >= MAX_HANDLERS) {
    ag_fail(&e, AG_BUSY, "too many requests in flight (%d)", MAX_HANDLERS);
  } else if ((pid = fork()) < 0) {
    ag_sysfail(&e, "fork");
  } else if (pid == 0) {
    child_setup(p);
    handler(p, req, (size_t)op_i);
  } else {
    setpgid(pid, pid);     /* both sides: no window where a kill misses it */
    rt.handler[rt.nhandlers++] = pid;
    json_decref(req);
    drop_pending(i);
    return;
  }
  answer_error(&p->c, &e);
  json_decref(req);
  drop_pending(i);
}

/* One control message: a request socket, maybe a data fd. */
static int on_control(void) {
  char byte[16], cbuf[CMSG_SPACE(4 * sizeof(int))];
  struct iovec iov = { byte, sizeof byte };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
  int fds[4], nfds = 0;
  ssize_t n = recvmsg(rt.control, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0) return (errno == EINTR || errno == EAGAIN) ? 0 : -1;
  if (n == 0) return -1;                              /* the server is gone */
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nfds < 4; k++)
        memcpy(&fds[nfds++], CMSG_DATA(c) + k * sizeof(int), sizeof(int));
  if (nfds < 1 || nfds > 2 || (m.msg_flags & MSG_CTRUNC) || rt.npend >= MAX_PENDING) {
    fprintf(stderr, "unsandboxd-agent: runtime: control message with %d fds dropped\n", nfds);
    for (int k = 0; k < nfds; k++) close(fds[k]);
    return 0;
  }
  pending *p = calloc(1, sizeof *p);
  if (!p) { for (int k = 0; k < nfds; k++) close(fds[k]); return 0; }
  ag_conn_init(&p->c, fds[0]);
  p->datafd = nfds == 2 ? fds[1] : -1;
  p->deadline = ag_now() + READ_SECONDS;
  rt.pend[rt.npend++] = p;
  return 0;
}

static void on_readable(size_t i) {
  json_t *req = NULL;
  ag_err e;
  int r = ag_conn_read_request(&rt.pend[i]->c, &req, &e);
  if (r == 1) dispatch(i, req);
  else if (r == -1) { answer_error(&rt.pend[i]->c, &e); drop_pending(i); }
  else if (r == -2) drop_pending(i);
}

static void reap(void) {
  struct signalfd_siginfo si;
  int status;
  pid_t pid;
  while (read(rt.sigfd, &si, sizeof si) == sizeof si)
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) rt.stop = 1;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    size_t k;
    for (k = 0; k < rt.nhandlers && rt.handler[k] != pid; k++) {}
    if (k < rt.nhandlers) {
      kill(-pid, SIGKILL);      /* anything the handler left in its group */
      rt.handler[k] = rt.handler[--rt.nhandlers];
    } else {
      ag_sessions_child(pid, status);
    }
  }
}

/* Handlers first get SIGTERM (an exec handler then kills its command's
** group), then their own groups get SIGKILL. */
static void shutdown_all(void) {
  for (size_t k = 0; k < rt.nhandlers; k++) kill(rt.handler[k], SIGTERM);
  for (double end = ag_now() + 1; rt.nhandlers > 0 && ag_now() < end;) {
    pid_t pid = waitpid(-1, NULL, WNOHANG);
    size_t k;
    if (pid <= 0) { usleep(5000); continue; }
    for (k = 0; k < rt.nhandlers && rt.handler[k] != pid; k++) {}
    if (k < rt.nhandlers) rt.handler[k] = rt.handler[--rt.nhandlers];
  }
  for (size_t k = 0; k < rt.nhandlers; k++) kill(-rt.handler[k], SIGKILL);
  ag_sessions_shutdown();
  while (rt.npend) drop_pending(rt.npend - 1);
  /* bounded: SIGKILLed processes die at once */
  for (double end = ag_now() + 5; ag_now() < end;) {
    pid_t pid = waitpid(-1, NULL, WNOHANG);
    if (pid < 0) break;
    if (pid == 0) usleep(10000);
  }
}

static int setup(const char *root, int control_fd) {
  sigset_t set;
  ag_err e;
  rt.control = control_fd;
  if (ag_fs_open(&rt.fs, root, &e) < 0) {
    fprintf(stderr, "unsandboxd-agent: runtime: %s\n", e.msg);
    return -1;
  }
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
      (rt.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
    fprintf(stderr, "unsandboxd-agent: runtime: signalfd: %s\n", strerror(errno));
    return -1;
  }
  if (fcntl(control_fd, F_SETFD, FD_CLOEXEC) < 0) {
    fprintf(stderr, "unsandboxd-agent: runtime: control fd %d: %s\n", control_fd, strerror(errno));
    return -1;
  }
  return ag_sessions_init(&rt.fs);
}

int ag_runtime_main(const char *root, int control_fd) {
  if (setup(root, control_fd) < 0) return 1;
  while (!rt.stop) {
    struct pollfd pf[2 + MAX_PENDING + AG_SESSIONS_POLLFDS];
    size_t n = 0, npend;
    double now = ag_now(), next = ag_sessions_next_deadline(now);
    pf[n++] = (struct pollfd){ rt.control, POLLIN, 0 };
    pf[n++] = (struct pollfd){ rt.sigfd, POLLIN, 0 };
    for (size_t i = 0; i < rt.npend; i++) {
      pf[n++] = (struct pollfd){ rt.pend[i]->c.fd, POLLIN, 0 };
      if (rt.pend[i]->deadline < next) next = rt.pend[i]->deadline;
    }
    npend = rt.npend;
    size_t sess_at = n;
    n += ag_sessions_fill(pf + n, AG_SESSIONS_POLLFDS);
    int wait_ms = next <= now ? 0 : next - now > 60 ? 60000 : (int)((next - now) * 1000) + 1;
    if (poll(pf, n, wait_ms) < 0 && errno != EINTR) break;
    if (pf[1].revents) reap();
    if (rt.stop) break;
    /* sessions first: a new request below may add or kill sessions, which
    ** would move what the session pollfds point at */
    ag_sessions_after_poll(pf + sess_at, n - sess_at, ag_now());
    /* pending i was polled at pf[2 + i]; going down, a drop only moves an
    ** entry that was already handled (or is new) into place i */
    for (size_t i = npend; i-- > 0;)
      if (i < rt.npend && pf[2 + i].revents) on_readable(i);
    if (pf[0].revents && on_control() < 0) break;
    now = ag_now();
    for (size_t i = rt.npend; i-- > 0;)
      if (rt.pend[i]->deadline <= now) {
        ag_err e;
        ag_fail(&e, AG_INVALID, "no request frame within %.0f s", READ_SECONDS);
        answer_error(&rt.pend[i]->c, &e);
        drop_pending(i);
      }
  }
  shutdown_all();
  return 0;
}
