/*
** Runtimes (runtime/runtime.h) end to end with real processes: bubblewrap
** sandboxes on real volumes running bin/unsandboxd-agent, through the
** same runner as every other run. Start and readiness, calls (ping, exec,
** file ops, a checkpoint through a data fd, streamed exec, cancel),
** the registry's rules (one live runtime per workspace, capacity, bad
** arguments), concurrency and timeouts. TTLs, broken agents and the proof
** that nothing outlives a runtime are in server_runtime_life_test.c;
** lying agents in server_runtime_proto_test.c. Must run as root.
*/
#include <stdatomic.h>
#include <sys/stat.h>

#include "tests/runtime_util.h"

static ux_runtimes *registry(int max_live) {
  ux_rt_config c;
  memset(&c, 0, sizeof c);
  c.max_live = max_live;
  c.agent_path = rt_agent;
  c.on_end = rt_on_end;
  ux_runtimes *rts = ux_runtimes_new(&c);
  if (!rts) { printf("Bail out! ux_runtimes_new\n"); exit(1); }
  return rts;
}

/* Starts sb on a new volume and waits until it runs: its handle, or NULL. */
static ux_rt *running(ux_runtimes *rts, const char *sb, const char *ws) {
  char vol[PATH_MAX], err[300];
  rt_volume(ws, vol, sizeof vol);
  if (ux_runtimes_start(rts, sb, ws, vol, "default", err, sizeof err) != 0) {
    ok(0, "start %s: %s", sb, err);
    return NULL;
  }
  int st = ux_runtimes_wait_ready(rts, sb, 30000);
  ux_rt_info info;
  ux_runtimes_info(rts, sb, &info);
  if (st != UX_RT_RUNNING) printf("#   %s: status %d: %s\n", sb, st, info.why);
  return st == UX_RT_RUNNING ? ux_runtimes_get(rts, sb) : NULL;
}

/* ---------------------------------------------------------------------
** Start, info, simple calls
** ------------------------------------------------------------------- */

static void test_start(ux_runtimes *rts) {
  char vol[PATH_MAX], err[300];
  rt_volume("ws-start", vol, sizeof vol);
  long t0 = ux_now_ms();
  ok(ux_runtimes_start(rts, "sb-start", "ws-start", vol, NULL, err, sizeof err) == 0,
     "start returns at once (%ld ms)", ux_now_ms() - t0);
  ux_rt_info info;
  ok(ux_runtimes_info(rts, "sb-start", &info) == 0 &&
     (info.status == UX_RT_PENDING || info.status == UX_RT_RUNNING) &&
     !strcmp(info.ws_id, "ws-start") && !strcmp(info.template_id, "default"),
     "info: pending (or already running), workspace and template (status %d)", info.status);
  ok(ux_runtimes_get(rts, "sb-nope") == NULL, "no handle for an unknown runtime");
  int st = ux_runtimes_wait_ready(rts, "sb-start", 30000);
  ok(st == UX_RT_RUNNING, "running once its agent answers (%ld ms)", ux_now_ms() - t0);
  if (st != UX_RT_RUNNING) { ux_runtimes_info(rts, "sb-start", &info); printf("#   %s\n", info.why); return; }
  ux_runtimes_info(rts, "sb-start", &info);
  long now = ux_now();
  ok(info.created_at <= now && info.created_at > now - 60 && info.expires_at == info.created_at + 43200 &&
     info.idle_expires_at >= now + 1790 && info.idle_expires_at <= now + 1801,
     "times: created now, hard TTL 43200 s, idle TTL 1800 s");
  char sb[32] = "";
  ok(ux_runtimes_of_workspace(rts, "ws-start", sb) == 0 && !strcmp(sb, "sb-start") &&
     ux_runtimes_of_workspace(rts, "ws-other", sb) == -1, "the workspace's live runtime");
  const char *wss[] = { "ws-start", "ws-other", NULL };
  ok(ux_runtimes_count(rts, wss, 3) == 1 && ux_runtimes_count(rts, wss + 1, 1) == 0,
     "counted among its workspace's runtimes");

  ux_rt *rt = ux_runtimes_get(rts, "sb-start");
  json_t *res = NULL;
  ok(rt && rt_do(rt, "ping", NULL, 10000, &res, err, sizeof err) == UX_RTC_OK &&
     json_integer_value(json_object_get(res, "uid")) == 1000 &&
     json_integer_value(json_object_get(res, "pid")) > 1, "ping: the agent answers as uid 1000");
  json_decref(res);
  int code = -1;
  char *out = rt ? rt_exec(rt, "echo hi; pwd; id -u; echo $PATH; exit 3", &code) : NULL;
  ok(out && !strcmp(out, "hi\n/workspace\n1000\n/usr/local/bin:/usr/bin:/bin\n") && code == 3,
     "exec: runs in /workspace as uid 1000 with PATH, exit code kept");
  if (!out || code != 3) printf("#   got %d: %s\n", code, out ? out : "-");
  free(out);
  out = rt ? rt_exec(rt, "ping -c1 -W1 127.0.0.1 >/dev/null 2>&1 && echo net; "
                         "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", &code) : NULL;
  ok(out && !strcmp(out, "lo\n"), "no network: a loopback device only");
  free(out);
  ux_rt_put(rt);
  ok(ux_runtimes_release(rts, "sb-start") == 0 && ux_runtimes_info(rts, "sb-start", &info) == -1 &&
     ux_runtimes_release(rts, "sb-start") == -1, "release forgets it");
  ok(rt_ended("sb-start", NULL) == 0, "no on_end for a release");
}

