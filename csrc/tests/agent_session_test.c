/*
** unsandboxd-agent runtime, PTY sessions: sync and async commands,
** session_wait, input to `read`, session_kill and restarts, the 16-session
** limit, unknown sessions, markers that cannot be forged, timeouts that do
** not kill, streamed chunks, the output cap, client disconnects (exec
** killed, wait abandoned), the idle and wall caps (shortened through the
** environment), and bad arguments.
*/
#include <sched.h>

#include "tests/tap.h"
#include "tests/agent_util.h"

static char *root;
static agent_rt A;

static long read_pid(const char *rel) { return read_pid_in(root, rel); }

static json_t *call(agent_rt *a, const char *req, rt_reply *r) {
  *r = rt_call_raw(a, req, strlen(req), -1, 150);
  json_t *res = rt_result(r);
  if (!res) printf("# %.120s -> %s\n", req, rt_error(r));
  return res;
}

static void fails(agent_rt *a, const char *req, const char *kind, const char *part) {
  rt_reply r = rt_call(a, req);
  const char *err = rt_error(&r);
  ok(!strncmp(err, kind, strlen(kind)) && strstr(err, part), "%.100s -> %s", req, err);
  rt_free(&r);
}

static int is_null(json_t *o, const char *k) { return json_is_null(json_object_get(o, k)); }
static int is_true(json_t *o, const char *k) { return json_is_true(json_object_get(o, k)); }
static int is_false(json_t *o, const char *k) { return json_is_false(json_object_get(o, k)); }

static void test_sync_and_state(void) {
  rt_reply r;
  json_t *res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo hi; tty; cd src; v=42; (exit 3)\"}", &r);
  const char *out = res ? rs(res, "stdout") : "";
  ok(res && !strncmp(out, "hi\n/dev/pts/", 12) && ri(res, "exit_code") == 3 && is_false(res, "running") &&
     !strcmp(rs(res, "action"), "session_exec") && !strcmp(rs(res, "session_id"), "main") && !strcmp(rs(res, "stderr"), "") &&
     is_false(res, "timed_out") && is_false(res, "wait_timed_out") && is_false(res, "output_truncated") &&
     is_false(res, "session_restarted") && json_object_size(res) == 10, "a sync command on a real terminal (%s)", out);
  rt_free(&r);
  char want[600];
  snprintf(want, sizeof want, "%s/src 42\n", root);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo $(pwd) $v\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), want) && ri(res, "exit_code") == 0, "cwd and variables persist between commands");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"(exit 9) | head -1\"}", &r);
  ok(res && ri(res, "exit_code") == 9, "a session's shell has pipefail, as exec has");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"if then\"}", &r);
  ok(res && ri(res, "exit_code") == 2 && strstr(rs(res, "stdout"), "syntax error"), "a syntax error is status 2, the session goes on");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo \\\"it's\\\" 'quoted'\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "it's quoted\n"), "quotes in the command survive");
  rt_free(&r);
}

