/*
** How runtimes end, with real sandboxes and the real agent: idle and hard
** TTLs (shortened), an agent killed or stopped by the code it runs, a
** volume removed under a runtime, release and shutdown with calls in
** flight, on_end re-entering the registry, and after each of them the
** proof that no process of the runtime is left (counted in this test's
** sandbox cgroups). Must run as root.
*/
#include <stdatomic.h>

#include "tests/runtime_util.h"

static ux_runtimes *registry(int idle, int hard, int health, void (*on_end)(void *, const char *, int,
                                                                           const char *)) {
  ux_rt_config c;
  memset(&c, 0, sizeof c);
  c.idle_ttl_s = idle;
  c.hard_ttl_s = hard;
  c.health_interval_s = health;
  c.health_timeout_s = health;
  c.agent_path = rt_agent;
  c.on_end = on_end ? on_end : rt_on_end;
  ux_runtimes *rts = ux_runtimes_new(&c);
  if (!rts) { printf("Bail out! ux_runtimes_new\n"); exit(1); }
  return rts;
}

static int start(ux_runtimes *rts, const char *sb, const char *ws, int new_volume) {
  char vol[PATH_MAX], err[300];
  if (new_volume) rt_volume(ws, vol, sizeof vol);
  else if (ux_path(vol, sizeof vol, "%s/%s", rt_data, ws) < 0) return -1;
  if (ux_runtimes_start(rts, sb, ws, vol, "default", err, sizeof err) != 0) {
    printf("#   start %s: %s\n", sb, err);
    return -1;
  }
  int st = ux_runtimes_wait_ready(rts, sb, 30000);
  if (st != UX_RT_RUNNING) printf("#   %s did not run: %d\n", sb, st);
  return st == UX_RT_RUNNING ? 0 : -1;
}

/* The agent's pid as the sandbox numbers it. */
static long agent_pid(ux_rt *rt) {
  json_t *res = NULL;
  char err[200];
  long pid = rt_do(rt, "ping", NULL, 10000, &res, err, sizeof err) == UX_RTC_OK
             ? (long)json_integer_value(json_object_get(res, "pid")) : -1;
  json_decref(res);
  return pid;
}

static int procs_zero_within(long ms) {
  int n = rt_sandbox_procs();
  for (long end = ux_now_ms() + ms; n > 0 && ux_now_ms() < end; t_sleep_ms(50)) n = rt_sandbox_procs();
  return n;
}

/* ---------------------------------------------------------------------
** TTLs
** ------------------------------------------------------------------- */

typedef struct { ux_rt *rt; char *out; } busy_call;

static void *busy(void *arg) {
  busy_call *b = arg;
  b->out = rt_exec(b->rt, "sleep 3; echo done", NULL);
  return NULL;
}

static void test_idle(void) {
  ux_runtimes *rts = registry(2, 0, 0, NULL);
  if (start(rts, "sb-idle", "ws-idle", 1) || start(rts, "sb-kept", "ws-kept", 1) ||
      start(rts, "sb-busy", "ws-busy", 1)) { ok(0, "idle runtimes start"); ux_runtimes_free(rts); return; }
  ux_rt_info before, after;
  ux_runtimes_info(rts, "sb-kept", &before);
  long t0 = ux_now_ms();
  /* sb-busy: one call longer than the idle TTL, while sb-kept is touched */
  busy_call b = { ux_runtimes_get(rts, "sb-busy"), NULL };
  pthread_t t;
  int threaded = b.rt && pthread_create(&t, NULL, busy, &b) == 0;
  while (ux_now_ms() - t0 < 3500) { ux_runtimes_touch(rts, "sb-kept"); t_sleep_ms(250); }
  if (threaded) pthread_join(t, NULL);
  ok(b.out && !strcmp(b.out, "done\n"), "a call longer than the idle TTL is not cut short");
  free(b.out);
  ux_rt_put(b.rt);
  rt_end e;
  ok(rt_wait_end("sb-idle", 3000, &e) && e.status == UX_RT_RELEASED && strstr(e.why, "idle for 2 s"),
     "an unused runtime is released by the idle TTL (%s)", e.why);
  ok(rt_wait_end("sb-busy", 3000, &e) && e.status == UX_RT_RELEASED,
     "the long call's runtime goes once the call is over and it stays unused");
  ux_runtimes_info(rts, "sb-kept", &after);
  ok(after.status == UX_RT_RUNNING && !rt_ended("sb-kept", NULL) &&
     after.idle_expires_at > before.idle_expires_at, "touching keeps a runtime (idle expiry %ld -> %ld)",
     before.idle_expires_at, after.idle_expires_at);
  ux_rt_info gone;
  ok(ux_runtimes_info(rts, "sb-idle", &gone) == 0 && gone.status == UX_RT_RELEASED &&
     strstr(gone.why, "idle"), "an ended runtime stays visible for a while: released (%s)", gone.why);
  ok(ux_runtimes_get(rts, "sb-idle") == NULL, "no handle on an ended runtime");
  ok(rt_wait_end("sb-kept", 4000, &e), "once no longer touched it is released too");
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
  ux_runtimes_free(rts);
}

