/*
** A lying agent. This test binary is also the agent: run as `runtime`
** (which is how the runtime module starts its agent, here bound in place
** of bin/unsandboxd-agent), it speaks the control protocol but answers
** each request with what the request's "path" names: malformed frames,
** oversized ones, floods, silence, a close without an answer. The server
** side must turn each into a status code in bounded time, never crash or
** hang, stop a runtime whose agent broke the protocol, and keep one whose
** agent merely went quiet or hung up. The FAKE_PING variable (given
** through agent_env) makes the first or later pings misbehave too.
** Must run as root (the fake agent runs in a real sandbox).
*/
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "tests/runtime_util.h"

/* ---------------------------------------------------------------------
** The fake agent (inside the sandbox)
** ------------------------------------------------------------------- */

static void put(int fd, const char *s) {
  size_t len = strlen(s);
  while (len > 0) {
    ssize_t n = write(fd, s, len);
    if (n <= 0) return;
    s += n;
    len -= (size_t)n;
  }
}

/* n bytes of c, then tail (the flood and the oversized cases). */
static void put_run(int fd, char c, size_t n, const char *tail) {
  char buf[65536];
  memset(buf, c, sizeof buf);
  while (n > 0) {
    size_t k = n < sizeof buf ? n : sizeof buf;
    ssize_t w = write(fd, buf, k);
    if (w <= 0) return;
    n -= (size_t)w;
  }
  if (tail) put(fd, tail);
}

static const struct { const char *name, *reply; } canned[] = {
  { "notjson", "hello\n" }, { "array", "[1,2]\n" }, { "emptyline", "\n" },
  { "dupkeys", "{\"ok\":true,\"ok\":true,\"result\":{}}\n" },
  { "extrakey", "{\"ok\":true,\"result\":{},\"x\":1}\n" },
  { "noresult", "{\"ok\":true}\n" }, { "resultnum", "{\"ok\":true,\"result\":5}\n" },
  { "okstring", "{\"ok\":\"yes\",\"result\":{}}\n" },
  { "badkind", "{\"ok\":false,\"error\":{\"kind\":\"weird\",\"message\":\"m\"}}\n" },
  { "errextra", "{\"ok\":false,\"error\":{\"kind\":\"invalid\",\"message\":\"m\",\"x\":1}}\n" },
  { "errnomsg", "{\"ok\":false,\"error\":{\"kind\":\"invalid\",\"message\":7}}\n" },
  { "badchannel", "{\"event\":\"chunk\",\"channel\":\"stdin\",\"data\":\"x\"}\n{\"ok\":true,\"result\":{}}\n" },
  { "badevent", "{\"event\":\"progress\",\"channel\":\"stdout\",\"data\":\"x\"}\n" },
  { "eventnodata", "{\"event\":\"chunk\",\"channel\":\"stdout\"}\n" },
  { "badutf8", "{\"ok\":true,\"result\":{\"s\":\"\xff\xfe\"}}\n" },
  { "invalid", "{\"ok\":false,\"error\":{\"kind\":\"invalid\",\"message\":\"path 'x': bad thing \xc3\xa9\"}}\n" },
  { "busy", "{\"ok\":false,\"error\":{\"kind\":\"busy\",\"message\":\"too many\"}}\n" },
  { "internal", "{\"ok\":false,\"error\":{\"kind\":\"internal\",\"message\":\"oops\"}}\n" },
  { "nul", "{\"ok\":true,\"result\":{\"s\":\"a\\u0000b\"}}\n" },
  { "events", "{\"event\":\"chunk\",\"channel\":\"stdout\",\"data\":\"1\"}\n"
              "{\"event\":\"chunk\",\"channel\":\"stderr\",\"data\":\"2\"}\n"
              "{\"event\":\"chunk\",\"channel\":\"stdout\",\"data\":\"3\"}\n{\"ok\":true,\"result\":{\"n\":3}}\n" },
  { "trailing", "{\"ok\":true,\"result\":{\"t\":1}}\ngarbage after the end" },
  { "partial", "{\"ok\":tr" }, { "nofinal", "" },
};