static void test_async_wait_input(void) {
  rt_reply r;
  json_t *res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo start; sleep 0.8; echo done\",\"async\":true}", &r);
  ok(res && is_true(res, "running") && is_null(res, "exit_code") && is_false(res, "timed_out") &&
     r.final_s >= 0.15 && !strcmp(rs(res, "stdout"), "start\n"),
     "async returns after about 0.2 s, before the command ends (%.2f s)", r.final_s);
  rt_free(&r);
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"true\"}", "invalid", "is still running a command");
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":10}", &r);
  ok(res && is_false(res, "running") && ri(res, "exit_code") == 0 && !strcmp(rs(res, "stdout"), "done\n") &&
     !strcmp(rs(res, "action"), "session_wait"), "session_wait collects the rest");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":30}", &r);
  ok(res && ri(res, "exit_code") == 0 && !is_true(res, "wait_timed_out") && r.final_s < 30 && !strcmp(rs(res, "stdout"), ""),
     "waiting with nothing running answers at once, not at its timeout (%.2f s)", r.final_s);
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"read -p 'name? ' n; echo hello $n\",\"async\":true}", &r);
  ok(res && is_true(res, "running"), "read waits for input");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"bob\"}", &r);
  ok(res && ri(res, "exit_code") == 0 && strstr(rs(res, "stdout"), "hello bob\n") && !strstr(rs(res, "stdout"), "bob\nhello"),
     "session_input feeds read through the terminal, not echoed (%s)", res ? rs(res, "stdout") : "");
  rt_free(&r);
  fails(&A, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"x\"}", "invalid", "has no running command");
  if (access("/usr/bin/python3", X_OK) == 0) {
    /* Readiness, not time: the interpreter says "ready" once it reads its
    ** prompt, and an answer that comes after the input call's quiet period
    ** is collected by the waits that follow. */
    char seen[4096] = "";
    res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"python3 -q -i -c 'print(\\\"rea\\\" \\\"dy\\\")'\",\"async\":true}", &r);
    if (res) snprintf(seen, sizeof seen, "%s", rs(res, "stdout"));
    rt_free(&r);
    for (int i = 0; i < 60 && !strstr(seen, "ready"); i++) {
      res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":1}", &r);
      if (res) snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s", rs(res, "stdout"));
      rt_free(&r);
    }
    seen[0] = 0;
    int running = 0;
    res = call(&A, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"print(6*7)\"}", &r);
    if (res) { snprintf(seen, sizeof seen, "%s", rs(res, "stdout")); running = is_true(res, "running"); }
    rt_free(&r);
    for (int i = 0; i < 60 && running && !strstr(seen, "42"); i++) {
      res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":1}", &r);
      if (res) { snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s", rs(res, "stdout")); running = is_true(res, "running"); }
      rt_free(&r);
    }
    ok(strstr(seen, "42") && running, "python3 -i answers through session_input and keeps running (%.60s)", seen);
    res = call(&A, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"raise SystemExit(6)\"}", &r);
    ok(res && ri(res, "exit_code") == 6 && is_false(res, "running"), "and ends with its own status");
    rt_free(&r);
  }
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"sleep 2; echo late\",\"timeout_seconds\":1}", &r);
  ok(res && is_true(res, "wait_timed_out") && is_false(res, "timed_out") && is_true(res, "running") &&
     is_null(res, "exit_code"), "a sync timeout does not kill the command, and says wait_timed_out");
  rt_free(&r);
  /* the first wait may or may not see the end; together they see it once */
  char got[64] = "";
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":1}", &r);
  int waited_out = res && (is_true(res, "wait_timed_out") || ri(res, "exit_code") == 0);
  if (res) snprintf(got, sizeof got, "%s", rs(res, "stdout"));
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":5}", &r);
  if (res) snprintf(got + strlen(got), sizeof got - strlen(got), "%s", rs(res, "stdout"));
  ok(waited_out && res && ri(res, "exit_code") == 0 && !strcmp(got, "late\n"), "session_wait gets it later");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"sleep 5\",\"async\":true}", &r);
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":1}", &r);
  ok(res && is_true(res, "wait_timed_out") && is_true(res, "running") && is_false(res, "timed_out") && r.final_s >= 0.9,
     "session_wait that runs out says wait_timed_out");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_kill\",\"session_id\":\"main\"}", &r);
  ok(res && ri(res, "exit_code") == -9, "and session_kill stops it");
  rt_free(&r);
}

