/*
** The sandbox runner, end to end: every check is a real bubblewrap run.
** Must run as root (the runner drops to per-slot uids); otherwise the
** whole file is skipped.
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
#include <time.h>
#include <unistd.h>

#include "server/sandbox/run_object.h"         /* ux_child_mntns */
#include "server/sandbox/runner.h"
#include "tests/tap.h"

#ifndef UX_SB_UID_BASE
#define UX_SB_UID_BASE 200000u
#endif
#define UID_LO UX_SB_UID_BASE
#define UID_HI (UX_SB_UID_BASE + 256)

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

/* Runs a spec to its end; 0, or -1 when it could not start (err set). */
static int run(const ux_run_spec *s, ux_run_result *res, char *err, size_t errlen) {
  ux_run *r = ux_run_start(s, err, errlen);
  if (!r) { memset(res, 0, sizeof *res); return -1; }
  ux_run_wait(r, res);
  return 0;
}

static int run_code(const char *lang, const char *code, ux_run_result *res) {
  ux_run_spec s = spec_for(lang, code);
  char err[256] = "";
  int rc = run(&s, res, err, sizeof err);
  if (rc != 0) printf("# start failed: %s\n", err);
  return rc;
}

/* A run whose work takes no set time (filling memory, forking hundreds of
** commands): its ttl is one only a hung run reaches, so a loaded machine
** makes it slower, never a timeout. */
#define UNTIMED_TTL_S 300
static int run_untimed(const char *lang, const char *code, ux_run_result *res) {
  ux_run_spec s = spec_for(lang, code);
  char err[256] = "";
  s.ttl_s = UNTIMED_TTL_S;
  int rc = run(&s, res, err, sizeof err);
  if (rc != 0) printf("# start failed: %s\n", err);
  return rc;
}

static int has_lang(const char *name) { return ux_language_known(name); }

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

/* Calls visit(text of /proc/PID/status, ctx) for each process of this
** test's runs (of_this_test); returns
** how many visits answered 1. A visit answering 2 stops the walk. */
static int each_status(int (*visit)(const char *status, void *ctx), void *ctx) {
  DIR *d = opendir("/proc");
  int n = 0, v = 0;
  struct dirent *e;
  while (d && v != 2 && (e = readdir(d))) {
    char path[300], buf[2048];
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || !of_this_test(e->d_name)) continue;
    snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) continue;
    buf[k] = '\0';
    v = visit(buf, ctx);
    if (v) n++;
  }
  if (d) closedir(d);
  return n;
}

static int is_zombie(const char *status) {
  const char *st = strstr(status, "\nState:");
  return st && st[8] && strncmp(st + 8, "\tZ", 2) == 0;
}

static int child_of_ours(const char *status) {
  const char *pp = strstr(status, "\nPPid:");
  unsigned long ppid;
  return pp && sscanf(pp + 6, "%lu", &ppid) == 1 && ppid == (unsigned long)getpid();
}

static int live_of_uid(const char *status, void *ctx) {
  unsigned long uid = *(unsigned long *)ctx, a, b, c, f;
  const char *u = strstr(status, "\nUid:");
  if (is_zombie(status) || !u || sscanf(u + 5, "%lu %lu %lu %lu", &a, &b, &c, &f) != 4) return 0;
  return uid ? (a == uid || b == uid || c == uid || f == uid)
             : ((a >= UID_LO && a < UID_HI) || (b >= UID_LO && b < UID_HI));
}

/* Live processes (not zombies) of host uid `uid`, or of any slot uid
** when uid is 0. */
static int uid_procs(unsigned long uid) { return each_status(live_of_uid, &uid); }

static int slot_child(const char *status, void *ctx) {
  const char *u = strstr(status, "\nUid:");
  unsigned long uid;
  if (!child_of_ours(status) || !u || sscanf(u + 5, "%lu", &uid) != 1 ||
      uid < UID_LO || uid >= UID_HI) return 0;
  *(unsigned long *)ctx = uid;
  return 2;
}

/* The host uid of the run in progress: that of our child process (the
** outer bwrap) once it has become the slot uid. Waits for that, in 10 ms
** steps, at most 20 s; 0 if it never did. */
static unsigned long running_uid(void) {
  unsigned long found = 0;
  for (int i = 0; i < 2000 && !found; i++) {
    if (each_status(slot_child, &found) == 0) t_sleep_ms(10);
  }
  return found;
}

/* Starts, notes the uid, waits. */
static int run_uid(const ux_run_spec *s, ux_run_result *res, unsigned long *uid) {
  char err[256];
  ux_run *r = ux_run_start(s, err, sizeof err);
  if (!r) { printf("# start failed: %s\n", err); return -1; }
  *uid = running_uid();
  ux_run_wait(r, res);
  return 0;
}

static void show(const ux_run_result *r) {
  printf("#   exit=%d timed_out=%d cancelled=%d elapsed=%ld error='%s'\n",
         r->exit_code, r->timed_out, r->cancelled, r->elapsed_ms, r->error);
  printf("#   stdout: %.300s\n#   stderr: %.300s\n",
         r->out ? r->out : "", r->err ? r->err : "");
}

