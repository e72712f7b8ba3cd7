/*
** unsandboxd-agent runtime, op exec: output, exit codes, pipefail, cwd and
** stdin, the output cap, timeouts that kill the whole process group and
** leave no process, chunk events that arrive while the command still runs,
** UTF-8 split across reads, a client disconnect killing the command,
** requests running side by side, and bad arguments.
*/
#include "tests/tap.h"
#include "tests/agent_util.h"

static char *root;
static agent_rt A;

static long read_pid(const char *rel) { return read_pid_in(root, rel); }

static void test_basics(void) {
  rt_reply r;
  json_t *res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"echo out; echo err >&2; exit 3\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "out\n") && !strcmp(rs(res, "stderr"), "err\n") && ri(res, "exit_code") == 3 &&
     json_is_false(json_object_get(res, "timed_out")) && json_is_false(json_object_get(res, "output_truncated")) &&
     !json_object_get(res, "stream_chunks") && json_object_size(res) == 5, "stdout, stderr, exit code, nothing else");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"false | true\"}", &r);
  ok(res && ri(res, "exit_code") == 1, "pipefail is on");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"pwd; cat; echo \\\"[$BASH_ENV]\\\"; shopt -q login_shell || echo nologin\"}", &r);
  char want[600];
  snprintf(want, sizeof want, "%s\n[]\nnologin\n", root);
  ok(res && !strcmp(rs(res, "stdout"), want), "cwd is the root, stdin is /dev/null (%s)", res ? rs(res, "stdout") : "");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"kill -SEGV $$\"}", &r);
  ok(res && ri(res, "exit_code") == -11, "bash killed by a signal reports -signal (%lld)", res ? ri(res, "exit_code") : 0);
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"\"}", &r);
  ok(res && ri(res, "exit_code") == 0, "an empty command runs");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"printf 'a\\\\377b\\\\303'; printf '\\\\000z' >&2\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "a\xef\xbf\xbd" "b\xef\xbf\xbd") && json_string_length(json_object_get(res, "stderr")) == 2,
     "invalid UTF-8 becomes U+FFFD, a NUL byte survives");
  rt_free(&r);
}

static void test_cap_and_timeout(void) {
  rt_reply r;
  double t0 = now_s();
  json_t *res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"head -c 5000000 /dev/zero | tr '\\\\0' a; echo done >&2\"}", &r);
  ok(res && json_string_length(json_object_get(res, "stdout")) == 64000 && json_is_true(json_object_get(res, "output_truncated")) &&
     !strcmp(rs(res, "stderr"), "done\n") && ri(res, "exit_code") == 0 && now_s() - t0 < 20,
     "stdout capped at 64 000 bytes, the program is drained to its end");
  rt_free(&r);
  /* 3-byte characters across the cap: only whole characters are kept */
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"for i in $(seq 22000); do printf '\\\\342\\\\202\\\\254'; done\"}", &r);
  const char *o = res ? rs(res, "stdout") : "";
  ok(res && strlen(o) == 63999 && ag_utf8_ok(o), "the cap does not cut a character in half (%zu bytes)", strlen(o));
  rt_free(&r);
  t0 = now_s();
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"echo $$ > bash.pid; sleep 100 & echo $! > bg.pid; echo started; wait\",\"timeout_seconds\":1}", &r);
  double took = now_s() - t0;
  ok(res && json_is_true(json_object_get(res, "timed_out")) && ri(res, "exit_code") == -9 && !strcmp(rs(res, "stdout"), "started\n") &&
     took >= 1 && took < 5, "timeout: timed_out, exit_code -9, output kept (%.2f s)", took);
  rt_free(&r);
  ok(gone_within(read_pid("bash.pid"), 3) && gone_within(read_pid("bg.pid"), 3), "the whole process group is gone after a timeout");
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"sleep 100 & echo $! > bg2.pid; echo bye\"}", &r);
  ok(res && ri(res, "exit_code") == 0 && !strcmp(rs(res, "stdout"), "bye\n") && gone_within(read_pid("bg2.pid"), 3),
     "a background process is killed when bash exits: exec leaves nothing behind");
  rt_free(&r);
}