static void test_kill_restart(void) {
  rt_reply r;
  json_t *res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo $$ > shell.pid; v=1; sleep 100 & echo $! > bg.pid; wait\",\"async\":true}", &r);
  rt_free(&r);
  long shell = read_pid("shell.pid"), bg = read_pid("bg.pid");
  res = call(&A, "{\"op\":\"session_kill\",\"session_id\":\"main\"}", &r);
  ok(res && ri(res, "exit_code") == -9 && is_false(res, "running") && is_true(res, "session_restarted") &&
     !strcmp(rs(res, "action"), "session_kill"), "session_kill: exit_code -9 and a fresh shell");
  rt_free(&r);
  ok(shell > 0 && bg > 0 && gone_within(shell, 10) && gone_within(bg, 10), "the old shell and its children are gone");
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo [$v]\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "[]\n") && is_false(res, "session_restarted"), "the new shell is fresh");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo bye; exit 4\"}", &r);
  ok(res && ri(res, "exit_code") == 4 && !strcmp(rs(res, "stdout"), "bye\n") && is_false(res, "running"), "exit ends the shell with its status");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo back\"}", &r);
  ok(res && is_true(res, "session_restarted") && !strcmp(rs(res, "stdout"), "back\n"), "the next exec restarts it: session_restarted");
  rt_free(&r);
}

/* A kill restarts the shell (a fork whose child then calls setsid); a
** second kill that comes before the child has run finds no process group
** of that id yet. The agent must still kill the new shell, not wait for it
** for ever. Both kills are sent before either is answered, with the agent
** on one CPU, so the second one meets the fresh child as often as it can. */
static void test_kill_right_after_restart(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  sched_setaffinity(A.pid, sizeof one, &one);
  int answered = 0, rounds = 40;
  for (int i = 0; i < rounds; i++) {
    static const char kill_req[] = "{\"op\":\"session_kill\",\"session_id\":\"main\"}\n";
    int fd[2] = { rt_open(&A, -1), rt_open(&A, -1) };
    int both = 1;
    for (int k = 0; k < 2; k++)
      if (fd[k] < 0 || write(fd[k], kill_req, sizeof kill_req - 1) != (ssize_t)(sizeof kill_req - 1)) both = 0;
    for (int k = 0; k < 2; k++) {
      char buf[4096];
      size_t nleft = 0;
      json_t *f = fd[k] >= 0 ? rt_frame(fd[k], 30, buf, sizeof buf, &nleft) : NULL;
      if (!f || !json_is_true(json_object_get(f, "ok"))) both = 0;
      json_decref(f);
      if (fd[k] >= 0) close(fd[k]);
    }
    if (!both) break;
    answered++;
  }
  ok(answered == rounds, "two kills in a row, %d times: every one answered (%d)", rounds, answered);
  rt_reply r;
  ok(rt_ok(&A, "{\"op\":\"ping\"}", &r) != NULL, "the agent still answers a ping");
  rt_free(&r);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++) CPU_SET(c, &one);
  sched_setaffinity(A.pid, sizeof one, &one);
}

static void test_markers_and_output(void) {
  rt_reply r;
  /* a look-alike of the marker, with a plausible status, then the real end */
  json_t *res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"printf '__unsb_0123456789abcdef0123456789abcdef:0;'; sleep 0.3; echo x; exit_code=5; (exit 5)\"}", &r);
  ok(res && ri(res, "exit_code") == 5 && !strcmp(rs(res, "stdout"), "__unsb_0123456789abcdef0123456789abcdef:0;x\n"),
     "a forged marker is plain output and ends nothing (%s)", res ? rs(res, "stdout") : "");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"printf '__uns'; sleep 0.3; printf 'b_'\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "__unsb_") && ri(res, "exit_code") == 0, "a held-back prefix is released");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"head -c 200000 /dev/zero | tr '\\\\0' a; echo\"}", &r);
  ok(res && json_string_length(json_object_get(res, "stdout")) == 64000 && is_true(res, "output_truncated") && ri(res, "exit_code") == 0,
     "output capped at 64 000 bytes per call");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"echo a; sleep 1; echo b\",\"stream\":true}", &r);
  ok(res && json_array_size(r.events) == 2 && ri(res, "stream_chunks") == 2 && r.final_s >= 1 && r.final_s - r.first_event_s >= 0.5 &&
     !strcmp(rs(json_array_get(r.events, 0), "data"), "a\n") && !strcmp(rs(json_array_get(r.events, 0), "channel"), "stdout"),
     "streamed chunks arrive while the command runs (%.2f s, %.2f s)", r.first_event_s, r.final_s);
  rt_free(&r);
}

