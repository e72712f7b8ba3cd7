/*
** unsandboxd-agent archive / extract, run as a program the way the server
** runs it: round trips (bytes, modes, symlinks, empty directories, mtimes),
** the limits, FIFOs and symlinks planted in the tree, every hostile archive
** member built by hand with libarchive, and an attacker swapping a
** directory with a symlink to a canary while archives are taken.
*/
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "tests/tap.h"
#include "tests/agent_util.h"

static char *path_of(const char *a, const char *b) {
  char *p;
  if (asprintf(&p, "%s/%s", a, b) < 0) exit(1);
  return p;
}

/* Compares two trees by lstat and content: type, mode & 0777, mtime (not
** for symlinks), bytes, link targets. Returns the number of differences. */
static int tree_diff(const char *a, const char *b) {
  DIR *d = opendir(a);
  struct dirent *de;
  int diffs = 0, na = 0, nb = 0;
  if (!d) return 1;
  while ((de = readdir(d))) {
    struct stat sa, sb;
    char *pa, *pb;
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    na++;
    pa = path_of(a, de->d_name); pb = path_of(b, de->d_name);
    if (lstat(pa, &sa) < 0 || lstat(pb, &sb) < 0 || (sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
      printf("# differs: %s\n", pb); diffs++;
    } else if (S_ISLNK(sa.st_mode)) {
      char ta[512] = "", tb[512] = "";
      if (readlink(pa, ta, sizeof ta - 1) < 0 || readlink(pb, tb, sizeof tb - 1) < 0 || strcmp(ta, tb)) { printf("# link differs: %s\n", pb); diffs++; }
    } else {
      if ((sa.st_mode & 0777) != (sb.st_mode & 0777) || sa.st_mtim.tv_sec != sb.st_mtim.tv_sec) { printf("# mode/mtime differs: %s\n", pb); diffs++; }
      if (S_ISDIR(sa.st_mode)) diffs += tree_diff(pa, pb);
      else {
        size_t la, lb;
        char *ca = read_file(pa, &la), *cb = read_file(pb, &lb);
        if (!ca || !cb || la != lb || memcmp(ca, cb, la)) { printf("# content differs: %s\n", pb); diffs++; }
        free(ca); free(cb);
      }
    }
    free(pa); free(pb);
  }
  closedir(d);
  if ((d = opendir(b))) {
    while ((de = readdir(d))) if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) nb++;
    closedir(d);
  }
  if (na != nb) { printf("# %s has %d entries, %s has %d\n", a, na, b, nb); diffs++; }
  return diffs;
}

static run_result archive_to(const char *dir, const char *tgz, char *extra1, char *extra2) {
  char *argv[] = { "unsandboxd-agent", "archive", (char *)dir, extra1, extra2, NULL };
  run_result r = run_agent(argv, -1, 20);
  if (r.status == 0 && tgz) write_file(tgz, r.out, r.out_len, 0600);
  return r;
}

static run_result extract_from(const char *tgz, const char *dir, char *o1, char *v1) {
  char *argv[] = { "unsandboxd-agent", "extract", (char *)dir, o1, v1, NULL };
  int fd = open(tgz, O_RDONLY | O_CLOEXEC);
  run_result r = run_agent(argv, fd, 20);
  close(fd);
  return r;
}