/* ---------------------------------------------------------------------
** Hello in each language
** ------------------------------------------------------------------- */

static void hello(const char *lang, const char *code, int want_exit) {
  if (!has_lang(lang)) { ok(1, "# SKIP %s not installed", lang); return; }
  ux_run_result r;
  if (run_code(lang, code, &r) != 0) { ok(0, "%s starts", lang); return; }
  int good = r.out && strcmp(r.out, "hello\n") == 0 && r.exit_code == want_exit &&
             !r.error[0] && !r.timed_out;
  ok(good, "%s: prints hello and exits %d", lang, want_exit);
  if (!good) show(&r);
  ux_run_result_free(&r);
}

/* Where a language is in the service's order (spec §5.6), as far as this
** test needs it. */
static int spec_rank(const char *name) {
  static const char *const order[] = {
    "python", "javascript", "typescript", "ruby", "php", "perl", "bash", "sh", "lua", "r", "go", "rust", "c",
    "cpp", "java", "kotlin", "objc", "csharp", "fsharp", "haskell", "ocaml", "clojure", "scheme", "erlang",
    "elixir", "julia", "d", "nim", "zig", "v", "crystal", "dart", "groovy", "fortran", "cobol", "tcl", "raku",
    "commonlisp", "prolog", "forth", NULL };
  for (int i = 0; order[i]; i++) if (!strcmp(order[i], name)) return i;
  return 100;
}

static void test_languages(void) {
  size_t n = 0;
  const char *const *names = ux_languages(&n);
  int ordered = 1, py = 0;
  for (size_t i = 0; i < n; i++) {
    if (i && spec_rank(names[i - 1]) > spec_rank(names[i])) ordered = 0;
    if (!strcmp(names[i], "python")) py = 1;
    printf("# language: %s\n", names[i]);
  }
  ok(n >= 6 && ordered && names[n] == NULL && !strcmp(names[0], "python"),
     "ux_languages: %zu names, in the service's order", n);
  ok(py && ux_language_known("bash") && !ux_language_known("cobolx") &&
     !ux_language_known(NULL), "ux_language_known");

  char err[512] = "";
  int rc = ux_runner_check(err, sizeof err);
  ok(rc == 0, "ux_runner_check passes");
  if (rc) printf("#   %s\n", err);

  hello("python", "print('hello')\nimport sys; sys.exit(3)\n", 3);
  hello("bash", "echo hello; exit 4", 4);
  hello("sh", "echo hello", 0);
  hello("lua", "print('hello') os.exit(5)", 5);
  hello("javascript", "console.log('hello'); process.exitCode = 6;", 6);
  hello("perl", "print \"hello\\n\"; exit 7;", 7);
  hello("tcl", "puts hello", 0);
  hello("c", "#include <stdio.h>\nint main(void){puts(\"hello\");return 8;}\n", 8);
  hello("cpp", "#include <iostream>\nint main(){std::cout<<\"hello\"<<std::endl;return 9;}\n", 9);
  hello("fortran", "program h\n  print '(a)', 'hello'\nend program h\n", 0);
  hello("java", "public class Main { public static void main(String[] a) {"
        " System.out.println(\"hello\"); System.exit(10); } }\n", 10);
}

static void test_compile_error(void) {
  ux_run_result r;
  if (run_code("c", "int main(void) { return undefined_thing; }\n", &r) != 0) {
    ok(0, "compile error run starts"); return;
  }
  ok(r.exit_code != 0 && r.err && strstr(r.err, "undefined_thing") && !r.error[0],
     "a compile error is a normal run: compiler stderr, non-zero exit");
  ux_run_result_free(&r);
}

/* ---------------------------------------------------------------------
** Limits
** ------------------------------------------------------------------- */

static void test_ttl(void) {
  ux_run_spec s = spec_for("bash",
    "for i in 1 2 3 4; do (while true; do :; done) & done\n"
    "sleep 1000 &\nwhile true; do :; done\n");
  s.ttl_s = 2;
  ux_run_result r;
  unsigned long uid;
  if (run_uid(&s, &r, &uid) != 0) { ok(0, "ttl run starts"); return; }
  /* not before its ttl; the upper bound only tells "ended by the ttl"
  ** apart from "ran on", far from what a busy machine adds */
  ok(r.timed_out && !r.cancelled && r.elapsed_ms >= 1900 && r.elapsed_ms < 2000 + 10000,
     "ttl 2: timed out after %ld ms", r.elapsed_ms);
  ok(r.exit_code == 137, "killed: exit code 137 (got %d)", r.exit_code);
  ok(uid >= UID_LO && uid < UID_HI && uid_procs(uid) == 0,
     "no process of the run's uid %lu survives the ttl", uid);
  ux_run_result_free(&r);
}