static void test_disconnects(void) {
  rt_reply r;
  char buf[65536];
  size_t n = 0;
  int fd = rt_open(&A, -1);
  const char *req = "{\"op\":\"session_exec\",\"session_id\":\"dis\",\"command\":\"echo $$ > dis.pid; sleep 100\"}\n";
  ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "a long session_exec is sent");
  long pid = -1;
  for (double end = now_s() + 5; now_s() < end && (pid = read_pid("dis.pid")) <= 0;) t_sleep_ms(20);
  close(fd);
  ok(pid > 0 && gone_within(pid, 10), "closing its socket kills the shell");
  json_t *res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"dis\",\"command\":\"echo ok\"}", &r);
  ok(res && is_true(res, "session_restarted"), "the next exec restarts it");
  rt_free(&r);
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"dis\",\"command\":\"sleep 1; echo survived\",\"async\":true}", &r);
  rt_free(&r);
  fd = rt_open(&A, -1);
  req = "{\"op\":\"session_wait\",\"session_id\":\"dis\",\"timeout_seconds\":30}\n";
  ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "a session_wait is sent");
  t_sleep_ms(200);
  fails(&A, "{\"op\":\"session_wait\",\"session_id\":\"dis\"}", "invalid", "is already serving another call");
  close(fd);
  t_sleep_ms(100);
  res = call(&A, "{\"op\":\"session_wait\",\"session_id\":\"dis\",\"timeout_seconds\":5}", &r);
  ok(res && ri(res, "exit_code") == 0 && !strcmp(rs(res, "stdout"), "survived\n"), "an abandoned wait leaves the command running");
  rt_free(&r);
  /* kill preempts an attached wait */
  res = call(&A, "{\"op\":\"session_exec\",\"session_id\":\"dis\",\"command\":\"sleep 100\",\"async\":true}", &r);
  rt_free(&r);
  fd = rt_open(&A, -1);
  req = "{\"op\":\"session_wait\",\"session_id\":\"dis\",\"timeout_seconds\":30}\n";
  ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "another session_wait is sent");
  t_sleep_ms(200);
  res = call(&A, "{\"op\":\"session_kill\",\"session_id\":\"dis\"}", &r);
  rt_free(&r);
  json_t *f = rt_frame(fd, 5, buf, sizeof buf, &n);
  ok(f && ri(json_object_get(f, "result"), "exit_code") == -9 && is_false(json_object_get(f, "result"), "running"),
     "session_kill answers the attached wait with exit_code -9");
  json_decref(f);
  close(fd);
}