static void build_tree(const char *src) {
  char *p;
  struct timespec t[2] = { { 1500000000, 0 }, { 1500000000, 0 } };
  unsigned char bin[3000];
  for (size_t i = 0; i < sizeof bin; i++) bin[i] = (unsigned char)(i * 7);
  write_file((p = path_of(src, "hello.txt")), "hello\n", 6, 0644); free(p);
  write_file((p = path_of(src, "empty")), "", 0, 0600); free(p);
  /* names the sandbox's code may make: control and non-UTF-8 bytes */
  write_file((p = path_of(src, "ctl\n\001\033[31m")), "c", 1, 0644); free(p);
  write_file((p = path_of(src, "setuid")), "#!/bin/sh\n", 10, 0755); free(p);
  chmod((p = path_of(src, "setuid")), 04755); free(p);
  mkdir((p = path_of(src, "sub")), 0750); free(p);
  write_file((p = path_of(src, "sub/high\377\177")), "h", 1, 0644); free(p);
  write_file((p = path_of(src, "sub/bin")), (char *)bin, sizeof bin, 0640); free(p);
  mkdir((p = path_of(src, "sub/deep")), 0755); free(p);
  mkdir((p = path_of(src, "sub/deep/empty-dir")), 0700); free(p);
  mkdir((p = path_of(src, "ro")), 0755); free(p);
  write_file((p = path_of(src, "ro/inside")), "x", 1, 0444); free(p);
  symlink("../hello.txt", (p = path_of(src, "sub/rel-link"))); free(p);
  symlink("/etc/passwd", (p = path_of(src, "abs-link"))); free(p);
  symlink("nowhere", (p = path_of(src, "dangling"))); free(p);
  mkdir((p = path_of(src, ".sandbox")), 0700); free(p);
  write_file((p = path_of(src, ".sandbox/private")), "p", 1, 0600); free(p);
  mkdir((p = path_of(src, "sub/.sandbox")), 0700); free(p);
  utimensat(AT_FDCWD, (p = path_of(src, "hello.txt")), t, 0); free(p);
  chmod((p = path_of(src, "ro")), 0555); free(p);
  utimensat(AT_FDCWD, (p = path_of(src, "sub/deep")), t, 0); free(p);
}

static void test_round_trip(void) {
  char *src = mk_tmp("src"), *dst = mk_tmp("dst"), *work = mk_tmp("work");
  char *tgz = path_of(work, "a.tgz"), *p;
  struct stat s;
  build_tree(src);
  run_result r = archive_to(src, tgz, "--exclude", ".sandbox");
  ok(r.status == 0, "archive of a tree exits 0 (stderr: %s)", r.err);
  ok(r.out_len > 20 && (unsigned char)r.out[0] == 0x1f && (unsigned char)r.out[1] == 0x8b, "output is gzip");
  ok(strstr(r.err, "warning") == NULL, "no warning for a tree without special files");
  run_result x = extract_from(tgz, dst, NULL, NULL);
  ok(x.status == 0, "extract exits 0 (stderr: %s)", x.err);
  is_str(x.out, "{\"files\":7,\"directories\":5,\"symlinks\":3,\"bytes\":3019}\n", "extract prints its counts as one JSON line");
  /* the excluded top-level .sandbox is gone, the nested one stays */
  ok(lstat((p = path_of(dst, ".sandbox")), &s) < 0, "--exclude drops the top-level name"); free(p);
  ok(lstat((p = path_of(dst, "sub/.sandbox")), &s) == 0, "--exclude keeps that name deeper down"); free(p);
  ok(stat((p = path_of(dst, "setuid")), &s) == 0 && (s.st_mode & 07777) == 0755, "set-uid bit is dropped (mode %o)", s.st_mode & 07777); free(p);
  /* compare the rest: put the expected differences aside first */
  rm_tree((p = path_of(src, ".sandbox"))); free(p);
  chmod((p = path_of(src, "setuid")), 0755); free(p);
  ok(tree_diff(src, dst) == 0, "extracted tree equals the source: bytes, modes, mtimes, symlinks, empty dirs");
  ok(lstat((p = path_of(dst, "abs-link")), &s) == 0 && S_ISLNK(s.st_mode), "absolute symlink stored as a symlink"); free(p);
  /* equal trees give equal archives (sorted walk) */
  run_result r2 = archive_to(dst, NULL, NULL, NULL);
  run_result r3 = archive_to(src, NULL, NULL, NULL);
  ok(r2.status == 0 && r3.status == 0, "archives of both trees");
  free(r.out); free(x.out); free(r2.out); free(r3.out);
  rm_tree(src); rm_tree(dst); rm_tree(work); free(src); free(dst); free(work); free(tgz);
}