static void test_fork_bomb(void) {
  ux_run_spec s = spec_for("bash", ":(){ :|:& };:\nwait\nsleep 100\n");
  s.ttl_s = 3;
  ux_run_result r;
  unsigned long uid;
  if (run_uid(&s, &r, &uid) != 0) { ok(0, "fork bomb starts"); return; }
  ok(r.timed_out && r.elapsed_ms < 3000 + 10000,
     "fork bomb contained: ended by its ttl after %ld ms (ttl 3 s)", r.elapsed_ms);
  ok(uid >= UID_LO && uid_procs(uid) == 0, "no process of the fork bomb (uid %lu) remains", uid);
  ux_run_result_free(&r);
  /* the host still forks fine and the next run works */
  hello("bash", "echo hello", 0);
}

static void test_memory(void) {
  const ux_isolation *iso = ux_runner_isolation();
  int cg = strcmp(iso->cgroup, "none") != 0;
  ux_run_result r;
  if (run_untimed("python", "b = bytearray(8 << 30)\nprint('allocated')\n", &r) != 0) {
    ok(0, "memory hog starts"); return;
  }
  /* a cgroup kills it (and says so); RLIMIT_DATA makes the allocation fail */
  ok(r.exit_code != 0 && r.out && !strstr(r.out, "allocated") &&
     (cg ? r.oom_killed && r.exit_code == 137 && r.memory_limit_mb == 1024
         : r.err && strstr(r.err, "MemoryError") != NULL),
     "python cannot allocate 8 GiB (%s)", cg ? "OOM-killed at 1024 MiB" : "MemoryError");
  if (!r.oom_killed && cg) show(&r);
  ux_run_result_free(&r);

  /* the rlimits as the program sees them; -u and -d only without cgroups */
  ux_run_spec s = spec_for("bash", "ulimit -n; ulimit -f; ulimit -c; ulimit -t; ulimit -u; ulimit -d");
  char err[256];
  s.vcpu = 2;
  s.ttl_s = 7;
  if (run(&s, &r, err, sizeof err) == 0) {
    /* -f in 1024-byte blocks; -d in KiB; -t = ttl x cpus + 5 */
    char want[128];
    int n = snprintf(want, sizeof want, "256\n65536\n0\n%ld\n", 7 * sysconf(_SC_NPROCESSORS_ONLN) + 5);
    if (!cg) snprintf(want + n, sizeof want - n, "512\n2097152\n");
    ok(r.out && !strncmp(r.out, want, strlen(want)),
       "rlimits: nofile 256, fsize 64 MiB, core 0, cpu ttl x cpus + 5%s",
       cg ? "" : ", nproc 512, data 2 GiB at vcpu 2");
    if (!r.out || strncmp(r.out, want, strlen(want))) show(&r);
    ux_run_result_free(&r);
  }
}

static void test_output_cap(void) {
  ux_run_result r;
  if (run_code("python", "import sys\nsys.stdout.write('x' * (10 << 20))\n"
               "sys.stderr.write('done')\n", &r) != 0) {
    ok(0, "big output starts"); return;
  }
  ok(r.out_len == (1u << 20) && r.out_truncated && r.exit_code == 0,
     "10 MiB of stdout kept to 1 MiB, truncated flag set (len %zu)", r.out_len);
  ok(r.err && !strcmp(r.err, "done") && !r.err_truncated, "stderr intact beside it");
  ux_run_result_free(&r);

  ux_run_spec s = spec_for("bash", "head -c 5000 /dev/zero | tr '\\0' y; echo -n abc >&2");
  s.output_cap = 100;
  char err[256];
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out_len == 100 && r.out_truncated && r.err_len == 3 && !r.err_truncated,
       "output_cap 100 applies per stream");
    ux_run_result_free(&r);
  }
}

static void test_file_size(void) {
  ux_run_result r;
  if (run_code("bash", "head -c 100000000 /dev/zero > big; echo rc=$?; stat -c %s big", &r) == 0) {
    ok(r.out && strstr(r.out, "67108864"), "RLIMIT_FSIZE caps a file at 64 MiB");
    ux_run_result_free(&r);
  }
}

/* ---------------------------------------------------------------------
** Isolation
** ------------------------------------------------------------------- */

static void test_canary(void) {
  char vdir[] = "/var/tmp/unsb-canary-XXXXXX";
  char rdir[] = "/root/unsb-canary-XXXXXX";
  if (!mkdtemp(vdir) || !mkdtemp(rdir)) { ok(0, "canary dirs"); return; }
  chmod(vdir, 0755);
  chmod(rdir, 0755);
  char vfile[128], rfile[128], code[1024];
  snprintf(vfile, sizeof vfile, "%s/secret", vdir);
  snprintf(rfile, sizeof rfile, "%s/secret", rdir);
  FILE *f = fopen(vfile, "w"); fputs("CANARY-VAR-7f3a", f); fclose(f);
  f = fopen(rfile, "w"); fputs("CANARY-ROOT-7f3a", f); fclose(f);
  chmod(vfile, 0644); chmod(rfile, 0644);
  snprintf(code, sizeof code,
           "cat %s %s 2>/dev/null; ls / ; ls /work /home /root /var 2>/dev/null;"
           " cat /etc/shadow 2>/dev/null; ls /etc; true",
           vfile, rfile);
  ux_run_result r;
  if (run_code("bash", code, &r) == 0) {
    ok(r.out && !strstr(r.out, "CANARY"), "host files outside the sandbox are unreadable");
    ok(r.out && !strstr(r.out, "work\n") && !strstr(r.out, "home\n") &&
       !strstr(r.out, "root\n") && !strstr(r.out, "var\n") && strstr(r.out, "sandbox\n"),
       "the root holds no /work, /home, /root or /var");
    ok(r.out && !strstr(r.out, "shadow") && strstr(r.out, "passwd"),
       "/etc is minimal");
    if (strstr(r.out ? r.out : "", "CANARY")) show(&r);
    ux_run_result_free(&r);
  }
  unlink(vfile); unlink(rfile); rmdir(vdir); rmdir(rdir);
}

