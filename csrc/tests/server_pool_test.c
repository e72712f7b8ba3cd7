/*
** Sandboxes prepared ahead (pool.c), end to end with real bubblewrap
** runs: the pool's options, that runs take its sandboxes and get exactly
** what a cold run gets, that a run leaves nothing for the next one, that
** a sandbox which failed to start or died while waiting is discarded and
** the run still succeeds, a burst of 100 runs, and that stopping the pool
** leaves no process, fd or zombie. Needs root; skipped otherwise.
*/
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/run_object.h"
#include "tests/tap.h"

static ux_run_spec spec_for(const char *lang, const char *code) {
  ux_run_spec s;
  memset(&s, 0, sizeof s);
  s.language = lang;
  s.code = code;
  s.code_len = strlen(code);
  s.ttl_s = 20;
  s.vcpu = 1;
  return s;
}

/* Runs to the end; the result in res (free it). 0, or -1 with err. */
static int run(const ux_run_spec *s, ux_run_result *res, char *err, size_t errlen) {
  ux_run *r = ux_run_start(s, err, errlen);
  if (!r) { memset(res, 0, sizeof *res); return -1; }
  ux_run_wait(r, res);
  return 0;
}

/* stdout of a bash run, or "" (malloc'd). */
static char *bash_out(const char *code, int ttl) {
  ux_run_spec s = spec_for("bash", code);
  s.ttl_s = ttl;
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) != 0) { printf("# start failed: %s\n", err); return strdup(""); }
  char *out = strdup(r.out ? r.out : "");
  ux_run_result_free(&r);
  return out;
}

static ux_pool_stats stats(void) {
  ux_pool_stats st;
  ux_runner_pool_stats(&st);
  return st;
}

/* Waits (at most 10 s) until every shape holds `size` ready sandboxes. */
static int await_full(void) {
  for (int i = 0; i < 200; i++) {
    ux_pool_stats st = stats();
    int full = st.n_shapes > 0;
    for (int k = 0; k < st.n_shapes; k++) full = full && st.shape[k].ready >= st.size;
    if (full) return 1;
    t_sleep_ms(50);
  }
  return 0;
}

/* Pids of our children running bwrap: the outer bwraps of the pool's
** sandboxes (their parent is this process, the pool's thread). */
static int bwrap_children(pid_t *out, int max) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)) && n < max) {
    char path[300], buf[1024];
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) continue;
    buf[k] = '\0';
    char *pp = strstr(buf, "\nPPid:");
    if (strncmp(buf, "Name:\tbwrap\n", 12) != 0 || !pp || strstr(buf, "\nState:\tZ")) continue;
    if (strtol(pp + 6, NULL, 10) == (long)getpid()) out[n++] = (pid_t)strtol(e->d_name, NULL, 10);
  }
  if (d) closedir(d);
  return n;
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n;
}

/* ---------------------------------------------------------------------
** The tests
** ------------------------------------------------------------------- */

