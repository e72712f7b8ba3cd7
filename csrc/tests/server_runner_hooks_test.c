/*
** The runner's limits and hooks, end to end with real bubblewrap runs:
** memory and process limits counted per run (cgroup), the semitrusted
** network namespace, the spec hooks (argv, in/out/pass fds, read-only
** binds, work_mount) and quiescing by work directory (freeze, kill).
** Must run as root; otherwise skipped.
*/
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stddef.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/cgroup.h"
#include "server/sandbox/run_object.h"         /* ux_child_mntns */
#include "server/sandbox/runner.h"
#include "tests/tap.h"

static ux_run_spec spec_for(const char *lang, const char *code) {
  ux_run_spec s;
  memset(&s, 0, sizeof s);
  s.language = lang;
  s.code = code;
  s.code_len = code ? strlen(code) : 0;
  s.ttl_s = 30;
  s.vcpu = 1;
  return s;
}

static int run(const ux_run_spec *s, ux_run_result *res, char *err, size_t errlen) {
  ux_run *r = ux_run_start(s, err, errlen);
  if (!r) { memset(res, 0, sizeof *res); return -1; }
  ux_run_wait(r, res);
  return 0;
}

static void show(const ux_run_result *r) {
  printf("#   exit=%d timed_out=%d cancelled=%d oom=%d elapsed=%ld error='%s'\n", r->exit_code,
         r->timed_out, r->cancelled, r->oom_killed, r->elapsed_ms, r->error);
  printf("#   stdout: %.300s\n#   stderr: %.300s\n", r->out ? r->out : "", r->err ? r->err : "");
}

/* Runs code and checks one condition on the result. */
static void expect(const char *lang, const char *code, int ttl, int vcpu, const char *what,
                   int (*good)(const ux_run_result *)) {
  ux_run_spec s = spec_for(lang, code);
  s.ttl_s = ttl;
  s.vcpu = vcpu;
  ux_run_result r;
  char err[256] = "";
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "%s: starts (%s)", what, err); return; }
  int g = good(&r);
  ok(g, "%s", what);
  if (!g) show(&r);
  ux_run_result_free(&r);
}

/* ---------------------------------------------------------------------
** Limits
** ------------------------------------------------------------------- */

/* Killed for its memory, all of it: never by its ttl (a long one, which
** a process left sleeping would reach) and before it could say done. */
static int oom_whole(const ux_run_result *r) {
  return r->oom_killed && r->exit_code == 137 && !r->timed_out && r->out && !strstr(r->out, "done");
}
static int timed_out(const ux_run_result *r) { return r->timed_out && !r->oom_killed; }
static int pids_capped(const ux_run_result *r) {
  int n = r->out ? atoi(r->out) : 0;
  return n >= 400 && n < 512 && !r->oom_killed;
}
static int tmp_fails(const ux_run_result *r) {
  return (r->oom_killed || (r->out && strstr(r->out, "write failed"))) && r->out &&
         !strstr(r->out, "wrote all");
}

static void test_limits(void) {
  const ux_isolation *iso = ux_runner_isolation();
  if (!strcmp(iso->cgroup, "none")) { ok(1, "# SKIP no cgroup here: %s", iso->detail); return; }
  ok(iso->memory && iso->pids, "isolation: cgroup %s with memory and pids", iso->cgroup);
  expect("python",
         "import mmap\nm = mmap.mmap(-1, 3 << 30, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)\n"
         "for i in range(0, 3 << 30, 4096): m[i] = 1\nprint('done')\n", 300, 1,
         "3 GiB of shared anonymous memory at 1 vcpu: killed, reported", oom_whole);
  expect("python",
         "import os, time\nfor k in range(3):\n  if os.fork() == 0:\n"
         "    b = bytearray(900 << 20)\n    time.sleep(600)\n    os._exit(0)\n"
         "for k in range(3): os.wait()\nprint('done')\n", 300, 1,
         "three processes of 900 MiB: the whole run is killed together", oom_whole);
  expect("bash",
         "for i in $(seq 40); do head -c 64M /dev/zero > /tmp/f$i || { echo write failed; break; }; "
         "done; echo wrote all", 60, 1, "filling /tmp past the memory limit fails", tmp_fails);
  expect("python",
         "import os, time, sys\nn = 0\ntry:\n  while n < 2000:\n    if os.fork() == 0:\n"
         "      time.sleep(20); os._exit(0)\n    n += 1\nexcept OSError:\n  pass\n"
         "print(n); sys.stdout.flush(); os._exit(0)\n", 30, 1,
         "forks stop below the pids limit of 512 per run", pids_capped);
  expect("bash", "while true; do sleep 0.1 & done", 2, 1,
         "a loop of short background processes runs to its ttl (not cut by nproc)", timed_out);

  ux_run_spec s = spec_for("bash", "true");
  s.vcpu = 3;
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.memory_limit_mb == 3072 && !r.oom_killed && r.exit_code == 0, "vcpu 3: 3072 MiB");
    ux_run_result_free(&r);
  }

  /* nothing of the runs is left in our parent cgroup */
  ux_cg_layout l;
  char name[64], p[PATH_MAX + 200];
  ux_cg_detect("/proc/self/cgroup", "/proc/self/mountinfo", &l);
  ux_cg_own_name(name, sizeof name);
  snprintf(p, sizeof p, "%s/%s", l.base[UX_CG_MEM], name);
  DIR *d = opendir(p);
  int runs = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) runs += !strncmp(e->d_name, "run-", 4);
  if (d) closedir(d);
  ok(d != NULL && runs == 0, "every run's cgroup was removed (%s: %d left)", p, runs);
}