static void test_hard(void) {
  ux_runtimes *rts = registry(100, 3, 0, NULL);
  if (start(rts, "sb-hard", "ws-hard", 1)) { ok(0, "hard runtime starts"); ux_runtimes_free(rts); return; }
  ux_rt_info info;
  ux_runtimes_info(rts, "sb-hard", &info);
  ok(info.expires_at == info.created_at + 3, "expires_at = created_at + the hard TTL");
  long t0 = ux_now_ms();
  rt_end e = { "", 0, "" };
  while (!rt_ended("sb-hard", &e) && ux_now_ms() - t0 < 8000) {
    ux_runtimes_touch(rts, "sb-hard");
    t_sleep_ms(100);
  }
  long took = ux_now_ms() - t0;
  ok(e.status == UX_RT_RELEASED && strstr(e.why, "hard TTL of 3 s"),
     "a runtime in use is released at its hard TTL (%ld ms: %s)", took, e.why);
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
  ux_runtimes_free(rts);
}

/* ---------------------------------------------------------------------
** Broken agents
** ------------------------------------------------------------------- */

static void test_killed(void) {
  ux_runtimes *rts = registry(0, 0, 0, NULL);
  if (start(rts, "sb-kill", "ws-kill", 1)) { ok(0, "runtime starts"); ux_runtimes_free(rts); return; }
  ux_rt *rt = ux_runtimes_get(rts, "sb-kill");
  json_t *res = NULL;
  char err[300];
  json_t *req = json_pack("{s:s, s:s}", "op", "exec", "command", "kill -9 $PPID; sleep 5");
  int rc = ux_rt_call(rt, req, 0, 10000, NULL, NULL, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE && strstr(err, "without an answer"),
     "a command that kills its parent (the request's handler): GONE (%s)", err);
  json_decref(req);
  ux_rt_info info;
  ok(agent_pid(rt) > 0 && ux_runtimes_info(rts, "sb-kill", &info) == 0 && info.status == UX_RT_RUNNING,
     "the runtime itself goes on serving");
  long pid = agent_pid(rt);
  char cmd[100];
  snprintf(cmd, sizeof cmd, "kill -9 %ld; sleep 5", pid);
  req = json_pack("{s:s, s:s}", "op", "exec", "command", cmd);
  long t0 = ux_now_ms();
  rc = ux_rt_call(rt, req, 0, 10000, NULL, NULL, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE && ux_now_ms() - t0 < 3000, "a command that kills the agent: GONE at once (%s)", err);
  json_decref(req);
  rt_end e;
  ok(rt_wait_end("sb-kill", 5000, &e) && e.status == UX_RT_FAILED && strstr(e.why, "agent exited"),
     "the runtime failed, on_end says why (%s)", e.why);
  rc = rt_do(rt, "ping", NULL, 2000, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE && strstr(err, "not running"), "a held handle then gets GONE (%s)", err);
  ux_rt_put(rt);
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
  ok(start(rts, "sb-kill2", "ws-kill", 0) == 0, "the workspace can run a new runtime");

  rt = ux_runtimes_get(rts, "sb-kill2");
  snprintf(cmd, sizeof cmd, "kill -STOP %ld", agent_pid(rt));
  int code = -1;
  char *out = rt ? rt_exec(rt, cmd, &code) : NULL;
  ok(out && code == 0, "a command stops the agent (SIGSTOP)");
  free(out);
  ux_rt_put(rt);
  ux_runtimes_free(rts);
  rts = registry(0, 0, 1, NULL);
  if (start(rts, "sb-stop", "ws-kill", 0)) { ok(0, "runtime starts"); ux_runtimes_free(rts); return; }
  rt = ux_runtimes_get(rts, "sb-stop");
  snprintf(cmd, sizeof cmd, "kill -STOP %ld", agent_pid(rt));
  out = rt ? rt_exec(rt, cmd, &code) : NULL;
  free(out);
  t0 = ux_now_ms();
  ok(rt_wait_end("sb-stop", 30000, &e) && e.status == UX_RT_FAILED && strstr(e.why, "health check"),
     "a stopped agent fails its health check (%ld ms: %s)", ux_now_ms() - t0, e.why);
  ux_rt_put(rt);
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
  ux_runtimes_free(rts);
}