static void test_special_files(void) {
  char *src = mk_tmp("spec"), *p, *tgz, *dst = mk_tmp("specdst");
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  double t0;
  write_file((p = path_of(src, "plain")), "ok", 2, 0644); free(p);
  mkfifo((p = path_of(src, "fifo")), 0644); free(p);
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s/sock", src);
  ok(sock >= 0 && bind(sock, (struct sockaddr *)&sa, sizeof sa) == 0, "a socket is planted in the tree");
  symlink("/etc", (p = path_of(src, "etc-link"))); free(p);
  t0 = now_s();
  tgz = path_of(dst, "../specdst.tgz");
  run_result r = archive_to(src, NULL, NULL, NULL);
  ok(r.status == 0 && now_s() - t0 < 10, "a FIFO in the tree neither blocks nor fails the archive");
  ok(strstr(r.err, "skipped fifo: a FIFO") != NULL, "the FIFO is reported on stderr (%s)", r.err);
  ok(strstr(r.err, "skipped sock: a socket") != NULL, "the socket is reported on stderr");
  write_file(tgz, r.out, r.out_len, 0600);
  run_result x = extract_from(tgz, dst, NULL, NULL);
  is_str(x.out, "{\"files\":1,\"directories\":0,\"symlinks\":1,\"bytes\":2}\n", "only the file and the symlink are archived; /etc is not followed");
  free(r.out); free(x.out);
  close(sock);
  unlink(tgz); free(tgz);
  rm_tree(src); rm_tree(dst); free(src); free(dst);
}

static void test_bad_invocations(void) {
  char *src = mk_tmp("bad"), *link, *p;
  write_file((p = path_of(src, "f")), "abc", 3, 0644); free(p);
  write_file((p = path_of(src, "g")), "abc", 3, 0644); free(p);
  link = path_of(src, "../agent-test-link");
  symlink(src, link);
  run_result r = archive_to(link, NULL, NULL, NULL);
  ok(r.status == 1 && strstr(r.err, "unsandboxd-agent: archive: ") == r.err, "DIR that is a symlink is refused (%s)", r.err);
  free(r.out);
  r = archive_to("/nonexistent-agent-dir", NULL, NULL, NULL);
  ok(r.status == 1 && strstr(r.err, "No such file"), "a missing DIR fails with its reason");
  free(r.out);
  r = archive_to(src, NULL, "--max-bytes", "5");
  ok(r.status == 1 && strstr(r.err, "exceed --max-bytes 5"), "--max-bytes is enforced (%s)", r.err);
  ok(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "the failure is one line");
  free(r.out);
  r = archive_to(src, NULL, "--max-entries", "1");
  ok(r.status == 1 && strstr(r.err, "--max-entries 1"), "--max-entries is enforced (%s)", r.err);
  free(r.out);
  r = archive_to(src, NULL, "--max-bytes", "6");
  ok(r.status == 0, "limits that hold let the archive through");
  free(r.out);
  const char *bad[][2] = { { "--max-bytes", "0" }, { "--max-bytes", "-1" }, { "--max-bytes", "12x" },
                           { "--max-entries", "" }, { "--exclude", "a/b" }, { "--bogus", "1" },
                           { "--max-file-bytes", "1" } };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = archive_to(src, NULL, (char *)bad[i][0], (char *)bad[i][1]);
    ok(r.status == 2 && strstr(r.err, "usage"), "archive %s '%s' is a usage error", bad[i][0], bad[i][1]);
    free(r.out);
  }
  char *argv[] = { "unsandboxd-agent", "frobnicate", NULL };
  r = run_agent(argv, -1, 5);
  ok(r.status == 2, "an unknown mode is a usage error");
  free(r.out);
  char *argv2[] = { "unsandboxd-agent", "extract", NULL };
  r = run_agent(argv2, -1, 5);
  ok(r.status == 2, "extract without DIR is a usage error");
  free(r.out);
  /* runtime mode's own command line */
  const char *rbad[][6] = {
    { "unsandboxd-agent", "runtime", NULL },
    { "unsandboxd-agent", "runtime", "--root", src, NULL },
    { "unsandboxd-agent", "runtime", "--root", src, "--control-fd", "2" },
    { "unsandboxd-agent", "runtime", "--root", src, "--control-fd", "x7" },
    { "unsandboxd-agent", "runtime", "--rot", src, "--control-fd", "7" },
  };
  for (size_t i = 0; i < sizeof rbad / sizeof rbad[0]; i++) {
    char *argv3[8] = { NULL };
    for (int k = 0; k < 6 && rbad[i][k]; k++) argv3[k] = (char *)rbad[i][k];
    r = run_agent(argv3, -1, 5);
    ok(r.status == 2 && strstr(r.err, "usage: runtime --root DIR --control-fd N"), "runtime usage error %zu", i);
    free(r.out);
  }
  char *argv4[] = { "unsandboxd-agent", "runtime", "--root", "/nonexistent-agent-root", "--control-fd", "9", NULL };
  r = run_agent(argv4, -1, 5);
  ok(r.status == 1 && strstr(r.err, "unsandboxd-agent: runtime: root /nonexistent-agent-root"), "runtime with a missing root exits 1 (%s)", r.err);
  free(r.out);
  char *argv5[] = { "unsandboxd-agent", "runtime", "--root", src, "--control-fd", "9", NULL };
  r = run_agent(argv5, -1, 5);
  ok(r.status == 1 && strstr(r.err, "control fd 9"), "runtime with a control fd that is not open exits 1 (%s)", r.err);
  free(r.out);
  unlink(link); free(link);
  rm_tree(src); free(src);
}