static void test_streaming(void) {
  rt_reply r;
  json_t *res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"echo a; sleep 1; echo b >&2; sleep 0.3; echo c\",\"stream\":true}", &r);
  size_t n = json_array_size(r.events);
  json_t *first = json_array_get(r.events, 0);
  ok(res && n == 3 && ri(res, "stream_chunks") == 3, "three chunk events, counted in stream_chunks (%zu)", n);
  ok(first && !strcmp(rs(first, "event"), "chunk") && !strcmp(rs(first, "channel"), "stdout") && !strcmp(rs(first, "data"), "a\n") &&
     !strcmp(rs(json_array_get(r.events, 1), "channel"), "stderr"), "chunks carry channel and data in order");
  ok(r.first_event_s >= 0 && r.final_s - r.first_event_s >= 0.8 && r.final_s >= 1.2, "the first chunk arrives before the command ends (%.2f s vs %.2f s)",
     r.first_event_s, r.final_s);
  ok(res && !strcmp(rs(res, "stdout"), "a\nc\n") && !strcmp(rs(res, "stderr"), "b\n"), "the final result still has all output");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"printf '\\\\303'; sleep 0.3; printf '\\\\251\\\\n'\",\"stream\":true}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "\xc3\xa9\n") && json_array_size(r.events) == 1 &&
     !strcmp(rs(json_array_get(r.events, 0), "data"), "\xc3\xa9\n"), "a character split across two reads is carried over, not damaged");
  rt_free(&r);
  res = rt_ok(&A, "{\"op\":\"exec\",\"command\":\"true\",\"stream\":true}", &r);
  ok(res && ri(res, "stream_chunks") == 0 && json_array_size(r.events) == 0, "no output, no chunk, stream_chunks 0");
  rt_free(&r);
}

static void test_disconnect_and_concurrency(void) {
  int fd = rt_open(&A, -1);
  const char *req = "{\"op\":\"exec\",\"command\":\"echo $$ > dis.pid; sleep 100 & echo $! > dis-bg.pid; wait\"}\n";
  ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "a long exec is sent");
  long pid = -1;
  for (double end = now_s() + 5; now_s() < end && (pid = read_pid("dis-bg.pid")) <= 0;) t_sleep_ms(20);
  long bash = read_pid("dis.pid");
  ok(pid > 0 && proc_alive(pid), "it runs");
  close(fd);
  ok(gone_within(pid, 3) && gone_within(bash, 3), "closing the request socket kills the command's group");

  /* a slow exec does not hold up a ping: the slow one waits for a file
  ** that is made only after the ping and another exec have answered */
  int slow = rt_open(&A, -1);
  const char *sreq = "{\"op\":\"exec\",\"command\":\"echo $$ > slow.pid;"
                     " until [ -f slow.go ]; do sleep 0.05; done; echo slow\"}\n";
  ok(write(slow, sreq, strlen(sreq)) == (ssize_t)strlen(sreq), "a slow exec is sent");
  for (double end = now_s() + 60; now_s() < end && read_pid("slow.pid") <= 0;) t_sleep_ms(20);
  rt_reply r = rt_call(&A, "{\"op\":\"ping\"}");
  ok(rt_result(&r) && proc_alive(read_pid("slow.pid")), "a ping meanwhile answers, the slow exec still running");
  rt_free(&r);
  r = rt_call(&A, "{\"op\":\"exec\",\"command\":\"echo fast\"}");
  ok(rt_result(&r) && proc_alive(read_pid("slow.pid")), "so does another exec");
  rt_free(&r);
  touch_in(root, "slow.go");
  char buf[65536];
  size_t n = 0;
  json_t *f = rt_frame(slow, 10, buf, sizeof buf, &n);
  ok(f && !strcmp(rs(json_object_get(f, "result"), "stdout"), "slow\n"), "the slow one finishes too");
  json_decref(f);
  close(slow);
}