static void test_network(void) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t alen = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 8) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
    ok(0, "listening socket"); return;
  }
  char code[512];
  snprintf(code, sizeof code,
           "import socket\ns = socket.socket()\ns.settimeout(3)\n"
           "try:\n  s.connect(('127.0.0.1', %d)); print('connected')\n"
           "except OSError as e:\n  print('refused', e)\n", ntohs(a.sin_port));
  ux_run_spec s = spec_for("python", code);
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out && strstr(r.out, "refused"), "zerotrust cannot reach 127.0.0.1 of the host");
    ux_run_result_free(&r);
  }
  s.network = 1;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.out && !strstr(r.out, "connected"), "nor can semitrusted (its own network namespace)");
    if (!r.out || strstr(r.out, "connected")) show(&r);
    ux_run_result_free(&r);
  } else ok(0, "semitrusted run starts: %s", err);
  close(ls);
}

static void test_readonly(void) {
  ux_run_result r;
  const char *code =
    "for p in /usr/unsb-x /etc/unsb-x /unsb-x /code/unsb-x /bin/unsb-x /proc/unsb-x; do\n"
    "  if touch $p 2>/dev/null; then echo WROTE $p; fi\n"
    "done\n"
    "touch /sandbox/ok /tmp/ok && echo writable\n"
    "id -u; id -g; hostname; ls /proc/self/fd | tr '\\n' ' '; echo\n"
    "cat; echo stdin-done\n";
  if (run_code("bash", code, &r) != 0) { ok(0, "readonly run starts"); return; }
  ok(r.out && !strstr(r.out, "WROTE") && strstr(r.out, "writable"),
     "only /sandbox and /tmp are writable");
  ok(access("/usr/unsb-x", F_OK) != 0 && access("/etc/unsb-x", F_OK) != 0,
     "nothing appeared on the host");
  ok(r.out && strstr(r.out, "\n1000\n1000\nsandbox\n"), "uid/gid 1000, hostname sandbox");
  ok(r.out && strstr(r.out, "\n0 1 2 3 \n"), "no inherited fds beyond 0-2");
  ok(r.out && strstr(r.out, "stdin-done"), "stdin is /dev/null");
  if (r.out && !strstr(r.out, "\n0 1 2 3 \n")) show(&r);
  ux_run_result_free(&r);

  if (run_code("bash", "kill -9 $$", &r) == 0) {
    ok(r.exit_code == 137 && !r.timed_out, "killed by a signal: 128+9");
    ux_run_result_free(&r);
  }
}

/* ---------------------------------------------------------------------
** Files, env, workdir, artifacts
** ------------------------------------------------------------------- */

static void test_files_env(void) {
  ux_file files[] = {
    { "a.txt", (unsigned char *)"alpha", 5, 0 },
    { "dir/sub/b.txt", (unsigned char *)"beta", 4, 0 },
  };
  const char *env[] = { "FOO=bar baz", "_X1=", "LANG=C" };
  setenv("UNSB_HOST_ONLY", "leak", 1);
  ux_run_spec s = spec_for("bash",
    "cat a.txt; echo; cat dir/sub/b.txt; echo; echo \"$FOO|$_X1|$LANG|$HOME|$PATH|$PWD\";"
    " echo \"host:${UNSB_HOST_ONLY:-none}\"");
  s.files = files; s.n_files = 2;
  s.env = env; s.n_env = 3;
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "files run starts: %s", err); return; }
  ok(r.out && strstr(r.out, "alpha\nbeta\n"), "input files placed by relative path");
  ok(r.out && strstr(r.out, "bar baz||C|/sandbox|/usr/local/bin:/usr/bin:/bin|/sandbox\n"),
     "env applied, HOME and cwd /sandbox, PATH set");
  ok(r.out && strstr(r.out, "host:none"), "the server's environment is not inherited");
  if (!r.out || !strstr(r.out, "host:none")) show(&r);
  ux_run_result_free(&r);

  const char *bad_env[] = { "1A=x" };
  s.env = bad_env; s.n_env = 1;
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "1A"),
     "a bad env name is rejected: %s", err);
}