/* One request, in a child of the fake agent. */
static void fake_answer(int fd, const char *path) {
  for (size_t i = 0; i < sizeof canned / sizeof canned[0]; i++)
    if (!strcmp(path, canned[i].name)) { put(fd, canned[i].reply); return; }
  if (!strcmp(path, "stall")) { sleep(120); return; }
  if (!strcmp(path, "huge")) { put_run(fd, 'a', 9u << 20, NULL); return; }
  if (!strcmp(path, "hugeframe")) {
    put(fd, "{\"ok\":true,\"result\":{\"s\":\"");
    put_run(fd, 'a', (8u << 20) + 10, "\"}}\n");
    return;
  }
  if (!strcmp(path, "deep")) { put_run(fd, '[', 100000, "\n"); return; }
  if (!strcmp(path, "longmsg")) {
    put(fd, "{\"ok\":false,\"error\":{\"kind\":\"invalid\",\"message\":\"");
    for (int i = 0; i < 3000; i++) put(fd, "\xc3\xa9");
    put(fd, "\"}}\n");
    return;
  }
  if (!strcmp(path, "flood")) {
    char head[] = "{\"event\":\"chunk\",\"channel\":\"stdout\",\"data\":\"";
    for (int i = 0; i < 40; i++) { put(fd, head); put_run(fd, 'x', 1u << 20, "\"}\n"); }
    put(fd, "{\"ok\":true,\"result\":{}}\n");
  }
}

/* Reads one request line (bounded) and returns its path, or its op. */
static void fake_request(int fd, char *op, char *path, size_t size) {
  char buf[4096];
  size_t len = 0;
  op[0] = path[0] = '\0';
  while (len < sizeof buf - 1 && !memchr(buf, '\n', len)) {
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, 5000) <= 0) return;
    ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
    if (n <= 0) return;
    len += (size_t)n;
  }
  json_t *req = json_loadb(buf, strcspn(buf, "\n"), 0, NULL);
  snprintf(op, size, "%s", json_string_value(json_object_get(req, "op")) ?: "");
  snprintf(path, size, "%s", json_string_value(json_object_get(req, "path")) ?: "");
  json_decref(req);
}

/* Whether to answer ping number n (1-based), and with what. */
static const char *ping_reply(int n) {
  const char *mode = getenv("FAKE_PING") ?: "ok";
  static const char *good = "{\"ok\":true,\"result\":{\"pid\":2,\"uid\":1000}}\n";
  if (!strcmp(mode, "silent")) return NULL;
  if (!strcmp(mode, "garbage")) return "{\"ok\":true,\n";
  if (!strcmp(mode, "noresult")) return "{\"ok\":true,\"result\":{}}\n";
  if (!strcmp(mode, "once")) return n == 1 ? good : NULL;
  if (!strcmp(mode, "busy"))
    return n == 1 ? good : "{\"ok\":false,\"error\":{\"kind\":\"busy\",\"message\":\"full\"}}\n";
  return good;
}

/* FAKE_PING=slow: every health ping (not the first, readiness) is answered
** SLOW_PING_MS late, past one health deadline but within the ones after
** it: a slow agent, as on a loaded machine, but a live one. */
#define SLOW_PING_MS 3000
static int ping_is_slow(int n) {
  return n > 1 && getenv("FAKE_PING") && !strcmp(getenv("FAKE_PING"), "slow");
}

static int fake_agent(void) {
  if (getenv("FAKE_PING") && !strcmp(getenv("FAKE_PING"), "exit")) {
    fprintf(stderr, "fake agent: giving up\n");
    return 7;
  }
  signal(SIGCHLD, SIG_IGN);        /* children reap themselves */
  int pings = 0;
  for (;;) {
    char byte, cbuf[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = { &byte, 1 };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf };
    if (recvmsg(10, &m, 0) <= 0) return 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) continue;
    int fds[2] = { -1, -1 };
    memcpy(fds, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
    if (fds[1] >= 0) close(fds[1]);
    char op[64], path[64];
    fake_request(fds[0], op, path, sizeof op);
    if (!strcmp(op, "ping")) {
      const char *r = ping_reply(++pings);
      if (r && ping_is_slow(pings) && fork() == 0) {
        usleep(SLOW_PING_MS * 1000);   /* the slowness is what this agent fakes */
        put(fds[0], r);
        _exit(0);
      }
      if (r && !ping_is_slow(pings)) put(fds[0], r);
      if (r) close(fds[0]);
      continue;                    /* unanswered pings stay open */
    }
    if (fork() == 0) { fake_answer(fds[0], path); _exit(0); }
    close(fds[0]);
  }
}

/* ---------------------------------------------------------------------
** The tests (the server side)
** ------------------------------------------------------------------- */

static char vol[PATH_MAX];
static int serial;