static void test_files(ux_runtimes *rts) {
  ux_rt *rt = running(rts, "sb-files", "ws-files");
  if (!rt) return;
  char err[600];
  json_t *res = NULL;
  ok(rt_do(rt, "file_write", "{\"path\":\"src/a.txt\",\"content\":\"one\\ntwo\\n\"}", 10000, &res,
           err, sizeof err) == UX_RTC_OK && json_integer_value(json_object_get(res, "bytes")) == 8,
     "file_write creates parents");
  json_decref(res);
  ok(rt_do(rt, "file_read", "{\"path\":\"src/a.txt\"}", 10000, &res, err, sizeof err) == UX_RTC_OK &&
     !strcmp(json_string_value(json_object_get(res, "content")) ?: "", "one\ntwo\n"), "file_read");
  json_decref(res);
  ok(rt_do(rt, "file_edit", "{\"path\":\"src/a.txt\",\"old\":\"two\",\"new\":\"2\"}", 10000, &res,
           err, sizeof err) == UX_RTC_OK, "file_edit");
  json_decref(res);
  ok(rt_do(rt, "file_list", "{\"path\":\"src\"}", 10000, &res, err, sizeof err) == UX_RTC_OK &&
     json_array_size(json_object_get(res, "entries")) == 1, "file_list");
  json_decref(res);
  ok(rt_do(rt, "file_grep", "{\"path\":\".\",\"pattern\":\"2\",\"mode\":\"count\"}", 10000, &res, err,
           sizeof err) == UX_RTC_OK && json_integer_value(json_object_get(res, "match_count")) == 1,
     "file_grep");
  json_decref(res);
  int rc = rt_do(rt, "file_read", "{\"path\":\"../etc/passwd\"}", 10000, &res, err, sizeof err);
  ok(rc == UX_RTC_INVALID && strstr(err, "path '../etc/passwd'") && !res,
     "an escaping path: INVALID with the agent's message (%s)", err);
  rc = rt_do(rt, "file_read", "{\"path\":\"nope.txt\"}", 10000, &res, err, sizeof err);
  ok(rc == UX_RTC_INVALID && strstr(err, "nope.txt"), "a missing file: INVALID (%s)", err);
  rc = rt_do(rt, "no_such_op", NULL, 10000, &res, err, sizeof err);
  ok(rc == UX_RTC_INVALID, "an unknown op: INVALID (%s)", err);
  json_t *arr = json_array();
  ok(ux_rt_call(rt, arr, 0, 1000, NULL, NULL, &res, err, sizeof err) == UX_RTC_INVALID && !res,
     "a request that is not an object is refused before sending");
  json_decref(arr);
  /* a request over the frame limit is refused before sending */
  size_t big = 9u << 20;
  char *s = malloc(big + 1);
  if (s) {
    memset(s, 'a', big);
    s[big] = '\0';
    json_t *req = json_pack("{s:s, s:s, s:s}", "op", "file_write", "path", "big", "content", s);
    ok(req && ux_rt_call(rt, req, 0, 10000, NULL, NULL, &res, err, sizeof err) == UX_RTC_INVALID &&
       strstr(err, "too large"), "a 9 MiB request: INVALID, too large (%s)", err);
    json_decref(req);
    free(s);
  }
  ux_rt_put(rt);
  ux_runtimes_release(rts, "sb-files");
}