static void bad_name(const char *name, const char *what) {
  ux_file f = { (char *)name, (unsigned char *)"x", 1, 0 };
  ux_run_spec s = spec_for("bash", "true");
  s.files = &f; s.n_files = 1;
  char err[512] = "";
  ux_run *r = ux_run_start(&s, err, sizeof err);
  ok(r == NULL && strstr(err, "bad file name"), "file name %s rejected: %s", what, err);
  if (r) { ux_run_result res; ux_run_wait(r, &res); ux_run_result_free(&res); }
}

static void test_bad_names(void) {
  char longc[300];
  memset(longc, 'a', 256); longc[256] = '\0';
  bad_name("../escape", "'..'");
  bad_name("a/../../b", "inner '..'");
  bad_name("/etc/passwd", "absolute");
  bad_name("", "empty");
  bad_name("a//b", "with an empty component");
  bad_name("dir/", "ending in '/'");
  bad_name(longc, "with a 256-byte component");
  bad_name("a\nb", "with a newline");
  bad_name(NULL, "NULL");

  ux_run_spec s = spec_for("brainfudge", "+");
  char err[256] = "";
  ok(ux_run_start(&s, err, sizeof err) == NULL && strstr(err, "brainfudge"),
     "unknown language rejected: %s", err);
}

static void test_workdir(void) {
  /* below a root-only directory: the sandbox uid could not traverse it */
  char base[] = "/var/tmp/unsb-wd-XXXXXX";
  if (!mkdtemp(base)) { ok(0, "workdir base"); return; }
  chmod(base, 0700);
  char wd[128];
  snprintf(wd, sizeof wd, "%s/session", base);
  mkdir(wd, 0700);            /* the runner never makes a persistent one */
  ux_run_spec s = spec_for("bash",
    "echo hi > state.txt; chmod 600 state.txt; mkdir -p d; echo x > d/y;"
    " chmod 700 d; ln -s /etc/shadow link");
  s.workdir = wd;
  ux_run_result r;
  char err[256], cmd[300];
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "workdir run 1: %s", err); goto done; }
  ok(r.exit_code == 0, "session run 1 writes state");
  ux_run_result_free(&r);

  ux_run_spec s2 = spec_for("bash", "cat state.txt; cat d/y; echo more >> state.txt; id -u");
  s2.workdir = wd;
  if (run(&s2, &r, err, sizeof err) != 0) { ok(0, "workdir run 2: %s", err); goto done; }
  ok(r.out && strstr(r.out, "hi\nx\n") && r.exit_code == 0,
     "session run 2 (another slot uid) reads and appends what run 1 left");
  if (r.exit_code) show(&r);
  ux_run_result_free(&r);

  struct stat st;
  ok(stat(wd, &st) == 0 && S_ISDIR(st.st_mode), "the work directory persists");
  char p[200];
  snprintf(p, sizeof p, "%s/state.txt", wd);
  FILE *fp = fopen(p, "r");
  char line[64] = "";
  if (fp) { if (!fgets(line, sizeof line, fp)) line[0] = 0; fclose(fp); }
  ok(!strcmp(line, "hi\n"), "its files are on the host");

  /* an input file through the symlink the sandbox left must not land in /etc */
  ux_file via = { "link/evil", (unsigned char *)"z", 1, 0 };
  ux_run_spec s3 = spec_for("bash", "true");
  s3.workdir = wd; s3.files = &via; s3.n_files = 1;
  ux_run *run3 = ux_run_start(&s3, err, sizeof err);
  ok(run3 == NULL && access("/etc/shadow/evil", F_OK) != 0,
     "a symlink left in the work directory is never followed: %s", err);
  if (run3) { ux_run_wait(run3, &r); ux_run_result_free(&r); }

  /* a later run (another slot uid) owns what earlier ones left: it can
  ** rewrite, delete and replace files and directories made 0600/0700 */
  ux_run_spec s4 = spec_for("bash",
    "echo new > state.txt && rm -r d link && mkdir d && echo z > d/y && cat state.txt d/y");
  s4.workdir = wd;
  if (run(&s4, &r, err, sizeof err) != 0) { ok(0, "workdir run 4: %s", err); goto done; }
  ok(r.exit_code == 0 && r.out && !strcmp(r.out, "new\nz\n"),
     "session run 4 rewrites and deletes what runs 1 and 2 left");
  if (r.exit_code) show(&r);
  ux_run_result_free(&r);

done:
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) printf("# cleanup of %s failed\n", base);
}

static int art(const ux_run_result *r, const char *name, const char *data) {
  for (size_t i = 0; i < r->n_artifacts; i++)
    if (!strcmp(r->artifacts[i].name, name))
      return r->artifacts[i].len == strlen(data) &&
             !memcmp(r->artifacts[i].data, data, r->artifacts[i].len);
  return 0;
}