static ux_runtimes *registry(const char *ping_mode, int health, int start_timeout) {
  static char env[64];
  static const char *envs[2] = { env, NULL };
  snprintf(env, sizeof env, "FAKE_PING=%s", ping_mode);
  ux_rt_config c;
  memset(&c, 0, sizeof c);
  c.agent_path = rt_self;
  c.agent_env = envs;
  c.health_interval_s = health;
  c.health_timeout_s = health;
  c.start_timeout_s = start_timeout;
  c.on_end = rt_on_end;
  ux_runtimes *rts = ux_runtimes_new(&c);
  if (!rts) { printf("Bail out! ux_runtimes_new\n"); exit(1); }
  return rts;
}

/* Starts a new runtime of the fake agent on the test's one volume (the
** previous runtime, if stopping, is waited for): its id in sb. */
static int start_fake(ux_runtimes *rts, char sb[32]) {
  char err[300];
  snprintf(sb, 32, "sb-fake-%d", ++serial);
  if (ux_runtimes_start(rts, sb, "ws-fake", vol, "default", err, sizeof err) != 0) {
    printf("#   start: %s\n", err);
    return -1;
  }
  return ux_runtimes_wait_ready(rts, sb, 20000);
}

static int call_case(ux_rt *rt, const char *name, int timeout_ms, json_t **res, char *err, size_t errlen) {
  char args[128];
  snprintf(args, sizeof args, "{\"path\":\"%s\"}", name);
  return rt_do(rt, "file_read", args, timeout_ms, res, err, errlen);
}

/* Waits (bounded) until sb's agent has answered n health checks, or sb
** has ended: 1 when it answered them. */
static int health_checks_reach(ux_runtimes *rts, const char *sb, long n) {
  ux_rt_info info;
  for (long end = ux_now_ms() + 60000; ux_now_ms() < end && !rt_ended(sb, NULL); t_sleep_ms(20))
    if (ux_runtimes_info(rts, sb, &info) == 0 && info.health_checks >= n) return 1;
  return 0;
}

/* Cases after which the runtime must be stopped as FAILED. */
static void test_broken(void) {
  static const char *const cases[] = {
    "notjson", "array", "emptyline", "dupkeys", "extrakey", "noresult", "resultnum", "okstring",
    "badkind", "errextra", "errnomsg", "badchannel", "badevent", "eventnodata", "badutf8",
    "huge", "hugeframe", "deep", "flood",
  };
  ux_runtimes *rts = registry("ok", 0, 0);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char sb[32], err[300];
    if (start_fake(rts, sb) != UX_RT_RUNNING) { ok(0, "%s: the fake agent runs", cases[i]); continue; }
    ux_rt *rt = ux_runtimes_get(rts, sb);
    json_t *res = NULL;
    long t0 = ux_now_ms();
    int rc = call_case(rt, cases[i], 20000, &res, err, sizeof err);
    long took = ux_now_ms() - t0;
    rt_end e = { "", 0, "" };
    int ended = rt_wait_end(sb, 5000, &e);
    ok(rc == UX_RTC_GONE && !res && took < 10000 && ended && e.status == UX_RT_FAILED &&
       strstr(e.why, "broke the protocol"), "%s: GONE in %ld ms, runtime failed (%s)", cases[i], took,
       e.why);
    ux_rt_put(rt);
  }
  ux_runtimes_free(rts);
}