static void test_options(void) {
  char err[256] = "";
  ok(ux_runner_pool_start(0, "bash", err, sizeof err) != 0 && strstr(err, "between 1"),
     "size 0 refused: %s", err);
  ok(ux_runner_pool_start(UX_POOL_MAX + 1, "bash", err, sizeof err) != 0, "size %d refused",
     UX_POOL_MAX + 1);
  struct { const char *shapes, *says; } bad[] = {
    { "brainfudge", "not installed" }, { "bash/lan", "network mode" }, { "bash,bash", "twice" },
    { ",", "bad pool shape" }, { "bash,", "bad pool shape" },
    { "bash,python,sh,perl,lua,tcl,bash/semitrusted,python/semitrusted,sh/semitrusted,"
      "perl/semitrusted,lua/semitrusted,tcl/semitrusted,javascript,javascript/semitrusted,"
      "c,c/semitrusted,cpp", "at most" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    int rc = ux_runner_pool_start(2, bad[i].shapes, err, sizeof err);
    ok(rc != 0 && strstr(err, bad[i].says), "shapes '%.40s' refused: %s", bad[i].shapes, err);
    if (rc == 0) ux_runner_pool_stop();
  }
  ok(!stats().running, "nothing runs after refusals");
}

static void test_takes(void) {
  ux_pool_stats before = stats();
  char *out = bash_out("echo from-pool; id -u", 7);
  ux_pool_stats after = stats();
  ok(!strcmp(out, "from-pool\n1000\n"), "a pooled run runs its code, as uid 1000 inside");
  free(out);
  ok(after.hits == before.hits + 1, "it took a ready sandbox (hits %llu -> %llu)",
     before.hits, after.hits);
  /* the CPU limit was set for this run's ttl, as a cold start sets it */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char want[64];
  snprintf(want, sizeof want, "%ld\n", 7 * (cpus > 0 ? cpus : 1) + UX_SB_CPU_SLACK);
  out = bash_out("ulimit -t", 7);
  ok(!strcmp(out, want), "RLIMIT_CPU of a pooled run follows its own ttl (%.*s s)",
     (int)strcspn(out, "\n"), out);
  free(out);
  ux_run_spec s = spec_for("bash", "ulimit -t");
  s.ttl_s = 7;
  s.n_env = 1;
  const char *env[] = { "X=1" };
  s.env = env;
  ux_run_result r;
  char err[256];
  before = stats();
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out && !strcmp(r.out, want) && stats().hits == before.hits,
       "a spec with env starts cold, with the same limit");
    ux_run_result_free(&r);
  } else ok(0, "cold run: %s", err);
  /* the ttl still ends a pooled run */
  s = spec_for("bash", "sleep 30");
  s.ttl_s = 1;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.timed_out && r.exit_code == 137 && r.elapsed_ms < 15000,
       "a pooled run is killed at its ttl (%ld ms)", r.elapsed_ms);
    ux_run_result_free(&r);
  } else ok(0, "ttl run: %s", err);
}

/* 1 when some process's command line is exactly argv0 arg1. */
static int process_running(const char *argv0, const char *arg1) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int found = 0;
  size_t l0 = strlen(argv0), l1 = strlen(arg1);
  while (d && !found && (e = readdir(d))) {
    char path[300], buf[256];
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf);
    close(fd);
    found = k == (ssize_t)(l0 + l1 + 2) && !memcmp(buf, argv0, l0 + 1) &&
            !memcmp(buf + l0 + 1, arg1, l1 + 1);
  }
  if (d) closedir(d);
  return found;
}

static void test_one_shot(void) {
  free(bash_out("echo secret > /sandbox/left; echo t > /tmp/left; echo s > /dev/shm/left;"
                " (setsid sleep 317 >/dev/null 2>&1 &); export LEFT=1", 20));
  ok(!process_running("sleep", "317"), "a run's background process ends with the run");
  char *b = bash_out("ls -A /sandbox /tmp /dev/shm; echo ${LEFT:-none}", 20);
  ok(!strcmp(b, "/dev/shm:\n\n/sandbox:\n\n/tmp:\nnone\n"),
     "the next pooled run sees none of its files or environment");
  if (strcmp(b, "/dev/shm:\n\n/sandbox:\n\n/tmp:\nnone\n")) printf("# got: %s\n", b);
  free(b);
}

static void test_discards(void) {
  if (!await_full()) { ok(0, "the pool fills"); return; }
  pid_t pids[64];
  int n = bwrap_children(pids, 64);
  ux_pool_stats before = stats();
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
  t_sleep_ms(200);
  char *out = bash_out("echo after-kill", 20);
  ux_pool_stats after = stats();
  ok(n >= 2 && !strcmp(out, "after-kill\n"), "with its %d waiting sandboxes killed, a run still "
     "succeeds", n);
  ok(after.discarded > before.discarded, "and the dead ones were discarded (%llu -> %llu)",
     before.discarded, after.discarded);
  free(out);

  ux_pool_break_next(3);
  /* every ready one taken, so the next ones are the broken ones */
  for (int i = 0; i < 4; i++) free(bash_out("true", 20));
  t_sleep_ms(500);
  before = stats();
  out = bash_out("echo despite-broken", 20);
  ok(!strcmp(out, "despite-broken\n"), "runs succeed while sandboxes fail to start");
  free(out);
  for (int i = 0; i < 100 && stats().failed < before.failed + 1; i++) t_sleep_ms(50);
  after = stats();
  ok(after.failed >= 1 && strstr(after.last_error, "unsb-broken"),
     "a sandbox whose set-up failed is discarded, with bwrap's reason (%llu: %s)",
     after.failed, after.last_error);
  ok(await_full(), "the pool fills again once sandboxes start");
}