static void test_artifacts(void) {
  ux_file in = { "input.txt", (unsigned char *)"in", 2, 0 };
  ux_run_spec s = spec_for("python",
    "import os\nopen('out.txt','w').write('result')\nos.makedirs('sub')\n"
    "open('sub/r.bin','wb').write(b'\\x00\\x01')\nopen('input.txt','a').write('x')\n"
    "os.symlink('/etc/passwd', 'ln')\n");
  s.files = &in; s.n_files = 1;
  s.want_artifacts = 1;
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) != 0) { ok(0, "artifacts run: %s", err); return; }
  ok(r.n_artifacts == 2 && art(&r, "out.txt", "result") &&
     r.artifacts[1].len == 2 && !strcmp(r.artifacts[1].name, "sub/r.bin"),
     "artifacts: the two files created, no source, input or symlink (%zu)", r.n_artifacts);
  if (r.n_artifacts != 2) show(&r);
  ux_run_result_free(&r);

  s.want_artifacts = 0;
  if (run(&s, &r, err, sizeof err) == 0) {
    ok(r.n_artifacts == 0 && r.artifacts == NULL, "none unless asked");
    ux_run_result_free(&r);
  }
}

/* ---------------------------------------------------------------------
** Threads: cancel, concurrency
** ------------------------------------------------------------------- */

static int sleeps_of(unsigned long uid, const char *arg);

/* Cancels the run from another thread once it is really running: its
** program has started `sleep <ready>` (the readiness signal; at most
** 20 s of looking, in 10 ms steps). */
typedef struct canceller { ux_run *run; unsigned long long id; const char *ready; } canceller;

static void *cancel_when_ready(void *arg) {
  canceller *c = arg;
  for (int i = 0; i < 2000; i++) {
    unsigned long uid = running_uid();
    if (uid && sleeps_of(uid, c->ready) > 0) break;
    t_sleep_ms(10);
  }
  if (c->run) ux_run_cancel(c->run);
  else ux_run_cancel_id(c->id);
  return NULL;
}

/* Waits (10 ms steps, at most 20 s) until no process of uid runs
** `sleep <arg>`: processes killed with their run go, but not instantly. */
static int sleeps_gone(unsigned long uid, const char *arg) {
  for (int i = 0; i < 2000 && sleeps_of(uid, arg) > 0; i++) t_sleep_ms(10);
  return sleeps_of(uid, arg) == 0;
}

static void test_cancel(void) {
  for (int by_id = 0; by_id < 2; by_id++) {
    ux_run_spec s = spec_for("bash", "sleep 30 & while true; do sleep 1; done");
    s.ttl_s = 30;
    char err[256];
    ux_run *r = ux_run_start(&s, err, sizeof err);
    if (!r) { ok(0, "cancel run starts: %s", err); return; }
    canceller c = { by_id ? NULL : r, ux_run_id(r), "30" };
    pthread_t t;
    pthread_create(&t, NULL, cancel_when_ready, &c);
    unsigned long uid = running_uid();
    ux_run_result res;
    ux_run_wait(r, &res);
    pthread_join(t, NULL);
    /* not timed out: the cancel, not the 30 s ttl, ended it */
    ok(res.cancelled && !res.timed_out,
       "%s from another thread ends the run (%ld ms)",
       by_id ? "ux_run_cancel_id" : "ux_run_cancel", res.elapsed_ms);
    ok(uid >= UID_LO && uid_procs(uid) == 0, "nothing of the cancelled run (uid %lu) remains", uid);
    ux_run_result_free(&res);
    ok(ux_run_cancel_id(c.id) == 0, "cancelling a finished run by id is a no-op");
  }
}

/* ---------------------------------------------------------------------
** Runs sharing one work directory (a service's bootstrap and its
** commands, concurrent commands of a session) share one slot uid
** ------------------------------------------------------------------- */

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

static int bg_done(bg_run *b) { return __atomic_load_n(&b->done, __ATOMIC_SEQ_CST); }

/* Live processes of `uid` running `sleep ARG` (cmdline "sleep\0ARG"). */
static int sleeps_of(unsigned long uid, const char *arg) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  char want[64];
  int wlen = snprintf(want, sizeof want, "sleep%c%s", 0, arg) + 1;
  while (d && (e = readdir(d))) {
    char path[300], buf[256];
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || !of_this_test(e->d_name)) continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf);
    close(fd);
    struct stat st;
    snprintf(path, sizeof path, "/proc/%s", e->d_name);
    if (k == wlen && !memcmp(buf, want, (size_t)wlen) && stat(path, &st) == 0 &&
        st.st_uid == uid) n++;
  }
  if (d) closedir(d);
  return n;
}

static unsigned long owner_of(const char *dir, const char *name) {
  char p[300];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &st) == 0 ? (unsigned long)st.st_uid : 0;
}