/* 64 handlers at most: the 65th request at once is busy, not queued. The
** 64 wait for a file made once the 65th has been answered; each says it
** runs by a file of its own (the readiness signal). */
static void test_handler_limit(void) {
  int fds[64], sent = 0;
  const char *req = "{\"op\":\"exec\",\"command\":\"touch held.$$;"
                    " until [ -f held.go ]; do sleep 0.05; done\"}\n";
  for (int i = 0; i < 64; i++) {
    fds[i] = rt_open(&A, -1);
    if (fds[i] >= 0 && write(fds[i], req, strlen(req)) == (ssize_t)strlen(req)) sent++;
  }
  for (double end = now_s() + 120; now_s() < end && count_in(root, "held.") < 64;) t_sleep_ms(20);
  rt_reply r = rt_call(&A, "{\"op\":\"ping\"}");
  touch_in(root, "held.go");
  ok(sent == 64 && !strcmp(rt_error(&r), "busy: too many requests in flight (64)"), "the 65th request in flight is busy (%s)", rt_error(&r));
  rt_free(&r);
  int done = 0;
  for (int i = 0; i < 64; i++) {
    char buf[4096];
    size_t n = 0;
    json_t *f = rt_frame(fds[i], 20, buf, sizeof buf, &n);
    if (f && json_is_true(json_object_get(f, "ok"))) done++;
    json_decref(f);
    close(fds[i]);
  }
  ok(done == 64, "all 64 finish (%d)", done);
  r = rt_call(&A, "{\"op\":\"ping\"}");
  ok(rt_result(&r) != NULL, "and requests are served again");
  rt_free(&r);
}

static void test_bad_args(void) {
  rt_refused(&A, "{\"op\":\"exec\"}", "missing argument 'command'");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":[\"ls\"]}", "argument 'command' must be a string");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"a\\u0000b\"}", "must not contain a NUL byte");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"timeout_seconds\":0}", "argument 'timeout_seconds' must be between 1 and 30");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"timeout_seconds\":31}", "between 1 and 30");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"timeout_seconds\":\"5\"}", "must be an integer");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"stream\":1}", "argument 'stream' must be a boolean");
  rt_refused(&A, "{\"op\":\"exec\",\"command\":\"ls\",\"cwd\":\"/\"}", "unknown argument 'cwd'");
  char *req = malloc(9000);
  strcpy(req, "{\"op\":\"exec\",\"command\":\"");
  size_t at = strlen(req);
  memset(req + at, 'x', 8193);
  strcpy(req + at + 8193, "\"}");
  rt_refused(&A, req, "more than 8192");
  memset(req + at, ' ', 8192);
  strcpy(req + at + 8192, "\"}");
  rt_reply r = rt_call(&A, req);
  ok(rt_result(&r) != NULL, "a command of exactly 8192 bytes runs");
  rt_free(&r);
  free(req);
}

static void test_shutdown_kills(void) {
  int fd = rt_open(&A, -1);
  const char *req = "{\"op\":\"exec\",\"command\":\"sleep 100 & echo $! > end.pid; wait\"}\n";
  ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req), "an exec runs when the server goes away");
  long pid = -1;
  for (double end = now_s() + 5; now_s() < end && (pid = read_pid("end.pid")) <= 0;) t_sleep_ms(20);
  ok(rt_stop(&A) == 0, "EOF on the control socket: the agent exits 0");
  ok(pid > 0 && gone_within(pid, 3), "and the command is killed");
  close(fd);
}

int main(void) {
  agent_locate();
  root = mk_tmp("exec");
  A = rt_start(root, NULL);
  test_basics();
  test_cap_and_timeout();
  test_streaming();
  test_disconnect_and_concurrency();
  test_handler_limit();
  test_bad_args();
  test_shutdown_kills();
  rm_tree(root);
  free(root);
  return tap_done();
}
