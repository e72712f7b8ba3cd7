/*
** unsandboxd-agent where it really runs: inside bubblewrap as uid/gid 1000
** (in a user namespace), /usr read-only, a fresh /proc, `--dev /dev` (a
** private devpts), tmpfs /tmp, the tree read-write at /workspace, no
** network, the binary bind-mounted read-only at a path of our choosing.
** Proves the PTY works there, that the agent cannot be read by the code
** next to it (undumpable), and that archive/extract, the file ops, exec and
** checkpoint work through the namespace boundary (fds passed in).
*/
#include "tests/tap.h"
#include "tests/agent_util.h"

#define INNER "/opt/agent/unsandboxd-agent"

static char *root;
static char *argv_bwrap[64];

static void build_bwrap(void) {
  static const char *const links[] = { "bin", "sbin", "lib", "lib64" };
  static char targets[4][64], paths[4][16];
  int n = 0;
  const char *fixed[] = { "/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                          "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                          "--uid", "1000", "--gid", "1000", "--ro-bind", "/usr", "/usr",
                          "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", NULL };
  for (int i = 0; fixed[i]; i++) argv_bwrap[n++] = (char *)fixed[i];
  for (int i = 0; i < 4; i++) {
    snprintf(paths[i], sizeof paths[i], "/%s", links[i]);
    ssize_t k = readlink(paths[i], targets[i], sizeof targets[i] - 1);
    if (k <= 0) continue;
    targets[i][k] = '\0';
    argv_bwrap[n++] = "--symlink"; argv_bwrap[n++] = targets[i]; argv_bwrap[n++] = paths[i];
  }
  argv_bwrap[n++] = "--bind"; argv_bwrap[n++] = root; argv_bwrap[n++] = "/workspace";
  argv_bwrap[n++] = "--ro-bind"; argv_bwrap[n++] = agent_bin; argv_bwrap[n++] = INNER;
  argv_bwrap[n++] = "--chdir"; argv_bwrap[n++] = "/workspace";
  argv_bwrap[n++] = "--clearenv";
  argv_bwrap[n++] = "--setenv"; argv_bwrap[n++] = "PATH"; argv_bwrap[n++] = "/usr/bin:/bin";
  argv_bwrap[n++] = "--setenv"; argv_bwrap[n++] = "HOME"; argv_bwrap[n++] = "/workspace";
  argv_bwrap[n++] = "--";
  argv_bwrap[n] = NULL;
}

static json_t *call(agent_rt *a, const char *req, rt_reply *r) {
  *r = rt_call_raw(a, req, strlen(req), -1, 60);
  json_t *res = rt_result(r);
  if (!res) printf("# %.120s -> %s\n", req, rt_error(r));
  return res;
}