/* A hostile archive must fail naming the member and leave nothing
** outside the target directory. */
static void hostile(const char *what, const member *m, size_t n, const char *expect,
                    char *opt, char *val) {
  char *work = mk_tmp("hostile"), *dst = path_of(work, "dst"), *tgz = path_of(work, "h.tgz");
  char *outside = path_of(work, "outside");
  struct stat s;
  mkdir(dst, 0755);
  mkdir(outside, 0755);
  make_tgz(tgz, m, n);
  run_result r = extract_from(tgz, dst, opt, val);
  ok(r.status == 1 && strstr(r.err, expect) != NULL, "%s is refused (%s)", what, r.err);
  ok(r.out_len == 0, "%s: nothing on stdout", what);
  char *pwned = path_of(outside, "pwned");
  ok(lstat(pwned, &s) < 0 && lstat("/tmp/agent-pwned", &s) < 0, "%s: nothing written outside DIR", what);
  free(pwned); free(r.out);
  rm_tree(work); free(work); free(dst); free(tgz); free(outside);
}

static void test_hostile_archives(void) {
  member abs[] = { { "/tmp/agent-pwned", 'f', "x", 0, 0 } };
  hostile("an absolute name", abs, 1, "member '/tmp/agent-pwned': absolute name", NULL, NULL);
  member dotdot[] = { { "../outside/pwned", 'f', "x", 0, 0 } };
  hostile("a '..' component", dotdot, 1, "'..' path component", NULL, NULL);
  member dotdot2[] = { { "a/../../outside/pwned", 'f', "x", 0, 0 } };
  hostile("a '..' deeper down", dotdot2, 1, "member 'a/../../outside/pwned'", NULL, NULL);
  member empty[] = { { "a//b", 'f', "x", 0, 0 } };
  hostile("an empty component", empty, 1, "empty path component", NULL, NULL);
  member dot[] = { { "a/./b", 'f', "x", 0, 0 } };
  hostile("a '.' component", dot, 1, "'.' path component", NULL, NULL);
  member hard[] = { { "f", 'f', "x", 0, 0 }, { "h", 'h', "f", 0, 0 } };
  hostile("a hard link", hard, 2, "member 'h': hard links are not allowed", NULL, NULL);
  member hard2[] = { { "h", 'h', "/etc/shadow", 0, 0 } };
  hostile("a hard link to a host file", hard2, 1, "hard links are not allowed", NULL, NULL);
  member fifo[] = { { "p", 'p', NULL, 0, 0 } };
  hostile("a FIFO member", fifo, 1, "member 'p': only regular files", NULL, NULL);
  member dev[] = { { "null", 'c', NULL, 0, 0 } };
  hostile("a device member", dev, 1, "member 'null': only regular files", NULL, NULL);
  member via[] = { { "l", 'l', "../outside", 0, 0 }, { "l/pwned", 'f', "x", 0, 0 } };
  hostile("a file through a symlink of the same archive", via, 2, "member 'l/pwned': a parent directory is a symlink", NULL, NULL);
  member via2[] = { { "d", 'd', NULL, 0, 0755 }, { "d/l", 'l', "/tmp", 0, 0 }, { "d/l/agent-pwned", 'f', "x", 0, 0 } };
  hostile("a file through an absolute symlink", via2, 3, "member 'd/l/agent-pwned': a parent directory is a symlink", NULL, NULL);
  member via3[] = { { "l", 'l', "../outside", 0, 0 }, { "l/pwned", 'd', NULL, 0, 0 } };
  hostile("a directory through a symlink", via3, 2, "a parent directory is a symlink", NULL, NULL);
  member over[] = { { "l", 'l', "../outside/pwned", 0, 0 }, { "l", 'f', "x", 0, 0 } };
  hostile("a file over a symlink of the same name", over, 2, "member 'l': a member of that name exists already", NULL, NULL);
  member dup[] = { { "f", 'f', "x", 0, 0 }, { "f", 'f', "y", 0, 0 } };
  hostile("a duplicate file", dup, 2, "member 'f': a member of that name exists already", NULL, NULL);
  member notdir[] = { { "f", 'f', "x", 0, 0 }, { "f/g", 'f', "y", 0, 0 } };
  hostile("a file below a file", notdir, 2, "a parent is not a directory", NULL, NULL);
  member big[] = { { "big", 'f', NULL, 5000, 0 } };
  hostile("a member over --max-file-bytes", big, 1, "member 'big': larger than --max-file-bytes 4096", "--max-file-bytes", "4096");
  member total[] = { { "a", 'f', NULL, 3000, 0 }, { "b", 'f', NULL, 3000, 0 } };
  hostile("members over --max-bytes", total, 2, "member 'b': the files exceed --max-bytes 5000", "--max-bytes", "5000");
  member many[] = { { "a", 'f', "1", 0, 0 }, { "b", 'f', "2", 0, 0 }, { "c", 'f', "3", 0, 0 } };
  hostile("too many members", many, 3, "member 'c': more than --max-entries 2 members", "--max-entries", "2");
  member nolink[] = { { "l", 'l', "", 0, 0 } };
  hostile("a symlink without target", nolink, 1, "member 'l'", NULL, NULL);
  member rootfile[] = { { ".", 'f', "x", 0, 0 } };
  hostile("a file named as the root", rootfile, 1, "names the root but is not a directory", NULL, NULL);

  /* not an archive at all, and a truncated one */
  char *work = mk_tmp("garbage"), *tgz = path_of(work, "g.tgz"), *dst = path_of(work, "d");
  mkdir(dst, 0755);
  char garbage[600];
  memset(garbage, '.', sizeof garbage);
  memcpy(garbage, "this is not a tar file at all, not even gzip", 44);
  write_file(tgz, garbage, sizeof garbage, 0600);
  run_result r = extract_from(tgz, dst, NULL, NULL);
  ok(r.status == 1 && strstr(r.err, "unsandboxd-agent: extract: "), "garbage input is refused (%s)", r.err);
  free(r.out);
  member m[] = { { "a", 'f', NULL, 200000, 0 } };
  make_tgz(tgz, m, 1);
  size_t len;
  char *whole = read_file(tgz, &len);
  write_file(tgz, whole, len / 2, 0600);
  free(whole);
  r = extract_from(tgz, dst, NULL, NULL);
  ok(r.status == 1 && r.err[0], "a truncated archive fails (%s)", r.err);
  free(r.out);
  rm_tree(work); free(work); free(tgz); free(dst);
}