/* A data fd: a checkpoint writes its archive to a file of ours. */
static void test_data_fd(ux_runtimes *rts) {
  ux_rt *rt = running(rts, "sb-data", "ws-data");
  if (!rt) return;
  char path[PATH_MAX + 16], err[300];
  json_t *res = NULL;
  int rc = rt_do(rt, "file_write", "{\"path\":\"a.txt\",\"content\":\"x\"}", 10000, &res, err, sizeof err);
  json_decref(res);
  snprintf(path, sizeof path, "%s/cp.tgz", rt_data);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  json_t *req = json_pack("{s:s}", "op", "checkpoint");
  unsigned char magic[2] = { 0, 0 };
  rc = fd >= 0 && rc == UX_RTC_OK ? ux_rt_call(rt, req, fd, 30000, NULL, NULL, &res, err, sizeof err) : -1;
  ok(rc == UX_RTC_OK && json_integer_value(json_object_get(res, "files")) == 1 &&
     pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b,
     "checkpoint with a data fd: a gzip archive of the workspace (%s)", rc ? err : "ok");
  json_decref(res);
  json_decref(req);
  if (fd >= 0) { close(fd); unlink(path); }
  ux_rt_put(rt);
  ux_runtimes_release(rts, "sb-data");
}

/* ---------------------------------------------------------------------
** Streaming and cancel
** ------------------------------------------------------------------- */

typedef struct {
  long t0, first_ms, nulls;
  int events, cancel_after;
  char text[256];
} stream_log;

static int on_event(void *ctx, const json_t *ev) {
  stream_log *l = ctx;
  if (!ev) { l->nulls++; return 0; }
  if (l->events++ == 0) l->first_ms = ux_now_ms() - l->t0;
  const char *d = json_string_value(json_object_get(ev, "data"));
  strncat(l->text, d ? d : "", sizeof l->text - strlen(l->text) - 1);
  return l->cancel_after && l->events >= l->cancel_after;
}

/* Processes named `comm` inside the runtime, counted by another exec. */
static int count_inside(ux_rt *rt, const char *comm) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "n=0; for f in /proc/[0-9]*/comm; do read c < $f 2>/dev/null && "
           "[ \"$c\" = %s ] && n=$((n+1)); done; echo $n", comm);
  char *out = rt_exec(rt, cmd, NULL);
  int n = out ? atoi(out) : -1;
  free(out);
  return n;
}

