/*
** unsandboxd-agent runtime, the ops of living sessions and services:
** a background exec leaves what its command started running (and what
** those write later is drained, so they neither block nor die of
** SIGPIPE), follow waits for the pipes and streams all along, env and
** files come with the command, collect:false streams without keeping,
** bad arguments; and the terminal op: the PTY's master handed back over
** the data socket, exit status, resize, a detach that hangs the terminal
** up while nohup'd processes live on.
*/
#include "tests/tap.h"
#include "tests/agent_util.h"

#include <sys/ioctl.h>
#include <termios.h>

static char *root;
static agent_rt A;

static long read_pid(const char *rel) { return read_pid_in(root, rel); }

static void test_background(void) {
  rt_reply r;
  double t0 = now_s();
  json_t *res = rt_ok(&A, "{\"op\":\"exec\",\"background\":true,\"command\":\"echo before; "
                     "(while :; do echo tick; sleep 0.05; done) & echo $! > bg.pid; echo after\"}", &r);
  ok(res && !strncmp(rs(res, "stdout"), "before\n", 7) && strstr(rs(res, "stdout"), "after\n") &&
     ri(res, "exit_code") == 0,
     "a background exec answers when bash exits (%s)", res ? rs(res, "stdout") : "");
  ok(now_s() - t0 < 20, "without waiting for what it left behind");
  rt_free(&r);
  long bg = read_pid("bg.pid");
  usleep(300000);
  ok(bg > 0 && proc_alive(bg), "the process it started lives on, writing to its old stdout");
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"echo next\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "next\n"), "the next command's output is its own");
  rt_free(&r);
  kill((pid_t)bg, SIGKILL);
  ok(gone_within(bg, 5), "the writer is gone once killed");
}

static void test_follow_env_files(void) {
  rt_reply r;
  json_t *res = rt_ok(&A, "{\"op\":\"exec\",\"background\":true,\"follow\":true,\"stream\":true,\"collect\":false,"
                     "\"timeout_seconds\":0,\"env\":{\"GREETING\":\"hi\"},"
                     "\"files\":[{\"path\":\"boot/run.sh\",\"content_base64\":\"ZWNobyAiJEdSRUVUSU5HIiBmcm9tIHNjcmlwdAo=\",\"mode\":493}],"
                     "\"command\":\"./boot/run.sh; (sleep 0.3; echo daemon) &\"}", &r);
  char all[256] = "";
  size_t i;
  json_t *ev;
  json_array_foreach(r.events, i, ev)
    if (strlen(all) + strlen(rs(ev, "data")) < sizeof all) strcat(all, rs(ev, "data"));
  ok(res && !strcmp(rs(res, "stdout"), "") && !strcmp(all, "hi from script\ndaemon\n"),
     "follow streams until every writer closed the pipes; env and an executable file came along (%s)", all);
  rt_free(&r);
  char *p;
  if (asprintf(&p, "%s/boot/run.sh", root) < 0) exit(1);
  struct stat st;
  ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0755, "the file's mode is the one sent (%o)", st.st_mode & 0777);
  free(p);
  res = rt_ok(&A, "{\"op\":\"exec\",\"background\":true,\"stream\":true,\"collect\":false,\"output_max\":5,"
             "\"command\":\"echo 0123456789\"}", &r);
  all[0] = '\0';
  json_array_foreach(r.events, i, ev) strncat(all, rs(ev, "data"), sizeof all - strlen(all) - 1);
  ok(res && !strcmp(all, "01234") && json_is_true(json_object_get(res, "output_truncated")),
     "output_max bounds what is streamed (%s)", all);
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"background\":true,\"timeout_seconds\":1,\"command\":\"sleep 0.2 & sleep 30\"}", &r);
  ok(res && json_is_true(json_object_get(res, "timed_out")) && ri(res, "exit_code") == -9,
     "a background exec's timeout kills its command");
  rt_free(&r);
}

static void test_bad_args(void) {
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"follow\":true}", "need 'background'");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"env\":{\"A\":\"b\"}}", "need 'background'");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"timeout_seconds\":86401}", "between 0 and 86400");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"collect\":false}", "needs 'stream'");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"env\":{\"1A\":\"b\"}}", "bad variable name");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"env\":{\"A\":7}}", "must be a string");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"env\":[]}", "'env' must be an object");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"files\":{}}", "'files' must be an array");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"files\":[{\"path\":\"a\"}]}", "item 0 must be");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"files\":[{\"path\":\"../a\",\"content_base64\":\"\"}]}",
        "bad path");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"files\":[{\"path\":\"a\",\"content_base64\":\"\","
        "\"mode\":4095}]}", "mode must be");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"background\":true,\"files\":[{\"path\":\"a\",\"content_base64\":\"%%\"}]}",
        "not base64");
}

/* A terminal request; the master comes back on *master. */
static int terminal_open(const char *req, int *master) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  int fd = rt_open(&A, sv[1]);
  close(sv[1]);
  if (fd < 0 || write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1) return -1;
  char byte, cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = { &byte, 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
  struct pollfd p = { sv[0], POLLIN, 0 };
  *master = -1;
  if (poll(&p, 1, 10000) == 1 && recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC) == 1) {
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_type == SCM_RIGHTS) memcpy(master, CMSG_DATA(c), sizeof(int));
  }
  close(sv[0]);
  return fd;
}

