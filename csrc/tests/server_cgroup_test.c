/*
** The runner's cgroup code. Parsing and the v1/v2 decision run on fake
** trees (a temporary directory laid out like /sys/fs/cgroup, with fake
** /proc/self/cgroup and mountinfo files pointing into it), so both
** versions are covered whatever this machine mounts; writes of limits
** land in the fake files and are read back. Where this machine has a real
** cgroup2 mount (even one without controllers), freezing, killing and the
** populated flag of v2 are also checked for real with a child process.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/cgroup.h"
#include "tests/tap.h"

static char root[] = "/tmp/unsb-cgtest-XXXXXX";

static void put(const char *rel, const char *text) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  /* make the parent directories */
  for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0'; mkdir(p, 0755); *s = '/';
  }
  FILE *f = fopen(p, "w");
  if (f) { fputs(text, f); fclose(f); }
}

static void dir(const char *rel) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s/.keep", root, rel);
  put(p + strlen(root) + 1, "");
  unlink(p);
}

static char *get(const char *rel, char *buf, size_t size) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  FILE *f = fopen(p, "r");
  buf[0] = '\0';
  if (f) { size_t n = fread(buf, 1, size - 1, f); buf[n] = '\0'; fclose(f); }
  return buf;
}

static int exists(const char *rel) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  return access(p, F_OK) == 0;
}

static const char *path(const char *rel) {
  static char p[4][600];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", root, rel);
  return p[k];
}

/* ---------------------------------------------------------------------
** Parsing
** ------------------------------------------------------------------- */

static void test_parse(void) {
  const char *cg = "9:name=systemd:/\n8:pids:/a/b\n4:memory:/process_api/x y\n"
                   "2:cpu,cpuacct:/c\n0::/unified/path\n";
  char out[256];
  ok(ux_cg_self_path(cg, "pids", out, sizeof out) == 0 && !strcmp(out, "/a/b"), "v1 pids path");
  ok(ux_cg_self_path(cg, "memory", out, sizeof out) == 0 && !strcmp(out, "/process_api/x y"),
     "v1 memory path with a space");
  ok(ux_cg_self_path(cg, "cpuacct", out, sizeof out) == 0 && !strcmp(out, "/c"),
     "a controller sharing a line with another");
  ok(ux_cg_self_path(cg, NULL, out, sizeof out) == 0 && !strcmp(out, "/unified/path"),
     "the unified (0::) path");
  ok(ux_cg_self_path(cg, "freezer", out, sizeof out) == -1, "a controller not listed: -1");
  ok(ux_cg_self_path("garbage\n::\n1:memory\n1:memory:relative\n", "memory", out, sizeof out) == -1,
     "malformed lines are skipped");
  ok(ux_cg_self_path("0::/x\n", NULL, out, 2) == -1, "a path longer than the buffer: -1");
  ok(ux_cg_self_path("", "memory", out, sizeof out) == -1, "empty text: -1");

  const char *mi =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 /docker/abc /sys/fs/cgroup/cpu\\040x rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";
  char mnt[256], rt[256];
  ok(ux_cg_find_mount(mi, "cgroup", "memory", mnt, sizeof mnt, rt, sizeof rt) == 0 &&
     !strcmp(mnt, "/sys/fs/cgroup/memory") && !strcmp(rt, "/"), "v1 memory mount");
  ok(ux_cg_find_mount(mi, "cgroup", "cpuacct", mnt, sizeof mnt, rt, sizeof rt) == 0 &&
     !strcmp(mnt, "/sys/fs/cgroup/cpu x") && !strcmp(rt, "/docker/abc"),
     "optional tags, an escaped space, a subtree root");
  ok(ux_cg_find_mount(mi, "cgroup2", NULL, mnt, sizeof mnt, rt, sizeof rt) == 0 &&
     !strcmp(mnt, "/sys/fs/cgroup/unified"), "the cgroup2 mount");
  ok(ux_cg_find_mount(mi, "cgroup", "pids", mnt, sizeof mnt, rt, sizeof rt) == -1,
     "an unmounted controller: -1");
  ok(ux_cg_find_mount(mi, "cgroup", "mem", mnt, sizeof mnt, rt, sizeof rt) == -1,
     "a prefix of an option is not the option");
  ok(ux_cg_find_mount("1 2 3 4\nno separator here at all\n- - -\n", "cgroup2", NULL,
                      mnt, sizeof mnt, rt, sizeof rt) == -1, "malformed mountinfo: -1");

  ok(ux_cg_has_word("cpu io memory pids\n", "pids") && !ux_cg_has_word("cpu io memory", "mem") &&
     ux_cg_has_word("rw,memory", "memory") && !ux_cg_has_word("", "x"), "ux_cg_has_word");
  ok(ux_cg_key("low 0\nhigh 2\noom 1\noom_kill 3\n", "oom_kill") == 3 &&
     ux_cg_key("low 0\nhigh 2\noom 1\noom_kill 3\n", "oom") == 1 &&
     ux_cg_key("populated 0\nfrozen 1\n", "frozen") == 1 &&
     ux_cg_key("oom_kills 4\n", "oom_kill") == -1 && ux_cg_key("", "x") == -1, "ux_cg_key");

  char name[64], stale[80];
  ok(ux_cg_own_name(name, sizeof name) == 0 && !ux_cg_name_stale(name), "own name %s is live", name);
  snprintf(stale, sizeof stale, "unsandboxd-%ld-1", (long)getpid());
  ok(ux_cg_name_stale(stale), "our pid with another start time is stale");
  ok(ux_cg_name_stale("unsandboxd-4194303-5"), "a dead pid is stale");
  ok(!ux_cg_name_stale("unsandboxd-x-1") && !ux_cg_name_stale("other-1-1") &&
     !ux_cg_name_stale("unsandboxd-12") && !ux_cg_name_stale("unsandboxd-1-2x"),
     "names not of the form are never stale");
  char moved[96];
  snprintf(moved, sizeof moved, "%s-server", name);
  ok(ux_cg_name_stale("unsandboxd-4194303-5-server") && !ux_cg_name_stale(moved) &&
     !ux_cg_name_stale("unsandboxd-4194303-5-serverx"),
     "a moved server's NAME-server: stale with its server, else not");
}