/* ---------------------------------------------------------------------
** Network
** ------------------------------------------------------------------- */

static void test_network(void) {
  if (strcmp(ux_runner_isolation()->network, "slirp4netns") != 0) {
    ok(1, "# SKIP slirp4netns not installed");
    return;
  }
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t alen = sizeof a;
  int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un ua = { .sun_family = AF_UNIX };
  char abs_name[64];
  int an = snprintf(abs_name, sizeof abs_name, "unsb-test-%ld", (long)getpid());
  memcpy(ua.sun_path + 1, abs_name, (size_t)an);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 8) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0 || us < 0 ||
      bind(us, (struct sockaddr *)&ua, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + an)) != 0 ||
      listen(us, 8) != 0) {
    ok(0, "listeners"); return;
  }
  char code[1500];
  snprintf(code, sizeof code,
    "import socket\n"
    "def tcp(host):\n  s = socket.socket(); s.settimeout(3)\n"
    "  try:\n    s.connect((host, %d)); return 'connected'\n  except OSError as e:\n    return 'refused'\n"
    "u = socket.socket(socket.AF_UNIX)\n"
    "try:\n  u.connect('\\0%s'); au = 'connected'\nexcept OSError:\n  au = 'refused'\n"
    "print('lo', tcp('127.0.0.1'), 'host', tcp('10.0.2.2'), 'abstract', au)\n"
    "try:\n  print(open('/etc/resolv.conf').read().strip())\nexcept OSError:\n  print('no resolv.conf')\n"
    "print(' '.join(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('10.0.2.3', 53))\n"
    "print('addr', s.getsockname()[0])\n", ntohs(a.sin_port), abs_name);
  ux_run_spec s = spec_for("python", code);
  s.network = 1;
  ux_run_result r;
  char err[256] = "";
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "semitrusted run: %s", err); goto out; }
  ok(r.out && strstr(r.out, "lo refused host refused abstract refused\n"),
     "semitrusted: no host 127.0.0.1, no 10.0.2.2 to it, no host abstract socket");
  ok(r.out && strstr(r.out, "nameserver 10.0.2.3\n") && strstr(r.out, "lo tap0\n") &&
     strstr(r.out, "addr 10.0.2.100\n"), "semitrusted: a tap device with 10.0.2.100, DNS 10.0.2.3");
  if (!r.out || !strstr(r.out, "addr 10.0.2.100")) show(&r);
  ux_run_result_free(&r);
  s.network = 0;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out && strstr(r.out, "lo refused host refused abstract refused\n") &&
       strstr(r.out, "\nlo\n"), "zerotrust: loopback only, nothing of the host");
    ux_run_result_free(&r);
  }
  struct sockaddr_in peer;
  socklen_t pl = sizeof peer;
  fcntl(ls, F_SETFL, O_NONBLOCK);
  fcntl(us, F_SETFL, O_NONBLOCK);
  int c1 = accept(ls, (struct sockaddr *)&peer, &pl), c2 = accept(us, NULL, NULL);
  ok(c1 < 0 && c2 < 0, "the listeners never saw a connection");
  if (c1 >= 0) close(c1);
  if (c2 >= 0) close(c2);