static void test_shared_workdir(void) {
  char base[] = "/var/tmp/unsb-shared-XXXXXX";
  if (!mkdtemp(base)) { ok(0, "shared workdir base"); return; }
  chmod(base, 0700);
  char wd[128], cmd[300], err[256], p[300];
  snprintf(wd, sizeof wd, "%s/service", base);
  mkdir(wd, 0700);            /* the runner never makes a persistent one */
  ux_run_result r;

  /* the "bootstrap": writes a.txt, waits for b.txt from the other run,
  ** then lives on until the host creates `stop` */
  bg_run a;
  memset(&a, 0, sizeof a);
  a.spec = spec_for("bash",
    "echo from-a > a.txt; chmod 600 a.txt; mkdir -p priv; chmod 700 priv\n"
    "for i in $(seq 400); do [ -f b.txt ] && break; sleep 0.05; done\n"
    "echo \"a read: $(cat b.txt)\"\n"
    "for i in $(seq 1200); do [ -f stop ] && break; sleep 0.05; done\n"
    "echo a still here; cat c.txt 2>&1\n");
  a.spec.workdir = wd;
  a.spec.ttl_s = 90;
  pthread_t ta;
  pthread_create(&ta, NULL, bg_wait, &a);
  snprintf(p, sizeof p, "%s/a.txt", wd);
  /* ready once its last set-up step is done: priv exists with mode 0700 */
  snprintf(p, sizeof p, "%s/priv", wd);
  struct stat pst;
  for (int i = 0; i < 2000 && !bg_done(&a) &&
       !(stat(p, &pst) == 0 && (pst.st_mode & 0777) == 0700); i++) t_sleep_ms(10);
  unsigned long uid = owner_of(wd, "a.txt");
  ok(!bg_done(&a) && uid >= UID_LO && uid < UID_HI,
     "a long run in a work directory is up (uid %lu)", uid);

  /* a second run in the same directory, meanwhile: reads what the first
  ** wrote (0600, in a 0700 directory), writes what it reads next, and
  ** leaves a background process that must go when it ends */
  ux_run_spec b = spec_for("bash",
    "cat a.txt && ls priv && echo from-b > b.txt && touch priv/b && (sleep 31 &) && echo b-ok");
  b.workdir = wd;
  if (run(&b, &r, err, sizeof err) != 0) { ok(0, "concurrent run starts: %s", err); goto stop; }
  ok(r.exit_code == 0 && !r.error[0] && r.out && !strcmp(r.out, "from-a\nb-ok\n"),
     "a concurrent run in the same work directory reads the first one's files");
  if (r.exit_code || r.error[0]) show(&r);
  ux_run_result_free(&r);
  ok(owner_of(wd, "b.txt") == uid && owner_of(wd, "a.txt") == uid && owner_of(wd, ".") == uid,
     "both run as the same slot uid; nothing changed hands (%lu, %lu)",
     owner_of(wd, "b.txt"), owner_of(wd, "a.txt"));
  ok(sleeps_of(uid, "31") == 0, "the second run's background process ended with it");

  /* a run that hits its ttl, then one that is cancelled: the first lives on */
  ux_run_spec c = spec_for("bash", "echo c > c.txt; sleep 32 & sleep 32");
  c.workdir = wd;
  c.ttl_s = 1;
  if (run(&c, &r, err, sizeof err) != 0) { ok(0, "ttl run starts: %s", err); goto stop; }
  ok(r.timed_out && r.exit_code == 137, "a sharing run is killed at its ttl (%d)", r.exit_code);
  ux_run_result_free(&r);
  ok(sleeps_gone(uid, "32") && !bg_done(&a) && uid_procs(uid) > 0,
     "its ttl kill took its own processes, and left the first run running");

  for (int by_id = 0; by_id < 2; by_id++) {
    ux_run_spec d = spec_for("bash", "sleep 33 & sleep 33");
    d.workdir = wd;
    d.ttl_s = 30;
    ux_run *dr = ux_run_start(&d, err, sizeof err);
    if (!dr) { ok(0, "cancelled run starts: %s", err); goto stop; }
    canceller cc = { by_id ? NULL : dr, ux_run_id(dr), "33" };
    pthread_t tc;
    pthread_create(&tc, NULL, cancel_when_ready, &cc);
    ux_run_wait(dr, &r);
    pthread_join(tc, NULL);
    ok(r.cancelled && !r.timed_out, "a sharing run is cancelled (%s, %ld ms)",
       by_id ? "by id" : "by pointer", r.elapsed_ms);
    ux_run_result_free(&r);
    ok(sleeps_gone(uid, "33") && !bg_done(&a) && uid_procs(uid) > 0,
       "the cancel took its own processes, and left the first run running");
  }

stop:
  snprintf(p, sizeof p, "%s/stop", wd);
  FILE *f = fopen(p, "w");
  if (f) fclose(f);
  pthread_join(ta, NULL);
  ok(a.started && a.res.exit_code == 0 && !a.res.timed_out && !a.res.cancelled && a.res.out &&
     strstr(a.res.out, "a read: from-b\n") && strstr(a.res.out, "a still here\nc\n"),
     "the first run read the second's file and ran to its end");
  if (!a.res.out || !strstr(a.res.out, "a still here")) show(&a.res);
  ux_run_result_free(&a.res);
  ok(uid_procs(uid) == 0, "after both ended no process of uid %lu remains", uid);

  /* the next run of the directory starts afresh: its own slot, whatever
  ** uid that is, and every file is handed to it */
  ux_run_spec e = spec_for("bash", "rm -r a.txt b.txt priv && echo after > a.txt && cat a.txt");
  e.workdir = wd;
  if (run(&e, &r, err, sizeof err) == 0) {
    ok(r.exit_code == 0 && r.out && !strcmp(r.out, "after\n"),
       "a later run owns and removes what the sharers left");
    if (r.exit_code) show(&r);
    ux_run_result_free(&r);
  } else ok(0, "later run starts: %s", err);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) printf("# cleanup of %s failed\n", base);
}