static void test_limits_and_bad_input(void) {
  rt_reply r;
  char req[200];
  int made = 0;
  for (int i = 0; i < 20; i++) {
    snprintf(req, sizeof req, "{\"op\":\"session_exec\",\"session_id\":\"s%d\",\"command\":\"true\"}", i);
    r = rt_call(&A, req);
    if (rt_result(&r)) made++;
    else if (made + 2 == 16) { /* main and dis exist already */ }
    if (!rt_result(&r)) {
      ok(!strcmp(rt_error(&r), "busy: all PTY sessions are busy"), "session %d: %s", i + 3, rt_error(&r));
      rt_free(&r);
      break;
    }
    rt_free(&r);
  }
  ok(made == 14, "16 sessions at most (%d made beside the 2 open ones)", made);
  fails(&A, "{\"op\":\"session_wait\",\"session_id\":\"ghost\"}", "invalid", "shell session 'ghost' does not exist; call exec first");
  fails(&A, "{\"op\":\"session_input\",\"session_id\":\"ghost\",\"input\":\"x\"}", "invalid", "does not exist; call exec first");
  fails(&A, "{\"op\":\"session_kill\",\"session_id\":\"ghost\"}", "invalid", "does not exist; call exec first");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"-bad\",\"command\":\"x\"}", "invalid", "argument 'session_id' must match");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"a/b\",\"command\":\"x\"}", "invalid", "must match");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"command\":\"x\"}", "invalid", "must match");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":5,\"command\":\"x\"}", "invalid", "argument 'session_id' must be a string");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\"}", "invalid", "missing argument 'command'");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"x\",\"timeout_seconds\":31}", "invalid", "between 1 and 30");
  fails(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":121}", "invalid", "between 1 and 120");
  fails(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"command\":\"x\"}", "invalid", "unknown argument 'command'");
  fails(&A, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"x\",\"append_newline\":\"no\"}", "invalid", "argument 'append_newline' must be a boolean");
  fails(&A, "{\"op\":\"session_kill\",\"session_id\":\"main\",\"timeout_seconds\":3}", "invalid", "unknown argument 'timeout_seconds'");
  fails(&A, "{\"op\":\"session_exec\",\"session_id\":\"main\",\"command\":\"x\",\"async\":\"yes\"}", "invalid", "argument 'async' must be a boolean");
  char *big = malloc(9000 + 100);
  int k = snprintf(big, 100, "{\"op\":\"session_input\",\"session_id\":\"main\",\"input\":\"");
  memset(big + k, 'x', 8193);
  strcpy(big + k + 8193, "\"}");
  fails(&A, big, "invalid", "more than 8192");
  free(big);
  r = rt_call(&A, "{\"op\":\"session_wait\",\"session_id\":\"main\",\"timeout_seconds\":120}");
  ok(rt_result(&r) != NULL, "a wait of 120 s is allowed");
  rt_free(&r);
}

static void test_idle_and_wall(void) {
  char *env[] = { "UNSANDBOXD_AGENT_SESSION_IDLE_SECONDS=1", "UNSANDBOXD_AGENT_SESSION_WALL_SECONDS=3", NULL };
  agent_rt b = rt_start(root, env);
  rt_reply r;
  json_t *res = call(&b, "{\"op\":\"session_exec\",\"session_id\":\"idle\",\"command\":\"echo $$ > idle.pid\"}", &r);
  rt_free(&r);
  long pid = read_pid("idle.pid");
  ok(pid > 0 && gone_within(pid, 15), "an idle session is closed and its shell killed");
  fails(&b, "{\"op\":\"session_wait\",\"session_id\":\"idle\"}", "invalid", "does not exist");
  res = call(&b, "{\"op\":\"session_exec\",\"session_id\":\"wall\",\"command\":\"sleep 100\",\"async\":true}", &r);
  rt_free(&r);
  res = call(&b, "{\"op\":\"session_wait\",\"session_id\":\"wall\",\"timeout_seconds\":10}", &r);
  ok(res && ri(res, "exit_code") == -9 && is_true(res, "timed_out") && is_false(res, "running") && r.final_s < 10,
     "the wall cap ends a session that runs too long (%.2f s)", r.final_s);
  rt_free(&r);
  fails(&b, "{\"op\":\"session_wait\",\"session_id\":\"wall\"}", "invalid", "does not exist");
  ok(rt_stop(&b) == 0, "the second agent stops");
}

int main(void) {
  agent_locate();
  root = mk_tmp("session");
  char *src;
  if (asprintf(&src, "%s/src", root) < 0) return 1;
  mkdir(src, 0755);
  free(src);
  A = rt_start(root, NULL);
  test_sync_and_state();
  test_async_wait_input();
  test_kill_restart();
  test_kill_right_after_restart();
  test_markers_and_output();
  test_disconnects();
  test_limits_and_bad_input();
  ok(rt_stop(&A) == 0, "EOF on the control socket stops the agent and its sessions");
  test_idle_and_wall();
  rm_tree(root);
  free(root);
  return tap_done();
}