typedef struct burst { int good, runs; } burst;

static void *burst_worker(void *arg) {
  burst *b = arg;
  for (int i = 0; i < b->runs; i++) {
    char code[64], want[64];
    snprintf(code, sizeof code, "echo run-%d", i);
    snprintf(want, sizeof want, "run-%d\n", i);
    char *out = bash_out(code, 20);
    b->good += !strcmp(out, want);
    free(out);
  }
  return NULL;
}

static void test_burst(void) {
  enum { THREADS = 10, EACH = 10 };
  ux_pool_stats before = stats();
  pthread_t t[THREADS];
  burst b[THREADS];
  for (int i = 0; i < THREADS; i++) {
    b[i] = (burst){ 0, EACH };
    pthread_create(&t[i], NULL, burst_worker, &b[i]);
  }
  int good = 0;
  for (int i = 0; i < THREADS; i++) { pthread_join(t[i], NULL); good += b[i].good; }
  ux_pool_stats after = stats();
  unsigned long long took = (after.hits - before.hits) + (after.misses - before.misses);
  ok(good == THREADS * EACH, "a burst of %d runs from %d threads: all right (%d)",
     THREADS * EACH, THREADS, good);
  ok(took == THREADS * EACH && after.hits > before.hits,
     "each asked the pool once (%llu hits, %llu misses)", after.hits - before.hits,
     after.misses - before.misses);
  ok(await_full(), "and it is full again afterwards");
}

/* The refill policy: full shapes never, one below the low mark at once,
** the rest only in a pause of the runs (no take for a while). */
static void test_refill_policy(void) {
  ok(!ux_pool_may_refill(4, 4, 0) && !ux_pool_may_refill(4, 4, 100000), "a full shape: never");
  ok(ux_pool_may_refill(0, 4, 0) && ux_pool_may_refill(1, 4, 0),
     "an empty or nearly empty shape: at once, even while runs keep coming");
  ok(!ux_pool_may_refill(2, 4, 0) && !ux_pool_may_refill(3, 16, 5),
     "above the low mark: not right after a take");
  ok(ux_pool_may_refill(2, 4, 1000) && ux_pool_may_refill(15, 16, 1000), "above it: in a pause");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0) {
    printf("1..0 # SKIP needs root and /usr/bin/bwrap\n");
    return 0;
  }
  char tmpdir[] = "/var/tmp/unsb-pooltest-XXXXXX";
  if (!mkdtemp(tmpdir)) { printf("Bail out! mkdtemp\n"); return 1; }
  test_refill_policy();
  ux_runner_set_tmpdir(tmpdir);
  ux_isolation iso;
  ux_runner_init(1, &iso);
  printf("# isolation: %s\n", iso.detail);
  ux_child_mntns();           /* made once per process, kept open */
  int fds_before = count_fds();
  test_options();
  char err[256] = "";
  if (ux_runner_pool_start(2, "bash", err, sizeof err) != 0) {
    ok(0, "the pool starts: %s", err);
    return tap_done();
  }
  ok(await_full(), "a pool of 2 bash sandboxes fills");
  test_takes();
  test_one_shot();
  test_discards();
  test_burst();
  ux_runner_pool_stop();
  pid_t pids[8];
  ok(bwrap_children(pids, 8) == 0 && !stats().running, "stopped: no sandbox of the pool is left");
  ok(count_fds() == fds_before, "nor any fd (%d before, %d after)", fds_before, count_fds());
  ok(rmdir(tmpdir) == 0, "every run directory was removed");
  ux_runner_shutdown();
  return tap_done();
}