/* ---------------------------------------------------------------------
** Detection on fake trees
** ------------------------------------------------------------------- */

static void mountinfo(int v2, int v1_mem, int v1_pids, int v1_frz) {
  char mi[4096];
  int n = snprintf(mi, sizeof mi, "1 0 0:1 / / rw - ext4 /dev/root rw\n");
  if (v2) n += snprintf(mi + n, sizeof mi - n,
    "41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n", path("fs/unified"));
  if (v1_mem) n += snprintf(mi + n, sizeof mi - n,
    "35 31 0:32 / %s rw,relatime - cgroup cgroup rw,memory\n", path("fs/memory"));
  if (v1_pids) n += snprintf(mi + n, sizeof mi - n,
    "39 31 0:36 / %s rw,relatime - cgroup cgroup rw,pids\n", path("fs/pids"));
  if (v1_frz) n += snprintf(mi + n, sizeof mi - n,
    "37 31 0:34 / %s rw,relatime - cgroup cgroup rw,freezer\n", path("fs/freezer"));
  put("mountinfo", mi);
}

static void test_detect(void) {
  ux_cg_layout l;
  put("cgroup", "8:pids:/\n6:freezer:/\n4:memory:/api/me\n0::/srv\n");
  put("fs/unified/srv/cgroup.controllers", "cpu io memory pids\n");
  put("fs/unified/srv/cgroup.kill", "");
  put("fs/memory/api/me/memory.limit_in_bytes", "9223372036854771712\n");
  put("fs/memory/api/me/memory.memsw.limit_in_bytes", "9223372036854771712\n");
  dir("fs/pids");
  dir("fs/freezer");

  mountinfo(1, 1, 1, 1);
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_V2 &&
     !strcmp(l.base[UX_CG_MEM], path("fs/unified/srv")) && l.kill && l.freezer,
     "v2 with memory and pids available: v2 (%s)", l.base[UX_CG_MEM]);

  put("fs/unified/srv/cgroup.controllers", "cpu io\n");
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_V1 &&
     !strcmp(l.base[UX_CG_MEM], path("fs/memory/api/me")) &&
     !strcmp(l.base[UX_CG_PIDS], path("fs/pids")) && l.memsw && l.freezer &&
     strstr(l.why, "lacks the memory and pids"),
     "v2 without the controllers (this machine's hybrid): v1 with memsw and freezer (%s)", l.why);

  mountinfo(0, 1, 1, 0);
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_V1 && !l.freezer &&
     !l.base[UX_CG_FRZ][0] && strstr(l.why, "cgroup2 not mounted"),
     "v1 without a freezer: v1, no freezer");

  unlink(path("fs/memory/api/me/memory.memsw.limit_in_bytes"));
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_V1 && !l.memsw,
     "v1 without swap accounting: no memsw");

  mountinfo(0, 1, 0, 1);
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_NONE &&
     strstr(l.why, "pids not mounted"), "no pids controller: none (%s)", l.why);

  mountinfo(0, 0, 1, 1);
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_NONE &&
     strstr(l.why, "memory not mounted"), "no memory controller: none");

  mountinfo(1, 1, 1, 1);
  put("cgroup", "8:pids:/\n0::/srv\n");
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_NONE &&
     strstr(l.why, "no memory line"), "our cgroup file lacks the memory line: none (%s)", l.why);

  /* a hierarchy mounted from a subtree (a container): paths below it */
  put("cgroup", "0::/ctr/app\n");
  put("fs/unified/app/cgroup.controllers", "memory pids\n");
  char mi[1024];
  snprintf(mi, sizeof mi, "41 31 0:38 /ctr %s rw - cgroup2 cgroup2 rw\n", path("fs/unified"));
  put("mountinfo", mi);
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_V2 &&
     !strcmp(l.base[UX_CG_MEM], path("fs/unified/app")), "a subtree mount: v2 at mount + rest");
  put("cgroup", "0::/elsewhere/app\n");
  ok(ux_cg_detect(path("cgroup"), path("mountinfo"), &l) == UX_CG_NONE &&
     strstr(l.why, "outside its mount"), "our cgroup outside the mounted subtree: none");

  ok(ux_cg_detect(path("missing"), path("mountinfo"), &l) == UX_CG_NONE &&
     strstr(l.why, "cannot read"), "an unreadable /proc file: none");
}