static void test_stream(ux_runtimes *rts) {
  ux_rt *rt = running(rts, "sb-stream", "ws-stream");
  if (!rt) return;
  char err[300];
  json_t *res = NULL;
  stream_log l = { .t0 = ux_now_ms() };
  json_t *req = json_pack("{s:s, s:s, s:b}", "op", "exec", "command", "echo a; sleep 1.5; echo b >&2",
                          "stream", 1);
  int rc = ux_rt_call(rt, req, 0, 20000, on_event, &l, &res, err, sizeof err);
  long total = ux_now_ms() - l.t0;
  ok(rc == UX_RTC_OK && l.events == 2 && !strcmp(l.text, "a\nb\n") &&
     json_integer_value(json_object_get(res, "stream_chunks")) == 2,
     "streamed exec: two chunk events, then the result (%d events)", l.events);
  ok(l.first_ms >= 0 && total - l.first_ms >= 1000 && total >= 1400,
     "the first event arrives while the command still runs (%ld ms of %ld)", l.first_ms, total);
  ok(l.nulls >= 4, "on_event(NULL) ticks while nothing arrives (%ld ticks)", l.nulls);
  json_decref(res);
  json_decref(req);

  stream_log c = { .t0 = ux_now_ms(), .cancel_after = 1 };
  req = json_pack("{s:s, s:s, s:b}", "op", "exec", "command", "echo go; exec sleep 25", "stream", 1);
  rc = ux_rt_call(rt, req, 0, 20000, on_event, &c, &res, err, sizeof err);
  ok(rc == UX_RTC_CANCELLED && !res && ux_now_ms() - c.t0 < 5000, "on_event cancels (%d: %s)", rc, err);
  json_decref(req);
  int left = -1;
  for (int i = 0; i < 50 && (left = count_inside(rt, "sleep")) != 0; i++) t_sleep_ms(100);
  ok(left == 0, "the cancelled command was killed (%d sleep left)", left);

  long t0 = ux_now_ms();
  req = json_pack("{s:s, s:s}", "op", "exec", "command", "exec sleep 20");
  rc = ux_rt_call(rt, req, 0, 1500, NULL, NULL, &res, err, sizeof err);
  long took = ux_now_ms() - t0;
  ok(rc == UX_RTC_TIMEOUT && took >= 1400 && took < 15000 && strstr(err, "1500 ms"),
     "a request timeout: TIMEOUT after 1.5 s (%ld ms: %s)", took, err);
  json_decref(req);
  for (int i = 0; i < 50 && (left = count_inside(rt, "sleep")) != 0; i++) t_sleep_ms(100);
  ok(left == 0, "the timed-out command was killed (%d sleep left)", left);
  char *out = rt_exec(rt, "echo still", NULL);
  ok(out && !strcmp(out, "still\n"), "the runtime still serves");
  free(out);
  ux_rt_put(rt);
  ux_runtimes_release(rts, "sb-stream");
}

/* ---------------------------------------------------------------------
** Registry rules and bad arguments
** ------------------------------------------------------------------- */