/* Reads the master until `want` shows up (or 10 s). */
static int read_until(int m, const char *want) {
  char buf[8192];
  size_t n = 0;
  for (double end = now_s() + 10; now_s() < end;) {
    struct pollfd p = { m, POLLIN, 0 };
    if (poll(&p, 1, 200) == 1) {
      ssize_t k = read(m, buf + n, sizeof buf - 1 - n);
      if (k <= 0) return 0;
      n += (size_t)k;
      buf[n] = '\0';
      if (strstr(buf, want)) return 1;
      if (n > sizeof buf / 2) { memmove(buf, buf + n / 2, n - n / 2); n -= n / 2; }
    }
  }
  return 0;
}

/* 1 when pid runs `sleep` (its cmdline's first word). */
static int runs_sleep(long pid) {
  char path[64], buf[64] = "";
  snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  return n > 0 && !strcmp(buf, "sleep");
}

static void test_terminal(void) {
  int m;
  int fd = terminal_open("{\"op\":\"terminal\",\"argv\":[\"bash\",\"--norc\",\"--noprofile\",\"-i\"],"
                         "\"cols\":100,\"rows\":30,\"env\":{\"TERM\":\"xterm-256color\",\"PS1\":\"$ \"}}", &m);
  ok(fd >= 0 && m >= 0, "the terminal's master comes back over the data socket");
  struct winsize ws;
  ok(m >= 0 && ioctl(m, TIOCGWINSZ, &ws) == 0 && ws.ws_col == 100 && ws.ws_row == 30, "at the size asked for");
  const char *line = "echo T=$TERM; tty >/dev/null && echo has-tty\n";
  ok(write(m, line, strlen(line)) > 0 && read_until(m, "has-tty"), "a shell answers on it, with a terminal");
  line = "nohup sleep 100 >/dev/null 2>&1 & echo $! > nohup.pid; sleep 200 & echo $! > job.pid; "
         "echo $$ > shell.pid; exec sleep 300\n";
  ok(write(m, line, strlen(line)) > 0, "a nohup'd job and a plain one are started, then a foreground program");
  long kept = -1, plain = -1;
  for (double end = now_s() + 10; now_s() < end && (kept <= 0 || plain <= 0); usleep(20000)) {
    kept = read_pid("nohup.pid");
    plain = read_pid("shell.pid");
  }
  long job = read_pid("job.pid");
  /* nohup ignores SIGHUP once it runs: wait until it has become the sleep */
  for (double end = now_s() + 10; now_s() < end && !runs_sleep(kept); usleep(20000)) {}
  close(fd);                                       /* the client detaches */
  ok(plain > 0 && gone_within(plain, 5), "a detach hangs the terminal up: its program ends");
  ok(job > 0 && gone_within(job, 5), "and so does a plain background job of its shell");
  ok(kept > 0 && proc_alive(kept), "a nohup'd one lives on");
  kill((pid_t)kept, SIGKILL);
  close(m);
  fd = terminal_open("{\"op\":\"terminal\",\"argv\":[\"sh\",\"-c\",\"exit 7\"]}", &m);
  char buf[4096];
  size_t n = 0;
  json_t *f = fd >= 0 ? rt_frame(fd, 10, buf, sizeof buf, &n) : NULL;
  ok(f && ri(json_object_get(f, "result"), "exit_code") == 7, "the program's exit status is the answer");
  json_decref(f);
  if (m >= 0) close(m);
  close(fd);
  fd = terminal_open("{\"op\":\"terminal\",\"argv\":[\"/nonexistent/x\"]}", &m);
  n = 0;
  f = fd >= 0 ? rt_frame(fd, 10, buf, sizeof buf, &n) : NULL;
  ok(f && ri(json_object_get(f, "result"), "exit_code") == 127, "a program not found exits 127");
  json_decref(f);
  if (m >= 0) close(m);
  close(fd);
  rt_refused(&A, "{\"op\":\"terminal\",\"argv\":[]}", "needs a data fd");
  rt_reply r = rt_call_raw(&A, "{\"op\":\"terminal\",\"argv\":[]}", 27, 0, 10);
  ok(strstr(rt_error(&r), "argument 'argv' must be an array"), "an empty argv is refused (%s)", rt_error(&r));
  rt_free(&r);
  const char *big = "{\"op\":\"terminal\",\"argv\":[\"sh\"],\"cols\":0}";
  r = rt_call_raw(&A, big, strlen(big), 0, 10);
  ok(strstr(rt_error(&r), "between 1 and 1000"), "a size out of range is refused (%s)", rt_error(&r));
  rt_free(&r);
}

int main(void) {
  agent_locate();
  root = mk_tmp("living");
  A = rt_start(root, NULL);
  test_background();
  test_follow_env_files();
  test_bad_args();
  test_terminal();
  rt_stop(&A);
  rm_tree(root);
  free(root);
  return tap_done();
}