static void test_runtime(void) {
  rt_reply r;
  char req[300];
  char *p;
  if (asprintf(&p, "%s/host-link", root) < 0) exit(1);
  symlink("/etc/passwd", p);
  free(p);
  agent_rt a = rt_start_with("/workspace", NULL, argv_bwrap, INNER);
  json_t *res = call(&a, "{\"op\":\"ping\"}", &r);
  long long pid = res ? ri(res, "pid") : -1;
  ok(res && ri(res, "uid") == 1000 && pid > 0 && pid < 10, "ping inside bwrap: uid 1000, a pid of the sandbox's own namespace (%lld)", pid);
  rt_free(&r);
  res = call(&a, "{\"op\":\"session_exec\",\"session_id\":\"t\",\"command\":\"tty; id -u; pwd\"}", &r);
  const char *out = res ? rs(res, "stdout") : "";
  ok(res && !strncmp(out, "/dev/pts/", 9) && strstr(out, "\n1000\n/workspace\n") && ri(res, "exit_code") == 0,
     "a PTY session works inside bwrap with --dev /dev (%s)", out);
  rt_free(&r);
  res = call(&a, "{\"op\":\"session_exec\",\"session_id\":\"t\",\"command\":\"read x; echo got $x\",\"async\":true}", &r);
  rt_free(&r);
  res = call(&a, "{\"op\":\"session_input\",\"session_id\":\"t\",\"input\":\"line\"}", &r);
  ok(res && !strcmp(rs(res, "stdout"), "got line\n"), "session_input reaches read there");
  rt_free(&r);
  snprintf(req, sizeof req, "{\"op\":\"session_exec\",\"session_id\":\"t\",\"command\":\"cat /proc/%lld/environ > /dev/null; echo rc=$?; head -c 1 /proc/%lld/mem > /dev/null; echo rc=$?\"}", pid, pid);
  res = call(&a, req, &r);
  out = res ? rs(res, "stdout") : "";
  ok(res && strstr(out, "environ: Permission denied") && strstr(out, "mem' for reading: Permission denied") && !strstr(out, "rc=0"),
     "code of the same uid cannot read the agent's environ or memory (undumpable): %s", out);
  rt_free(&r);
  res = call(&a, "{\"op\":\"exec\",\"command\":\"echo hi; id -u; cat /etc/shadow 2>&1 | head -c 40; echo\"}", &r);
  ok(res && !strncmp(rs(res, "stdout"), "hi\n1000\n", 8) && strstr(rs(res, "stdout"), "No such file"), "exec runs as 1000 and sees no host /etc");
  rt_free(&r);
  res = call(&a, "{\"op\":\"file_write\",\"path\":\"made/inside.txt\",\"content\":\"from the sandbox\"}", &r);
  rt_free(&r);
  if (asprintf(&p, "%s/made/inside.txt", root) < 0) exit(1);
  char *c = read_file(p, NULL);
  free(p);
  ok(res && c && !strcmp(c, "from the sandbox"), "file_write lands in the bound tree");
  free(c);
  r = rt_call(&a, "{\"op\":\"file_read\",\"path\":\"host-link\"}");
  ok(strstr(rt_error(&r), "resolves outside the workspace") != NULL, "a symlink to a host file is refused (%s)", rt_error(&r));
  rt_free(&r);
  char *work = mk_tmp("bwrap-ckpt"), *tgz;
  if (asprintf(&tgz, "%s/c.tgz", work) < 0) exit(1);
  int fd = open(tgz, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const char *ck = "{\"op\":\"checkpoint\"}";
  r = rt_call_raw(&a, ck, strlen(ck), fd, 30);
  close(fd);
  res = rt_result(&r);
  struct stat st;
  ok(res && ri(res, "files") >= 1 && stat(tgz, &st) == 0 && st.st_size == ri(res, "bytes"), "checkpoint writes to a data fd passed in from the host");
  rt_free(&r);
  ok(rt_stop(&a) == 0, "the agent in bwrap stops on EOF");
  rm_tree(work); free(work); free(tgz);
}

static void test_archive_modes(void) {
  char *work = mk_tmp("bwrap-tar"), *cmd, *p;
  if (asprintf(&p, "%s/data.txt", root) < 0) exit(1);
  write_file(p, "payload", 7, 0640);
  free(p);
  /* the command line is ours: temporary paths without quotes or spaces */
  size_t len = 0;
  char line[8192] = "";
  for (int i = 0; argv_bwrap[i]; i++) len += (size_t)snprintf(line + len, sizeof line - len, "'%s' ", argv_bwrap[i]);
  if (asprintf(&cmd, "%s %s archive /workspace --exclude made > %s/a.tgz", line, INNER, work) < 0) exit(1);
  ok(system(cmd) == 0, "archive mode runs inside bwrap");
  free(cmd);
  char *dst;
  if (asprintf(&dst, "%s/out", work) < 0) exit(1);
  mkdir(dst, 0777);
  chmod(dst, 0777);
  /* extract into a second tree bound at /workspace */
  char *saved = argv_bwrap[0];
  for (int i = 0; argv_bwrap[i]; i++)
    if (!strcmp(argv_bwrap[i], root)) argv_bwrap[i] = dst;
  len = 0;
  for (int i = 0; argv_bwrap[i]; i++) len += (size_t)snprintf(line + len, sizeof line - len, "'%s' ", argv_bwrap[i]);
  for (int i = 0; argv_bwrap[i]; i++)
    if (argv_bwrap[i] == dst) argv_bwrap[i] = root;
  argv_bwrap[0] = saved;
  if (asprintf(&cmd, "%s %s extract /workspace < %s/a.tgz > %s/x.json", line, INNER, work, work) < 0) exit(1);
  ok(system(cmd) == 0, "extract mode runs inside bwrap");
  free(cmd);
  if (asprintf(&p, "%s/data.txt", dst) < 0) exit(1);
  char *c = read_file(p, NULL);
  struct stat st;
  ok(c && !strcmp(c, "payload") && stat(p, &st) == 0 && (st.st_mode & 0777) == 0640, "the round trip through bwrap keeps bytes and mode");
  free(c); free(p);
  if (asprintf(&p, "%s/made", dst) < 0) exit(1);
  ok(lstat(p, &st) < 0, "--exclude worked");
  free(p); free(dst);
  rm_tree(work); free(work);
}

int main(void) {
  agent_locate();
  if (access("/usr/bin/bwrap", X_OK) != 0) {
    printf("not ok 1 - bubblewrap is not installed (scripts/deps.sh installs it)\n1..1\n");
    return 1;
  }
  root = mk_tmp("bwrap");
  chmod(root, 0777);
  build_bwrap();
  test_runtime();
  test_archive_modes();
  rm_tree(root);
  free(root);
  return tap_done();
}