/* ---------------------------------------------------------------------
** Release, volume removal, shutdown
** ------------------------------------------------------------------- */

static void test_release(void) {
  ux_runtimes *rts = registry(0, 0, 0, NULL);
  if (start(rts, "sb-rel", "ws-rel", 1)) { ok(0, "runtime starts"); ux_runtimes_free(rts); return; }
  int cgroups = rt_sandbox_procs();
  ux_rt *rt = ux_runtimes_get(rts, "sb-rel");
  json_t *res = NULL;
  char err[300];
  int rc = rt_do(rt, "session_exec", "{\"session_id\":\"s1\",\"command\":\"sleep 600 &\"}", 20000, &res,
                 err, sizeof err);
  json_decref(res);
  int code = -1;
  /* exec kills its process group once bash ends: the command waits until
  ** the escaping process has its own session (it writes the file after) */
  char *out = rt_exec(rt, "setsid sh -c 'echo $$ > /tmp/escaped; exec sleep 600' >/dev/null 2>&1 "
                      "</dev/null & for i in $(seq 1000); do [ -s /tmp/escaped ] && break; sleep 0.01; "
                      "done; echo started", &code);
  /* the PTY session's shell may still be forking its sleep: wait for it */
  int sleepers = 0;
  for (long end = ux_now_ms() + 10000; ux_now_ms() < end && sleepers < 2; t_sleep_ms(20))
    sleepers = rt_sandbox_procs_running("sleep 600");
  ok(rc == UX_RTC_OK && out && (sleepers == 2 || cgroups < 0),
     "a PTY session and an escaped setsid process run (%d of them)", sleepers);
  free(out);
  long t0 = ux_now_ms();
  ok(ux_runtimes_release(rts, "sb-rel") == 0, "release (%ld ms)", ux_now_ms() - t0);
  ok(rt_sandbox_procs() == 0 || cgroups < 0, "when release returns, every process is gone (%d)",
     rt_sandbox_procs());
  rc = rt_do(rt, "ping", NULL, 2000, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE, "a held handle gets GONE after release (%s)", err);
  ux_rt_put(rt);
  char vol[PATH_MAX + 8];
  snprintf(vol, sizeof vol, "%s/ws-rel", rt_data);
  t0 = ux_now_ms();
  ok(ux_volume_destroy(vol) == 0 && ux_now_ms() - t0 < 3000,
     "the volume was given back: it is destroyed at once (%ld ms)", ux_now_ms() - t0);

  /* a volume destroyed under a running runtime stops it */
  if (start(rts, "sb-vol", "ws-vol", 1)) { ok(0, "runtime starts"); ux_runtimes_free(rts); return; }
  snprintf(vol, sizeof vol, "%s/ws-vol", rt_data);
  t0 = ux_now_ms();
  ok(ux_volume_destroy(vol) == 0 && ux_now_ms() - t0 < 5000, "destroying its volume (%ld ms)",
     ux_now_ms() - t0);
  rt_end e;
  ok(rt_wait_end("sb-vol", 5000, &e) && e.status == UX_RT_RELEASED && strstr(e.why, "from outside"),
     "stops the runtime: released, from outside (%s)", e.why);
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
  ux_runtimes_free(rts);
}