/* Answers that are fine, or failures that leave the runtime running. */
static void test_kept(void) {
  ux_runtimes *rts = registry("ok", 0, 0);
  char sb[32], err[300];
  if (start_fake(rts, sb) != UX_RT_RUNNING) { ok(0, "the fake agent runs"); ux_runtimes_free(rts); return; }
  ux_rt *rt = ux_runtimes_get(rts, sb);
  json_t *res = NULL;
  int rc = call_case(rt, "invalid", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_INVALID && !strcmp(err, "path 'x': bad thing \xc3\xa9"), "invalid: the agent's message (%s)", err);
  rc = call_case(rt, "busy", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_BUSY && !strcmp(err, "too many"), "busy (%s)", err);
  rc = call_case(rt, "internal", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_INTERNAL && !strcmp(err, "oops"), "internal (%s)", err);
  char small[41];
  rc = call_case(rt, "longmsg", 5000, &res, small, sizeof small);
  json_t *utf8 = json_string(small);   /* NULL unless valid UTF-8 */
  ok(rc == UX_RTC_INVALID && strlen(small) == 40 && utf8,
     "a long message is cut at a character boundary (%zu bytes)", strlen(small));
  json_decref(utf8);
  rc = call_case(rt, "nul", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_OK && json_string_length(json_object_get(res, "s")) == 3, "a NUL in a string is data");
  json_decref(res);
  rc = call_case(rt, "trailing", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_OK && json_integer_value(json_object_get(res, "t")) == 1, "bytes after the final frame are ignored");
  json_decref(res);
  rc = call_case(rt, "nofinal", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE && strstr(err, "without an answer"), "a close without an answer: GONE (%s)", err);
  rc = call_case(rt, "partial", 5000, &res, err, sizeof err);
  ok(rc == UX_RTC_GONE && !res, "a close in the middle of a frame: GONE (%s)", err);
  long t0 = ux_now_ms();
  rc = call_case(rt, "stall", 1000, &res, err, sizeof err);
  ok(rc == UX_RTC_TIMEOUT && ux_now_ms() - t0 < 2000, "silence: TIMEOUT at the deadline (%s)", err);
  ux_rt_info info;
  ok(ux_runtimes_info(rts, sb, &info) == 0 && info.status == UX_RT_RUNNING && !rt_ended(sb, NULL),
     "after all of these the runtime still runs");
  ux_rt_put(rt);
  ux_runtimes_free(rts);
}

static void test_pings(void) {
  struct { const char *mode; int start_timeout; const char *why; } bad[] = {
    { "silent", 2, "did not become ready within 2 s" },
    { "garbage", 0, "broke the protocol" },
    { "noresult", 0, "without pid and uid" },
    { "exit", 0, "exited with status 7: fake agent: giving up" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ux_runtimes *rts = registry(bad[i].mode, 0, bad[i].start_timeout);
    char sb[32];
    long t0 = ux_now_ms();
    int st = start_fake(rts, sb);
    rt_end e = { "", 0, "" };
    ok(st == UX_RT_FAILED && rt_wait_end(sb, 5000, &e) && e.status == UX_RT_FAILED &&
       strstr(e.why, bad[i].why), "first ping %s: failed in %ld ms (%s)", bad[i].mode,
       ux_now_ms() - t0, e.why);
    ux_rt_info info;
    ok(ux_runtimes_info(rts, sb, &info) == 0 && info.status == UX_RT_FAILED && !strcmp(info.why, e.why),
       "info says failed, and why");
    ux_runtimes_free(rts);
  }
  ux_runtimes *rts = registry("once", 1, 0);
  char sb[32];
  rt_end e = { "", 0, "" };
  ok(start_fake(rts, sb) == UX_RT_RUNNING && rt_wait_end(sb, 30000, &e) &&
     strstr(e.why, "did not answer a health check within 3 s"),
     "an agent that answers only its first ping fails a health check (%s)", e.why);
  ux_runtimes_free(rts);
  rts = registry("busy", 1, 0);
  ux_rt_info info;
  int st = start_fake(rts, sb);
  ok(st == UX_RT_RUNNING && health_checks_reach(rts, sb, 3) && !rt_ended(sb, NULL) &&
     ux_runtimes_info(rts, sb, &info) == 0 && info.status == UX_RT_RUNNING,
     "an agent answering health checks with busy is alive (%ld answered)", info.health_checks);
  ux_runtimes_free(rts);
  /* deadlines of 2 s, answers after 3: each ping misses one deadline */
  rts = registry("slow", 2, 0);
  st = start_fake(rts, sb);
  ok(st == UX_RT_RUNNING && health_checks_reach(rts, sb, 2) && !rt_ended(sb, NULL) &&
     ux_runtimes_info(rts, sb, &info) == 0 && info.status == UX_RT_RUNNING,
     "an agent that answers health checks late is alive (%ld answered)", info.health_checks);
  ux_runtimes_free(rts);
}

int main(int argc, char **argv) {
  /* _exit: no atexit handler of the test program's own runs inside the
  ** sandbox (under make coverage, gcov's would print to the agent's
  ** stderr, whose last line the tests read) */
  if (argc > 1 && !strcmp(argv[1], "runtime")) {
    fflush(stderr);
    _exit(fake_agent());
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (rt_setup("rtproto")) return 0;
  rt_volume("ws-fake", vol, sizeof vol);
  long t0 = ux_now_ms();
  test_kept();
  test_broken();
  test_pings();
  printf("# %ld ms\n", ux_now_ms() - t0);
  ok(rt_sandbox_procs() <= 0, "no sandbox process is left (%d)", rt_sandbox_procs());
  rt_teardown();
  return tap_done();
}