out:
  close(ls);
  close(us);
}

/* ---------------------------------------------------------------------
** Hooks: argv, in_fd, out_fd, pass_fd, ro_binds, work_mount
** ------------------------------------------------------------------- */

static void test_fds(void) {
  int in[2], out[2], pass[2];
  if (pipe(in) || pipe(out) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pass)) {
    ok(0, "pipes"); return;
  }
  if (write(in[1], "input-data\n", 11) != 11) ok(0, "write");
  close(in[1]);
  ux_run_spec s = spec_for("bash", "cat; echo to-stderr >&2; echo over-10 >&10; ls /proc/self/fd | tr '\\n' ' '");
  s.in_fd = in[0];
  s.out_fd = out[1];
  s.pass_fd = pass[1];
  ux_run_result r;
  char err[256] = "", buf[256] = "";
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "fd run: %s", err); return; }
  close(out[1]);
  close(pass[1]);
  ssize_t n = read(out[0], buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = '\0';
  ok(!strncmp(buf, "input-data\n", 11) && r.out_len == 0 && r.err && !strcmp(r.err, "to-stderr\n"),
     "in_fd is stdin, stdout goes to out_fd, stderr is still captured");
  /* ls sorts by name; 3 is its own directory fd */
  ok(strstr(buf, "\n0 1 10 2 3 ") != NULL, "fd 10 is the passed fd, nothing else leaks (%s)", buf + 11);
  n = read(pass[0], buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = '\0';
  ok(!strcmp(buf, "over-10\n"), "the program wrote to the passed fd (%s)", buf);
  ux_run_result_free(&r);
  close(in[0]); close(out[0]); close(pass[0]);

  struct { int in, out, pass; const char *what; } bad[] = {
    { 999, 0, 0, "in_fd 999 is not an open" }, { 0, -3, 0, "out_fd -3 is not an open" },
    { 0, 0, 998, "pass_fd 998 is not an open" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ux_run_spec b = spec_for("bash", "true");
    b.in_fd = bad[i].in; b.out_fd = bad[i].out; b.pass_fd = bad[i].pass;
    ok(ux_run_start(&b, err, sizeof err) == NULL && strstr(err, bad[i].what), "refused: %s", err);
  }
  int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ux_run_spec b = spec_for("bash", "true");
  b.out_fd = ro;
  ok(ux_run_start(&b, err, sizeof err) == NULL && strstr(err, "not open for writing"),
     "a read-only out_fd is refused: %s", err);
  close(ro);
}

static void test_argv(void) {
  const char *argv[] = { "printf", "%s|%s\\n", "a b", "$HOME", NULL };
  ux_run_spec s = spec_for(NULL, NULL);
  s.argv = argv;
  ux_run_result r;
  char err[256] = "";
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "argv run: %s", err); return; }
  ok(r.exit_code == 0 && r.out && !strcmp(r.out, "a b|$HOME\n") && !r.error[0],
     "argv runs the program with its arguments as given");
  if (r.exit_code) show(&r);
  ux_run_result_free(&r);
  const char *missing[] = { "/nonexistent/prog", NULL };
  s.argv = missing;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.exit_code == 127 && !r.error[0], "a missing program: exit 127, not a sandbox failure");
    ux_run_result_free(&r);
  }
  const char *empty[] = { NULL }, *blank[] = { "", NULL };
  s.argv = empty;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "needs a program"), "empty argv: %s", err);
  s.argv = blank;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "needs a program"), "argv[0] \"\": refused");
  s.argv = argv;
  s.code = "echo";
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "exclude"), "argv with code: %s", err);
  static const char *many[1100];
  for (int i = 0; i < 1099; i++) many[i] = "x";
  many[1099] = NULL;
  s.code = NULL;
  s.argv = many;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "too large"), "1099 arguments: %s", err);
}