static void test_rules(void) {
  ux_runtimes *rts = registry(2);
  char vol[PATH_MAX], vol2[PATH_MAX], vol3[PATH_MAX], err[300];
  rt_volume("ws-r1", vol, sizeof vol);
  rt_volume("ws-r2", vol2, sizeof vol2);
  rt_volume("ws-r3", vol3, sizeof vol3);
  ok(ux_runtimes_start(rts, "sb-r1", "ws-r1", vol, "default", err, sizeof err) == 0, "first runtime");
  int rc = ux_runtimes_start(rts, "sb-r1b", "ws-r1", vol, "default", err, sizeof err);
  ok(rc == -3 && strstr(err, "sb-r1"), "a second live runtime of one workspace: -3 (%s)", err);
  rc = ux_runtimes_start(rts, "sb-r1", "ws-r2", vol2, "default", err, sizeof err);
  ok(rc == -1 && strstr(err, "exists"), "a taken runtime id: -1 (%s)", err);
  ok(ux_runtimes_start(rts, "sb-r2", "ws-r2", vol2, "default", err, sizeof err) == 0, "second runtime");
  rc = ux_runtimes_start(rts, "sb-r3", "ws-r3", vol3, "default", err, sizeof err);
  ok(rc == -2 && strstr(err, "2 runtimes"), "past max_live: -2 (%s)", err);
  ux_runtimes_release(rts, "sb-r2");
  ok(ux_runtimes_start(rts, "sb-r3", "ws-r3", vol3, "default", err, sizeof err) == 0,
     "a released runtime frees its place");
  ux_runtimes_release(rts, "sb-r1");
  ok(ux_runtimes_start(rts, "sb-r1b", "ws-r1", vol, "default", err, sizeof err) == 0 &&
     ux_runtimes_wait_ready(rts, "sb-r1b", 30000) == UX_RT_RUNNING,
     "after a release the workspace can run again");

  struct { const char *sb, *ws, *vol, *tpl, *why; } bad[] = {
    { "../x", "ws-b", vol3, "default", "bad runtime" }, { "", "ws-b", vol3, "default", "bad" },
    { "sb-b", "ws/b", vol3, "default", "bad" }, { NULL, "ws-b", vol3, "default", "bad" },
    { "sb-b", "ws-b", vol3, "bad template!", "bad" },
    { "sb-0123456789abcdef0123456789abcdef", "ws-b", vol3, "default", "bad" },
    { "sb-b", "ws-b", "relative/vol", "default", "absolute" },
    { "sb-b", "ws-b", NULL, "default", "absolute" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    rc = ux_runtimes_start(rts, bad[i].sb, bad[i].ws, bad[i].vol, bad[i].tpl, err, sizeof err);
    ok(rc == -1 && strstr(err, bad[i].why), "refused: sb '%s' ws '%s' vol '%s': %s",
       bad[i].sb ? bad[i].sb : "(null)", bad[i].ws, bad[i].vol ? bad[i].vol : "(null)", err);
  }
  ux_runtimes_release(rts, "sb-r3");
  char missing[PATH_MAX + 16];
  snprintf(missing, sizeof missing, "%s/no-such-volume", rt_data);
  rc = ux_runtimes_start(rts, "sb-b", "ws-b", missing, "default", err, sizeof err);
  ok(rc == -1 && strstr(err, "no-such-volume"), "a missing volume: -1 (%s)", err);
  ux_rt_info info;
  char sb[32];
  ok(ux_runtimes_info(rts, "sb-b", &info) == -1 && ux_runtimes_wait_ready(rts, "sb-b", 100) == 0 &&
     ux_runtimes_release(rts, "sb-b") == -1 && ux_runtimes_of_workspace(rts, "ws-b", sb) == -1 &&
     !ux_runtimes_get(rts, NULL) && ux_runtimes_info(rts, NULL, &info) == -1,
     "a refused start leaves nothing; unknown ids are unknown");
  ux_runtimes_touch(rts, "sb-unknown");
  ux_runtimes_free(rts);
  ok(rt_ended("sb-r1b", NULL) == 1 && rt_ended("sb-r3", NULL) == 0,
     "free: every live runtime ended, on_end called once each");
  rt_end e;
  ok(rt_ended("sb-r1b", &e) && e.status == UX_RT_RELEASED && strstr(e.why, "shutting down"),
     "free: released, 'shutting down' (%s)", e.why);
  ok(rt_sandbox_procs() <= 0, "free: no sandbox process left (%d)", rt_sandbox_procs());
}

/* ---------------------------------------------------------------------
** Concurrency
** ------------------------------------------------------------------- */

typedef struct { ux_rt *rt; int id, good; } worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int i = 0; i < 5; i++) {
    char cmd[100], want[100], args[200], err[300];
    snprintf(cmd, sizeof cmd, "echo %d-%d", w->id, i);
    snprintf(want, sizeof want, "%d-%d\n", w->id, i);
    char *out = rt_exec(w->rt, cmd, NULL);
    w->good += out && !strcmp(out, want);
    free(out);
    json_t *res = NULL;
    snprintf(args, sizeof args, "{\"path\":\"t/%d\",\"content\":\"%d\"}", w->id, i);
    w->good += rt_do(w->rt, "file_write", args, 20000, &res, err, sizeof err) == UX_RTC_OK;
    json_decref(res);
  }
  return NULL;
}

static void test_concurrent(ux_runtimes *rts) {
  ux_rt *rt = running(rts, "sb-conc", "ws-conc");
  if (!rt) return;
  enum { N = 8 };
  pthread_t t[N];
  worker w[N];
  long t0 = ux_now_ms();
  for (int i = 0; i < N; i++) {
    w[i] = (worker){ rt, i, 0 };
    if (pthread_create(&t[i], NULL, work, &w[i]) != 0) { ok(0, "pthread_create"); return; }
  }
  int good = 0;
  for (int i = 0; i < N; i++) { pthread_join(t[i], NULL); good += w[i].good; }
  ok(good == N * 10, "8 threads x 10 calls on one runtime: all right (%d of %d, %ld ms)",
     good, N * 10, ux_now_ms() - t0);
  ux_rt_put(rt);
  ux_runtimes_release(rts, "sb-conc");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (rt_setup("rttest")) return 0;
  ux_runtimes *rts = registry(8);
  test_start(rts);
  test_files(rts);
  test_data_fd(rts);
  test_stream(rts);
  test_concurrent(rts);
  ux_runtimes_free(rts);
  test_rules();
  ok(rt_sandbox_procs() <= 0, "no sandbox process is left (%d)", rt_sandbox_procs());
  rt_teardown();
  return tap_done();
}