/* ---------------------------------------------------------------------
** Parents and run cgroups on fake trees
** ------------------------------------------------------------------- */

static void test_fake_v1(void) {
  ux_cg_layout l;
  put("cgroup", "8:pids:/\n6:freezer:/\n4:memory:/api/me\n");
  put("fs/memory/api/me/memory.memsw.limit_in_bytes", "");
  mountinfo(0, 1, 1, 1);
  if (ux_cg_detect(path("cgroup"), path("mountinfo"), &l) != UX_CG_V1) { ok(0, "fake v1"); return; }
  char stale[80], buf[256], err[256] = "";
  snprintf(stale, sizeof stale, "fs/pids/unsandboxd-%ld-1/run-3", (long)getpid());
  dir(stale);
  dir("fs/pids/unsandboxd-not-a-server");
  dir("fs/memory/api/me/other");
  /* the parent's limit files (cgroupfs makes them with the directory) */
  put("fs/memory/api/me/unsandboxd-test-1/memory.limit_in_bytes", "");
  put("fs/memory/api/me/unsandboxd-test-1/memory.memsw.limit_in_bytes", "");
  l.budget = 3ull << 30;
  ok(ux_cg_setup(&l, "unsandboxd-test-1", err, sizeof err) == 0, "setup on fake v1: %s", err);
  ok(!strcmp(get("fs/memory/api/me/unsandboxd-test-1/memory.limit_in_bytes", buf, sizeof buf), "3221225472") &&
     !strcmp(get("fs/memory/api/me/unsandboxd-test-1/memory.memsw.limit_in_bytes", buf, sizeof buf),
             "3221225472"), "the memory budget is the parent's memory and memory+swap limit");
  ok(exists("fs/memory/api/me/unsandboxd-test-1") && exists("fs/pids/unsandboxd-test-1") &&
     exists("fs/freezer/unsandboxd-test-1"), "a parent in memory, pids and freezer");
  snprintf(stale, sizeof stale, "fs/pids/unsandboxd-%ld-1", (long)getpid());
  ok(!exists(stale) && exists("fs/pids/unsandboxd-not-a-server") && exists("fs/memory/api/me/other"),
     "the stale parent went with its run; other directories stay");

  /* cgroupfs makes a cgroup's files; here the test lays them out */
  const char *m = "fs/memory/api/me/unsandboxd-test-1/run-7/", *p = "fs/pids/unsandboxd-test-1/run-7/",
             *f = "fs/freezer/unsandboxd-test-1/run-7/";
  char q[300];
#define AT(base, file) (snprintf(q, sizeof q, "%s%s", base, file), q)
  put(AT(m, "memory.limit_in_bytes"), ""); put(AT(m, "memory.memsw.limit_in_bytes"), "");
  put(AT(m, "cgroup.procs"), ""); put(AT(m, "cgroup.event_control"), "");
  put(AT(m, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  put(AT(p, "pids.max"), "max\n"); put(AT(p, "cgroup.procs"), "");
  put(AT(f, "freezer.state"), "THAWED\n"); put(AT(f, "cgroup.procs"), "");
  ux_cg_limits lim = { 1ull << 30, 512 };
  ux_cg_run c;
  ok(ux_cg_run_create(&l, 7, &lim, &c, err, sizeof err) == 0, "run cgroup on fake v1: %s", err);
  ok(!strcmp(get(AT(m, "memory.limit_in_bytes"), buf, sizeof buf), "1073741824") &&
     !strcmp(get(AT(m, "memory.memsw.limit_in_bytes"), buf, sizeof buf), "1073741824") &&
     !strcmp(get(AT(p, "pids.max"), buf, sizeof buf), "512"),
     "memory, memory+swap and pids limits written");
  int fds[UX_CG_NDIR];
  ok(ux_cg_run_join_fds(&c, fds) == 3, "three cgroup.procs to join");
  ok(c.oom_fd >= 0 && ux_cg_run_oom_kills(&c) == 2, "the OOM watch is set; oom_kill read as 2");
  ok(!strcmp(c.tail, "/unsandboxd-test-1/run-7"), "tail %s", c.tail);
  ok(ux_cg_run_populated(&c) == 0, "an empty cgroup.procs: not populated");
  ok(ux_cg_run_freeze(&c, 1, 100) == 0 &&
     !strcmp(get(AT(f, "freezer.state"), buf, sizeof buf), "FROZEN"), "freeze writes FROZEN");
  ok(ux_cg_run_freeze(&c, 0, 50) == 0, "thaw (the fake reads back THAWED)");
  ux_cg_run_destroy(&c, 0);
  ok(c.oom_fd == -1 && c.dir_fd[0] == -1 && c.procs_fd[0] == -1, "destroy closes every fd");

  /* a limit file that is missing fails the creation */
  unlink(path(AT(p, "pids.max")));
  err[0] = '\0';
  ok(ux_cg_run_create(&l, 7, &lim, &c, err, sizeof err) == -1 && strstr(err, "pids.max"),
     "a limit that cannot be written fails the run: %s", err);
  ux_cg_teardown(&l);
  ok(l.parent_fd[0] == -1 && l.parent_fd[1] == -1, "teardown closes the parents");
#undef AT
}

static void test_fake_v2(void) {
  ux_cg_layout l;
  char buf[256], err[256] = "";
  put("cgroup", "0::/srv\n");
  put("fs/unified/srv/cgroup.controllers", "cpu memory pids\n");
  put("fs/unified/srv/cgroup.subtree_control", "cpu\n");
  put("fs/unified/srv/unsandboxd-test-2/cgroup.subtree_control", "");
  put("fs/unified/srv/unsandboxd-test-2/memory.max", "max\n");
  mountinfo(1, 0, 0, 0);
  if (ux_cg_detect(path("cgroup"), path("mountinfo"), &l) != UX_CG_V2) { ok(0, "fake v2"); return; }
  l.budget = 5ull << 30;
  ok(ux_cg_setup(&l, "unsandboxd-test-2", err, sizeof err) == 0, "setup on fake v2: %s", err);
  ok(!strcmp(get("fs/unified/srv/unsandboxd-test-2/memory.max", buf, sizeof buf), "5368709120"),
     "the memory budget is the parent's memory.max");
  ok(!strcmp(get("fs/unified/srv/cgroup.subtree_control", buf, sizeof buf), "+memory +pids") &&
     !strcmp(get("fs/unified/srv/unsandboxd-test-2/cgroup.subtree_control", buf, sizeof buf),
             "+memory +pids"), "memory and pids enabled for our parent and below it");

  const char *r = "fs/unified/srv/unsandboxd-test-2/run-9/";
  char q[300];
#define AT(file) (snprintf(q, sizeof q, "%s%s", r, file), q)
  put(AT("memory.max"), "max\n"); put(AT("memory.swap.max"), "max\n");
  put(AT("memory.oom.group"), "0\n"); put(AT("pids.max"), "max\n"); put(AT("cgroup.procs"), "");
  put(AT("memory.events"), "low 0\nhigh 0\nmax 7\noom 1\noom_kill 3\n");
  put(AT("cgroup.events"), "populated 1\nfrozen 0\n"); put(AT("cgroup.freeze"), "0\n");
  ux_cg_limits lim = { 2ull << 30, 100 };
  ux_cg_run c;
  ok(ux_cg_run_create(&l, 9, &lim, &c, err, sizeof err) == 0, "run cgroup on fake v2: %s", err);
  ok(!strcmp(get(AT("memory.max"), buf, sizeof buf), "2147483648") &&
     !strcmp(get(AT("memory.swap.max"), buf, sizeof buf), "0") &&
     !strcmp(get(AT("memory.oom.group"), buf, sizeof buf), "1") &&
     !strcmp(get(AT("pids.max"), buf, sizeof buf), "100"),
     "memory.max, memory.swap.max 0, memory.oom.group 1, pids.max");
  int fds[UX_CG_NDIR];
  ok(ux_cg_run_join_fds(&c, fds) == 1, "one cgroup.procs to join");
  ok(c.oom_fd >= 0 && ux_cg_run_oom_kills(&c) == 3, "memory.events watched; oom_kill 3");
  ok(ux_cg_run_populated(&c) == 1, "populated 1");
  errno = 0;
  ok(ux_cg_run_freeze(&c, 1, 60) == -1 && errno == ETIMEDOUT &&
     !strcmp(get(AT("cgroup.freeze"), buf, sizeof buf), "1"),
     "freeze writes cgroup.freeze and waits for frozen 1 (here: times out)");
  put(AT("cgroup.events"), "populated 0\nfrozen 1\n");
  ok(ux_cg_run_freeze(&c, 1, 60) == 0 && ux_cg_run_populated(&c) == 0, "frozen 1: done; populated 0");
  ux_cg_run_destroy(&c, 0);
  unlink(path(AT("memory.swap.max")));
  unlink(path(AT("memory.oom.group")));
  ok(ux_cg_run_create(&l, 9, &lim, &c, err, sizeof err) == 0,
     "a kernel without swap accounting or oom.group still gets a run");
  ux_cg_run_destroy(&c, 0);
  ux_cg_teardown(&l);
#undef AT
}

/* ---------------------------------------------------------------------
** The real cgroup2 mount, when there is one: freeze, kill, populated
** ------------------------------------------------------------------- */

/* Bytes readable from a non-blocking fd right now (drains it). */
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

/* A child in cgroup c that writes to *out as fast as it can. */
static pid_t writer(const ux_cg_run *c, int *out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  int fds[UX_CG_NDIR], n = ux_cg_run_join_fds(c, fds);
  pid_t pid = fork();
  if (pid == 0) {
    if (ux_cg_join(fds, n) != 0 || dup2(p[1], 1) < 0) _exit(126);
    execl("/bin/sh", "sh", "-c", "while :; do echo counting; done", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  *out = p[0];
  return pid;
}

/* Reaps pid within ms; its status, or -1. */
static int reap(pid_t pid, int ms) {
  int st;
  for (int i = 0; i < ms / 10; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid) return st;
    t_sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* Bytes that arrive on fd within ms (10 ms steps). */
static long drain_within(int fd, int ms) {
  long got = 0;
  for (int i = 0; i < ms / 10 && got == 0; i++) {
    got = drain(fd);
    if (!got) t_sleep_ms(10);
  }
  return got;
}

static int wait_empty(const ux_cg_run *c, int ms) {
  for (int i = 0; i < ms / 10; i++) {
    if (ux_cg_run_populated(c) == 0) return 1;
    t_sleep_ms(10);
  }
  return 0;
}

static void test_real_v2(void) {
  ux_cg_layout l;
  char err[256] = "", mnt[512], rt[512], self[512];
  ux_cg_detect("/proc/self/cgroup", "/proc/self/mountinfo", &l);
  FILE *f = fopen("/proc/self/mountinfo", "r");
  static char mi[65536], cg[4096];
  size_t n = f ? fread(mi, 1, sizeof mi - 1, f) : 0;
  if (f) fclose(f);
  mi[n] = '\0';
  f = fopen("/proc/self/cgroup", "r");
  n = f ? fread(cg, 1, sizeof cg - 1, f) : 0;
  if (f) fclose(f);
  cg[n] = '\0';
  if (geteuid() != 0 || ux_cg_find_mount(mi, "cgroup2", NULL, mnt, sizeof mnt, rt, sizeof rt) != 0 ||
      ux_cg_self_path(cg, NULL, self, sizeof self) != 0 || strcmp(rt, "/") != 0) {
    ok(1, "# SKIP no writable cgroup2 mount here");
    return;
  }
  /* the freezer, kill and populated flag of v2, without limits: this
  ** machine's cgroup2 may have no controllers at all */
  memset(&l, 0, sizeof l);
  for (int i = 0; i < UX_CG_NDIR; i++) l.parent_fd[i] = -1;
  l.version = UX_CG_V2;
  snprintf(l.base[UX_CG_MEM], sizeof l.base[UX_CG_MEM], "%s%s", mnt, strcmp(self, "/") ? self : "");
  l.freezer = 1;
  l.kill = 0;       /* first the path without cgroup.kill */
  if (ux_cg_setup(&l, NULL, err, sizeof err) != 0) { ok(1, "# SKIP cgroup2 not writable: %s", err); return; }
  ux_cg_limits none = { 0, 0 };
  ux_cg_run c;
  if (ux_cg_run_create(&l, 1, &none, &c, err, sizeof err) != 0) { ok(0, "real v2 run: %s", err); return; }
  int out;
  pid_t pid = writer(&c, &out);
  ok(pid > 0 && drain_within(out, 20000) > 0 && ux_cg_run_populated(&c) == 1,
     "real v2: a child counts in its cgroup");
  ok(ux_cg_run_freeze(&c, 1, 2000) == 0, "real v2: frozen (cgroup.events says so)");
  drain(out);
  t_sleep_ms(300);
  ok(drain(out) == 0, "real v2: no progress while frozen");
  ok(ux_cg_run_freeze(&c, 0, 2000) == 0, "real v2: thawed");
  ok(drain_within(out, 20000) > 0, "real v2: counting again once thawed");
  ok(ux_cg_run_freeze(&c, 1, 2000) == 0 && ux_cg_run_kill(&c) == 0, "real v2: kill a frozen run by pid");
  int st = reap(pid, 3000);
  ok(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && wait_empty(&c, 2000),
     "real v2: the frozen process died of SIGKILL; populated 0");
  close(out);

  char kill_file[PATH_MAX + 32];
  snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", l.base[UX_CG_MEM]);
  c.kill = access(kill_file, F_OK) == 0;      /* kernels since 5.14 */
  pid = writer(&c, &out);
  /* ready: the child counts, inside its cgroup (a kill before it joined
  ** would miss it) */
  ok(pid > 0 && drain_within(out, 20000) > 0 && ux_cg_run_populated(&c) == 1,
     "real v2: the next child counts in its cgroup");
  ok(ux_cg_run_kill(&c) == 0 && (st = reap(pid, 30000)) >= 0 && WIFSIGNALED(st) &&
     wait_empty(&c, 30000), "real v2: cgroup.kill ends the run");
  close(out);
  char run_dir[PATH_MAX + 128];
  snprintf(run_dir, sizeof run_dir, "%s/%s/run-1", l.base[UX_CG_MEM], l.name);
  ux_cg_run_destroy(&c, 2000);
  ok(access(run_dir, F_OK) != 0, "real v2: the run's cgroup is removed");
  ux_cg_teardown(&l);
  snprintf(run_dir, sizeof run_dir, "%s/%s", l.base[UX_CG_MEM], l.name);
  ok(access(run_dir, F_OK) != 0, "real v2: the parent is removed at teardown");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!mkdtemp(root)) { printf("Bail out! mkdtemp\n"); return 1; }
  test_parse();
  test_detect();
  test_fake_v1();
  test_fake_v2();
  test_real_v2();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) printf("# cleanup of %s failed\n", root);
  return tap_done();
}