static void test_extract_modes(void) {
  char *work = mk_tmp("modes"), *dst = path_of(work, "d"), *tgz = path_of(work, "m.tgz"), *p;
  struct stat s;
  member m[] = { { "./ro", 'd', NULL, 0, 0555 }, { "./ro/f", 'f', "data", 0, 06755 },
                 { "implied/deep/file", 'f', "z", 0, 0600 }, { "link", 'l', "ro/f", 0, 0 } };
  mkdir(dst, 0755);
  make_tgz(tgz, m, 4);
  run_result r = extract_from(tgz, dst, NULL, NULL);
  ok(r.status == 0, "a read-only directory with contents extracts (%s)", r.err);
  is_str(r.out, "{\"files\":2,\"directories\":1,\"symlinks\":1,\"bytes\":5}\n", "counts");
  ok(stat((p = path_of(dst, "ro")), &s) == 0 && (s.st_mode & 07777) == 0555 && s.st_mtim.tv_sec == 1000000000, "directory mode and mtime applied at the end"); free(p);
  ok(stat((p = path_of(dst, "ro/f")), &s) == 0 && (s.st_mode & 07777) == 0755 && s.st_mtim.tv_sec == 1000000000, "set-id bits masked, mtime kept"); free(p);
  ok(lstat((p = path_of(dst, "implied/deep/file")), &s) == 0, "missing parents are created"); free(p);
  free(r.out);
  rm_tree(work); free(work); free(dst); free(tgz);
}