typedef struct { ux_rt *rt; int rc; long ms; } pending_call;

static void *long_call(void *arg) {
  pending_call *p = arg;
  json_t *res = NULL;
  char err[300];
  long t0 = ux_now_ms();
  p->rc = rt_do(p->rt, "exec", "{\"command\":\"sleep 25\"}", 40000, &res, err, sizeof err);
  p->ms = ux_now_ms() - t0;
  json_decref(res);
  ux_rt_put(p->rt);
  return NULL;
}

static void test_shutdown(void) {
  ux_runtimes *rts = registry(0, 0, 0, NULL);
  if (start(rts, "sb-down", "ws-down", 1)) { ok(0, "runtime starts"); ux_runtimes_free(rts); return; }
  pending_call p = { ux_runtimes_get(rts, "sb-down"), -1, 0 };
  pthread_t t;
  if (!p.rt || pthread_create(&t, NULL, long_call, &p) != 0) { ok(0, "call thread"); return; }
  t_sleep_ms(500);
  long t0 = ux_now_ms();
  ux_runtimes_stop(rts);
  long took = ux_now_ms() - t0;
  pthread_join(t, NULL);
  ok(took < 10000 && p.rc == UX_RTC_GONE && p.ms < 15000, "stop returns without the call's 25 s; the call in flight "
     "gets GONE (%ld ms, call %ld ms)", took, p.ms);
  char vol[PATH_MAX], err[300];
  rt_volume("ws-down2", vol, sizeof vol);
  ok(ux_runtimes_start(rts, "sb-down2", "ws-down2", vol, NULL, err, sizeof err) == -1 &&
     strstr(err, "shutting down"), "after stop, starts are refused (%s)", err);
  t0 = ux_now_ms();
  ux_runtimes_free(rts);
  ok(ux_now_ms() - t0 < 5000, "then free (%ld ms)", ux_now_ms() - t0);
  rt_end e;
  ok(rt_ended("sb-down", &e) == 1 && strstr(e.why, "shutting down"), "on_end: %s", e.why);
  ok(procs_zero_within(3000) <= 0, "no process is left (%d)", rt_sandbox_procs());
}

/* on_end that uses the registry it is called from */
static ux_runtimes *reentrant;
static atomic_int reentered;
static void on_end_reenter(void *ctx, const char *sb, int status, const char *why) {
  ux_rt_info info;
  char other[32];
  atomic_store(&reentered, ux_runtimes_info(reentrant, sb, &info) == 0 && info.status == status &&
                           ux_runtimes_of_workspace(reentrant, "ws-re", other) == -1 &&
                           ux_runtimes_release(reentrant, sb) == 0);
  rt_on_end(ctx, sb, status, why);      /* last: the test reads `reentered` once this is seen */
}

static void test_reentrant(void) {
  reentrant = registry(1, 0, 0, on_end_reenter);
  if (start(reentrant, "sb-re", "ws-re", 1)) { ok(0, "runtime starts"); ux_runtimes_free(reentrant); return; }
  rt_end e;
  ok(rt_wait_end("sb-re", 5000, &e) && atomic_load(&reentered), "on_end may call info, of_workspace and release");
  ux_rt_info info;
  ok(ux_runtimes_info(reentrant, "sb-re", &info) == -1, "released from on_end: forgotten");
  ux_runtimes_free(reentrant);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (rt_setup("rtlife")) return 0;
  if (rt_sandbox_procs() < 0) printf("# no cgroups here: process counts are not checked\n");
  test_idle();
  test_hard();
  test_killed();
  test_release();
  test_shutdown();
  test_reentrant();
  rt_teardown();
  return tap_done();
}