static void test_binds(void) {
  /* a file below a root-only directory: bound from an fd */
  char dir[] = "/root/unsb-ro-XXXXXX", file[64], data[64];
  if (!mkdtemp(dir)) { ok(0, "ro dir"); return; }
  chmod(dir, 0700);
  snprintf(file, sizeof file, "%s/agent", dir);
  snprintf(data, sizeof data, "%s/data", dir);
  FILE *f = fopen(file, "w");
  if (f) { fputs("#!/bin/sh\necho agent \"$@\"\n", f); fclose(f); }
  chmod(file, 0755);
  f = fopen(data, "w");
  if (f) { fputs("ro-data", f); fclose(f); }
  chmod(data, 0644);
  int fd = open(file, O_PATH | O_CLOEXEC);
  ux_ro_bind binds[] = { { fd, NULL, "/opt/unsb/agent" }, { 0, data, "/srv/data.txt" } };
  const char *argv[] = { "/opt/unsb/agent", "up", NULL };
  ux_run_spec s = spec_for(NULL, NULL);
  s.argv = argv;
  s.ro_binds = binds;
  s.n_ro_binds = 2;
  s.work_mount = "/workspace";
  ux_run_result r;
  char err[256] = "";
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "ro bind run: %s", err); goto done; }
  ok(r.exit_code == 0 && r.out && !strcmp(r.out, "agent up\n"),
     "a file under a root-only directory, bound from its fd, runs inside");
  if (r.exit_code) show(&r);
  ux_run_result_free(&r);
  const char *check[] = { "sh", "-c", "cat /srv/data.txt; echo; echo x > /srv/data.txt 2>/dev/null "
                          "|| echo read-only; pwd; echo $HOME; touch here && ls /workspace; "
                          "test -e /sandbox || echo no-sandbox", NULL };
  s.argv = check;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out && !strcmp(r.out, "ro-data\nread-only\n/workspace\n/workspace\nhere\nno-sandbox\n"),
       "a path bind is readable, not writable; work_mount is cwd, HOME and the work directory");
    if (!r.out || strncmp(r.out, "ro-data", 7)) show(&r);
    ux_run_result_free(&r);
  }
  struct { const char *dest; const char *wm; int n; const char *why; } bad[] = {
    { "relative/x", NULL, 1, "absolute" }, { "/", NULL, 1, "absolute" },
    { "/usr/bin/agent", NULL, 1, "/usr" }, { "/proc/x", NULL, 1, "/proc" },
    { "/opt/../etc/x", NULL, 1, "'..'" }, { "/opt//x", NULL, 1, "empty" },
    { "/sandbox/agent", NULL, 1, "overlaps the work" }, { "/w/x", "/w", 1, "overlaps the work" },
    { "/opt/x", "/tmp/w", 1, "work_mount" }, { "/opt/x", "rel", 1, "work_mount" },
    { "/opt/x", NULL, 9, "at most 8" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ux_ro_bind many[9];
    for (int k = 0; k < 9; k++) many[k] = (ux_ro_bind){ fd, NULL, bad[i].dest };
    s.ro_binds = many;
    s.n_ro_binds = (size_t)bad[i].n;
    s.work_mount = bad[i].wm;
    err[0] = '\0';
    ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, bad[i].why),
       "refused: dest %s work_mount %s: %s", bad[i].dest, bad[i].wm ? bad[i].wm : "-", err);
  }
  ux_ro_bind dup[] = { { fd, NULL, "/opt/a" }, { fd, NULL, "/opt/a/b" } };
  ux_ro_bind nosrc[] = { { 0, "relative/path", "/opt/a" } };
  ux_ro_bind gone[] = { { 0, "/nonexistent/unsb", "/opt/a" } };
  s.work_mount = NULL;
  s.ro_binds = dup; s.n_ro_binds = 2;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "overlap"), "overlapping binds: %s", err);
  s.ro_binds = nosrc; s.n_ro_binds = 1;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "absolute source"), "relative source: %s", err);
  s.ro_binds = gone;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "cannot open the source"),
     "a missing source: %s", err);
done:
  close(fd);
  unlink(file); unlink(data); rmdir(dir);
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0) {
    printf("1..0 # SKIP needs root and /usr/bin/bwrap\n");
    return 0;
  }
  char tmpdir[] = "/var/tmp/unsb-hooktest-XXXXXX";
  if (!mkdtemp(tmpdir)) { printf("Bail out! mkdtemp\n"); return 1; }
  ux_runner_set_tmpdir(tmpdir);
  ux_isolation iso;
  ux_runner_init(1, &iso);
  printf("# isolation: %s\n", iso.detail);
  ux_child_mntns();           /* made once per process, kept open */
  int fds_before = count_fds();
  test_limits();
  test_network();
  test_fds();
  test_argv();
  test_binds();
  ok(rmdir(tmpdir) == 0, "every run directory was removed");
  ok(count_fds() == fds_before, "no fd leaked (%d before, %d after)", fds_before, count_fds());
  ux_runner_shutdown();
  return tap_done();
}