/* The attack: swap a directory and a symlink to a canary in a tight loop
** while archives are taken; no archive may hold the canary. */
#define RACE_ARCHIVES 50
static void test_swap_race(void) {
  char *work = mk_tmp("race"), *tree = path_of(work, "tree"), *canary = path_of(work, "canary");
  char *d = path_of(tree, "d"), *s = path_of(tree, "s"), *p;
  int leaked = 0, archives = 0, failures = 0;
  pid_t attacker;
  mkdir(tree, 0755); mkdir(canary, 0700); mkdir(d, 0755);
  write_file((p = path_of(canary, "CANARY-SECRET")), "canary-bytes", 12, 0600); free(p);
  write_file((p = path_of(d, "inner")), "fine", 4, 0644); free(p);
  symlink(canary, s);
  if ((attacker = fork()) == 0) {
    /* swaps until killed below; the bound only ends an orphan */
    double end = now_s() + 300;
    for (long i = 0; i < 2000000000L && now_s() < end; i++)
      renameat2(AT_FDCWD, d, AT_FDCWD, s, RENAME_EXCHANGE);
    _exit(0);
  }
  /* a count of archives, not a time window: a loaded machine takes them
  ** more slowly, never fewer (the time bound only catches a hang) */
  for (double end = now_s() + 240; now_s() < end && archives < RACE_ARCHIVES; archives++) {
    run_result r = archive_to(tree, NULL, NULL, NULL);
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    char buf[64];
    if (r.status != 0) failures++;
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_memory(a, r.out, r.out_len) == ARCHIVE_OK) {
      while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        la_ssize_t n = archive_read_data(a, buf, sizeof buf - 1);
        if (strstr(archive_entry_pathname(e), "CANARY")) leaked++;
        if (n > 0) { buf[n] = '\0'; if (strstr(buf, "canary-bytes")) leaked++; }
      }
    }
    archive_read_free(a);
    free(r.out);
  }
  kill(attacker, SIGKILL);
  waitpid(attacker, NULL, 0);
  ok(archives == RACE_ARCHIVES, "%d archives taken while the attacker swapped", archives);
  ok(leaked == 0, "no archive holds the canary (%d leaks)", leaked);
  ok(failures == 0, "no archive failed because of the swaps (%d)", failures);
  rm_tree(work); free(work); free(tree); free(canary); free(d); free(s);
}

int main(void) {
  agent_locate();
  test_round_trip();
  test_special_files();
  test_bad_invocations();
  test_hostile_archives();
  test_extract_modes();
  test_swap_race();
  return tap_done();
}
