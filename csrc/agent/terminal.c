/*
** The terminal op (terminal.h).
*/
#include "agent/terminal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/exec.h"
#include "agent/exec_prep.h"

#define ARGV_MAX 32
#define HANGUP_GRACE_S 1.0

typedef struct {
  const char *argv[ARGV_MAX + 1];
  long long cols, rows;
} term_args;

static int parse(json_t *req, term_args *a, ag_err *e) {
  static const char *const keys[] = { "argv", "cols", "rows", "env", NULL };
  json_t *v = json_object_get(req, "argv"), *w;
  size_t i;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_int(req, "cols", 80, 1, 1000, &a->cols, e) < 0 ||
      ag_arg_int(req, "rows", 24, 1, 1000, &a->rows, e) < 0)
    return -1;
  if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > ARGV_MAX)
    return ag_fail(e, AG_INVALID, "argument 'argv' must be an array of 1 to %d strings", ARGV_MAX);
  json_array_foreach(v, i, w) {
    if (!json_is_string(w) || strlen(json_string_value(w)) != json_string_length(w) ||
        !json_string_length(w) || json_string_length(w) > 4096)
      return ag_fail(e, AG_INVALID, "argument 'argv' item %zu must be a non-empty string without NUL", i);
    a->argv[i] = json_string_value(w);
  }
  a->argv[json_array_size(v)] = NULL;
  if (json_object_get(req, "files")) return ag_fail(e, AG_INVALID, "unknown argument 'files'");
  return ag_exec_prep_check(req, e);
}

static void child(const ag_fs *fs, json_t *req, const term_args *a, const char *pts) {
  setsid();
  int s = open(pts, O_RDWR);
  if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0 || dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0 ||
      fchdir(fs->root) < 0)
    _exit(126);
  if (s > 2) close(s);
  ag_exec_child_signals();
  ag_exec_prep_env(req);
  execvp(a->argv[0], (char *const *)a->argv);
  _exit(127);
}

/* Sends fd over the unix socket sock (one byte and SCM_RIGHTS). */
static int send_fd(int sock, int fd) {
  char cbuf[CMSG_SPACE(sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = { (char[]){ 't' }, 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
  struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  ssize_t n;
  while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
  return n == 1 ? 0 : -1;
}

/* Starts the program on a new PTY and hands the master over. The child's
** pid, or -1 with e. */
static pid_t start(const ag_fs *fs, json_t *req, const term_args *a, int datafd, ag_err *e) {
  char pts[128];
  struct winsize ws = { (unsigned short)a->rows, (unsigned short)a->cols, 0, 0 };
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0) return ag_sysfail(e, "posix_openpt");
  if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, pts, sizeof pts) != 0 ||
      ioctl(m, TIOCSWINSZ, &ws) < 0) {
    close(m);
    return ag_sysfail(e, "pseudo-terminal");
  }
  pid_t pid = fork();
  if (pid < 0) { close(m); return ag_sysfail(e, "fork"); }
  if (pid == 0) child(fs, req, a, pts);
  int sent = send_fd(datafd, m);
  close(m);
  if (sent < 0) {
    ag_exec_kill_leader(pid);
    waitpid(pid, NULL, 0);
    return ag_sysfail(e, "handing the terminal over");
  }
  return pid;
}

/* SIGHUP (and SIGCONT, for a stopped job) to every process of the
** terminal's session: what a hangup does to the jobs of a shell. */
static void hup_session(pid_t sid) {
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d))) {
    char path[64], buf[512];
    long pid = strtol(de->d_name, NULL, 10);
    if (pid <= 1) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    int ppid, pgrp, session;
    char state;
    if (p && sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) == 4 && session == sid) {
      kill((pid_t)pid, SIGHUP);
      kill((pid_t)pid, SIGCONT);
    }
  }
  if (d) closedir(d);
}

/* Hangs the terminal up: SIGHUP to its session (a nohup'd job ignores
** it, a setsid'd one is not in it), then SIGKILL to what stays in the
** program's own group. */
static void hang_up(pid_t pid, int pidfd) {
  hup_session(pid);
  struct pollfd p = { pidfd, POLLIN, 0 };
  if (poll(&p, 1, (int)(HANGUP_GRACE_S * 1000)) <= 0) ag_exec_kill_leader(pid);
  waitpid(pid, NULL, 0);
  kill(-pid, SIGKILL);
}

void ag_terminal_serve(const ag_fs *fs, json_t *req, int datafd, ag_conn *c) {
  term_args a;
  ag_err e;
  pid_t pid = -1;
  int pidfd = -1, status = 0;
  if (parse(req, &a, &e) < 0 || (pid = start(fs, req, &a, datafd, &e)) < 0) goto fail;
  close(datafd);
  if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
    ag_sysfail(&e, "pidfd_open");
    ag_exec_kill_leader(pid);
    waitpid(pid, NULL, 0);
    goto fail;
  }
  for (;;) {
    struct pollfd p[2] = { { c->fd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[0].revents) ag_conn_watch(c);
    if (c->peer_gone) { hang_up(pid, pidfd); close(pidfd); return; }
    if (p[1].revents) break;
  }
  waitpid(pid, &status, 0);
  close(pidfd);
  ag_conn_final_ok(c, json_pack("{s:i}", "exit_code", ag_exit_code(status)));
  ag_conn_flush_wait(c, 30000);
  return;
fail:
  ag_conn_final_err(c, &e);
  ag_conn_flush_wait(c, 30000);
}
