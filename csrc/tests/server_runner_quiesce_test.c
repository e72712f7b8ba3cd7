/*
** Quiescing the runs of one work directory: ux_runner_freeze_workdir
** (a run that counts makes no progress while frozen; a run started
** meanwhile is not frozen) and ux_runner_kill_workdir (every process
** gone, the runs report cancelled). Real bubblewrap runs; root only.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/runner.h"
#include "tests/tap.h"

typedef struct bg_run {
  ux_run_spec spec;
  ux_run_result res;
  int started;
  volatile int done;
  char err[256];
} bg_run;

static void *bg_wait(void *arg) {
  bg_run *b = arg;
  ux_run *r = ux_run_start(&b->spec, b->err, sizeof b->err);
  b->started = r != NULL;
  if (r) ux_run_wait(r, &b->res);
  else memset(&b->res, 0, sizeof b->res);
  __atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static long drain(int fd);

/* Bytes that arrive on fd within ms (10 ms steps): a positive answer
** comes as soon as there is one, a slow machine only waits longer. */
static long drain_within(int fd, int ms) {
  long got = 0;
  for (int i = 0; i < ms / 10 && got == 0; i++) {
    got = drain(fd);
    if (!got) t_sleep_ms(10);
  }
  return got;
}

static long drain(int fd) {
  char buf[65536];
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) { total += n; continue; }
    if (n < 0 && errno == EINTR) continue;
    return total;
  }
}

/* Live processes whose real uid is uid. */
/* Whether process `pid` belongs to this test's runs: with cgroups, one in
** the runner's parent cgroup of this process (unsandboxd-<our pid>-...).
** Other test suites on the machine use the same slot uids: a uid alone
** would count their processes too once a slot changed hands. */
static int of_this_test(const char *pid) {
  if (!strcmp(ux_runner_isolation()->cgroup, "none")) return 1;
  char path[300], buf[4096], mark[64];
  snprintf(path, sizeof path, "/proc/%s/cgroup", pid);
  snprintf(mark, sizeof mark, "/unsandboxd-%ld-", (long)getpid());
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t k = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (k <= 0) return 0;
  buf[k] = '\0';
  return strstr(buf, mark) != NULL;
}

static int procs_of(unsigned long uid) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], buf[2048];
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || !of_this_test(e->d_name)) continue;
    snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) continue;
    buf[k] = '\0';
    char *u = strstr(buf, "\nUid:"), *st = strstr(buf, "\nState:");
    unsigned long ruid;
    if (u && sscanf(u + 5, "%lu", &ruid) == 1 && ruid == uid && !(st && strstr(st, "\tZ")))
      n++;
  }
  if (d) closedir(d);
  return n;
}

static void test_freeze_kill(void) {
  char base[] = "/var/tmp/unsb-quiesce-XXXXXX", wd[128], cmd[200];
  if (!mkdtemp(base)) { ok(0, "base"); return; }
  chmod(base, 0700);
  snprintf(wd, sizeof wd, "%s/service", base);
  mkdir(wd, 0700);
  int dfd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int p[2];
  if (dfd < 0 || pipe2(p, O_CLOEXEC) != 0) { ok(0, "fds"); return; }
  fcntl(p[0], F_SETFL, O_NONBLOCK);

  /* a "service": counts to its stdout (our pipe) as fast as it can */
  bg_run a;
  memset(&a, 0, sizeof a);
  a.spec.language = "bash";
  a.spec.code = "id -u > uid; while :; do echo counting; done";
  a.spec.code_len = strlen(a.spec.code);
  a.spec.ttl_s = 60;
  a.spec.vcpu = 1;
  a.spec.workdir = wd;
  a.spec.out_fd = p[1];
  pthread_t t;
  pthread_create(&t, NULL, bg_wait, &a);
  long got = drain_within(p[0], 20000);
  ok(got > 0, "a run in the work directory is counting");
  struct stat st;
  char up[200];
  snprintf(up, sizeof up, "%s/uid", wd);
  unsigned long uid = stat(up, &st) == 0 ? (unsigned long)st.st_uid : 0;

  int n = ux_runner_freeze_workdir(dfd, 1);
  drain(p[0]);
  t_sleep_ms(400);
  long frozen = drain(p[0]);
  ok(n == 1 && frozen == 0, "frozen: no progress in 400 ms (%d run, %ld bytes)", n, frozen);

  /* a run started meanwhile in the same directory is not frozen */
  ux_run_spec s;
  memset(&s, 0, sizeof s);
  s.language = "bash";
  s.code = "cat uid; echo beside";
  s.code_len = strlen(s.code);
  s.ttl_s = 20;
  s.vcpu = 1;
  s.workdir = wd;
  char err[256] = "";
  ux_run *r = ux_run_start(&s, err, sizeof err);
  ux_run_result res;
  if (r) {
    ux_run_wait(r, &res);
    ok(res.exit_code == 0 && res.out && strstr(res.out, "beside") && res.elapsed_ms < 10000,
       "a run started next to the frozen one runs to its end");
    ux_run_result_free(&res);
  } else ok(0, "a run beside the frozen one starts: %s", err);
  t_sleep_ms(200);
  ok(drain(p[0]) == 0, "the first run is still frozen after it");

  ok(ux_runner_freeze_workdir(dfd, 0) == 1, "thawed");
  ok(drain_within(p[0], 20000) > 0, "counting again once thawed");

  ok(ux_runner_freeze_workdir(dfd, 1) == 1, "frozen again");
  long long t0 = time(NULL);
  ok(ux_runner_kill_workdir(dfd, 5000) == 0, "kill_workdir: every process gone");
  ok(uid >= 200000 && procs_of(uid) == 0, "no process of the slot uid %lu is left", uid);
  pthread_join(t, NULL);
  ok(a.started && a.res.cancelled && !a.res.timed_out && time(NULL) - t0 < 10,
     "the killed run reports cancelled");
  ux_run_result_free(&a.res);

  ok(ux_runner_freeze_workdir(dfd, 1) == 0 && ux_runner_kill_workdir(dfd, 100) == 0,
     "with no run of the directory: 0 runs, nothing to wait for");
  errno = 0;
  ok(ux_runner_freeze_workdir(-1, 1) == -1 && errno == EBADF &&
     ux_runner_kill_workdir(-1, 100) == -1, "a bad directory fd: -1, EBADF");
  close(dfd);
  close(p[0]);
  close(p[1]);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) printf("# cleanup of %s failed\n", base);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0) {
    printf("1..0 # SKIP needs root and /usr/bin/bwrap\n");
    return 0;
  }
  char tmpdir[] = "/var/tmp/unsb-qtest-XXXXXX";
  if (!mkdtemp(tmpdir)) { printf("Bail out! mkdtemp\n"); return 1; }
  ux_runner_set_tmpdir(tmpdir);
  ux_isolation iso;
  ux_runner_init(1, &iso);
  printf("# isolation: %s\n", iso.detail);
  test_freeze_kill();
  ok(rmdir(tmpdir) == 0, "every run directory was removed");
  ux_runner_shutdown();
  return tap_done();
}