/* Several runs start at once in a fresh work directory whose files the
** host made (root, 0600): one hands the tree over, the others wait for it. */
static void test_shared_first_take(void) {
  enum { N = 5 };
  char base[] = "/var/tmp/unsb-shared-XXXXXX";
  if (!mkdtemp(base)) { ok(0, "shared workdir base"); return; }
  chmod(base, 0700);
  char wd[128], p[300], cmd[300];
  snprintf(wd, sizeof wd, "%s/session", base);
  mkdir(wd, 0700);
  snprintf(p, sizeof p, "%s/seed", wd);
  FILE *f = fopen(p, "w");
  if (f) { fputs("seed", f); fclose(f); }
  chmod(p, 0600);
  bg_run b[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].spec = spec_for("bash", "cat seed && echo $$ >> log && sleep 0.5 && id -u");
    b[i].spec.workdir = wd;
    pthread_create(&t[i], NULL, bg_wait, &b[i]);
  }
  int good = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    int g = b[i].started && b[i].res.exit_code == 0 && !b[i].res.error[0] && b[i].res.out &&
            !strcmp(b[i].res.out, "seed1000\n");
    if (!g) { printf("# run %d: %s\n", i, b[i].err); show(&b[i].res); }
    good += g;
    ux_run_result_free(&b[i].res);
  }
  ok(good == N, "%d runs started together in one fresh work directory all work (%d good)",
     N, good);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) printf("# cleanup of %s failed\n", base);
}

typedef struct par { int i, good; } par;

static void *par_run(void *arg) {
  par *p = arg;
  char code[128], want[64];
  snprintf(code, sizeof code, "import time\ntime.sleep(0.3)\nprint('run', %d)\n", p->i);
  snprintf(want, sizeof want, "run %d\n", p->i);
  ux_run_spec s = spec_for("python", code);
  ux_run_result r;
  char err[256];
  if (run(&s, &r, err, sizeof err) == 0) {
    p->good = r.out && !strcmp(r.out, want) && r.exit_code == 0;
    ux_run_result_free(&r);
  }
  return NULL;
}

static void test_concurrent(void) {
  enum { N = 6 };
  pthread_t t[N];
  par p[N];
  int good = 0;
  for (int i = 0; i < N; i++) { p[i] = (par){ i, 0 }; pthread_create(&t[i], NULL, par_run, &p[i]); }
  for (int i = 0; i < N; i++) { pthread_join(t[i], NULL); good += p[i].good; }
  ok(good == N, "%d concurrent runs from threads, each its own output (%d good)", N, good);
}

static int zombie_child(const char *status, void *ctx) {
  (void)ctx;
  return child_of_ours(status) && is_zombie(status);
}

/* Zombie children of this process (the runner reaps what it orphans). */
static int zombie_children(void) { return each_status(zombie_child, NULL); }

static void test_deep_tree(void) {
  ux_run_result r;
  if (run_untimed("bash", "for i in $(seq 400); do mkdir d; cd d; done; echo x > f;"
                  " echo deep; ln -s / loop; mkfifo p", &r) == 0) {
    ok(r.out && !strcmp(r.out, "deep\n"), "a 400-level tree, a symlink and a fifo are made"
       " (exit %d, timed out %d, %ld ms: %s)", r.exit_code, r.timed_out, r.elapsed_ms, r.err ? r.err : "");
    ux_run_result_free(&r);
  }
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
  /* run directories in a private, root-only place, checked empty at the end */
  char tmpdir[] = "/var/tmp/unsb-runtest-XXXXXX";
  if (!mkdtemp(tmpdir)) { printf("Bail out! mkdtemp\n"); return 1; }
  ux_runner_set_tmpdir(tmpdir);
  ux_isolation iso;
  ux_runner_init(1, &iso);          /* its parent cgroups stay open */
  printf("# isolation: %s\n", iso.detail);
  ux_child_mntns();           /* made once per process, kept open */
  int fds_before = count_fds();
  test_languages();
  test_compile_error();
  test_ttl();
  test_fork_bomb();
  test_memory();
  test_output_cap();
  test_file_size();
  test_canary();
  test_network();
  test_readonly();
  test_files_env();
  test_bad_names();
  test_workdir();
  test_artifacts();
  test_cancel();
  test_shared_workdir();
  test_shared_first_take();
  test_concurrent();
  test_deep_tree();
  ok(rmdir(tmpdir) == 0, "every run directory was removed (%s)", tmpdir);
  ok(zombie_children() == 0, "no zombie left behind (%d)", zombie_children());
  ok(count_fds() == fds_before, "no fd leaked by the runner (%d before, %d after)",
     fds_before, count_fds());
  ux_runner_shutdown();
  return tap_done();
}
