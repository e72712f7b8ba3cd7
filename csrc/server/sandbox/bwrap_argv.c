/*
** The bubblewrap command line of one run.
**
** What the program sees: /usr read-only with the merged-usr symlinks, a
** handful of /etc files (the small ones copied in from fds the runner
** opens, ux_sb_etc_open; directories bound), a fresh /proc, a minimal
** read-only /dev with terminals of its own (made once, mounts.c; bwrap's
** --dev without it), a private /tmp and /dev/shm (tmpfs), its source read-only in /code, the work directory
** read-write in /sandbox (or the spec's work_mount) and the spec's
** read-only binds. The root itself is remounted read-only, so nothing
** else is writable. Host paths that must not be visible (/root, /home,
** /work, /var, the server's data directory) are simply never mounted.
** Every run has its own network namespace. bwrap waits on --block-fd,
** its set-up done, until the runner lets the program start (setup.c,
** runner.c); then it execs the program: the words of a language script
** that is one plain `exec` itself (no shell started), any other script
** under /bin/sh -c, or the spec's argv through sh's exec.
**
** The work and code directories may live below a directory the slot uid
** cannot traverse (the server's 0700 data directory). Running as root,
** the runner's child first bind-mounts them (from open fds) at fixed
** paths under a tmpfs in a private mount namespace, and bwrap binds those;
** otherwise (not root) they are passed with --bind-fd.
*/
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/validate.h"
#include "server/sandbox/membudget.h"
#include "server/sandbox/bwrap_argv.h"
#include "server/mem.h"
#include "server/sandbox/tree.h"

static void push(ux_argv *a, const char *s) {
  if (a->oom) return;
  if (a->n + 2 > a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 128;
    char **v = ux_xrealloc(a->v, cap * sizeof *v);
    a->v = v; a->cap = cap;
  }
  a->v[a->n] = ux_xstrdup(s);
  a->v[++a->n] = NULL;
}

static void push2(ux_argv *a, const char *x, const char *y) { push(a, x); push(a, y); }
static void push3(ux_argv *a, const char *x, const char *y, const char *z) {
  push(a, x); push(a, y); push(a, z);
}

void ux_sb_argv_free(ux_argv *a) {
  for (size_t i = 0; i < a->n; i++) free(a->v[i]);
  free(a->v);
  a->v = NULL; a->n = a->cap = 0; a->oom = 0;
}

/* the name's rule is the core's (validate.h), as for the request */
int ux_sb_env_ok(const char *kv) {
  const char *eq = kv ? strchr(kv, '=') : NULL;
  return eq && !unsb_env_name_check(kv, (size_t)(eq - kv));
}

/* Debian is merged-usr: /bin, /lib, ... are symlinks into /usr. Mirror
** whichever of them exist so the same paths work inside. Read once per
** process (the host's root does not change under a running server). */
static const char *const top[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
#define NTOP (sizeof top / sizeof top[0])
static char link_target[NTOP][64];
static pthread_once_t links_once = PTHREAD_ONCE_INIT;

static void read_links(void) {
  char path[64];
  for (size_t i = 0; i < NTOP; i++) {
    snprintf(path, sizeof path, "/%s", top[i]);
    ssize_t n = readlink(path, link_target[i], sizeof link_target[i] - 1);
    link_target[i][n > 0 ? n : 0] = '\0';
    if (strncmp(link_target[i], "usr/", 4) != 0 && strncmp(link_target[i], "/usr/", 5) != 0)
      link_target[i][0] = '\0';
  }
}

static void usr_links(ux_argv *a) {
  char path[64];
  pthread_once(&links_once, read_links);
  for (size_t i = 0; i < NTOP; i++) {
    if (!link_target[i][0]) continue;
    snprintf(path, sizeof path, "/%s", top[i]);
    push3(a, "--symlink", link_target[i], path);
  }
}

static void etc_ro(ux_argv *a, const char *path) {
  push3(a, "--ro-bind-try", path, path);
}

/* The /etc files programs read, copied into the sandbox's root (--file)
** rather than bound: a bind costs bwrap a read of the whole mount table
** and the kernel a mount to create and tear down, a copy of a small file
** neither. The runner opens them (ux_sb_etc_open) as the sandbox is
** prepared, so each sandbox gets them as they are then. Directories stay
** binds (etc_ro). The `net` ones only for a semitrusted run. */
static const struct { const char *path; int net; } etc_files[UX_SB_ETC_FILES] = {
  { "/etc/ld.so.cache", 0 }, { "/etc/ld.so.conf", 0 }, { "/etc/localtime", 0 },
  { "/etc/nsswitch.conf", 0 }, { "/etc/hosts", 0 },
  { "/etc/host.conf", 1 }, { "/etc/gai.conf", 1 }, { "/etc/protocols", 1 }, { "/etc/services", 1 },
};

void ux_sb_etc_open(const ux_run_spec *spec, int fds[UX_SB_ETC_FILES]) {
  for (int i = 0; i < UX_SB_ETC_FILES; i++) {
    fds[i] = -1;
    if (etc_files[i].net && !spec->network) continue;
    /* what a bind of it would have shown the sandbox's uid: a regular
    ** file that everyone may read (a symlink, /etc/localtime, is followed
    ** as the bind followed it) */
    int fd = open(etc_files[i].path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IROTH)) fds[i] = fd;
    else if (fd >= 0) close(fd);
  }
}

/* A read-only file in the sandbox's root with the contents of fd `fd`. */
static void etc_copy(ux_argv *a, int fd, const char *path) {
  char num[32];
  snprintf(num, sizeof num, "%d", fd);
  push2(a, "--perms", "0444");
  push3(a, "--file", num, path);
}

char *ux_sb_script(const ux_lang *lang, const ux_run_spec *spec) {
  unsigned long mem_mb = (unsigned long)(ux_run_memory_bytes(spec->vcpu) >> 20);
  char heap[32];
  snprintf(heap, sizeof heap, "%lu", mem_mb * 3 / 4);
  /* the built program, kept as an artifact when the run wants them */
  const char *keep = spec->want_artifacts ? "cp /tmp/.ux-prog main && " : "";
  size_t cap = strlen(lang->script) + 64 + strlen(keep);
  char *s = ux_xmalloc(cap), *o = s;
  if (!s) return NULL;
  for (const char *p = lang->script; *p; ) {
    if (strncmp(p, "{MEM}", 5) == 0) { o += sprintf(o, "%s", heap); p += 5; }
    else if (strncmp(p, "{KEEP}", 6) == 0) { o += sprintf(o, "%s", keep); p += 6; }
    else *o++ = *p++;
  }
  *o = '\0';
  return s;
}

/* Names of the environment checked, and their size bounded. */
static int check_env(const ux_run_spec *spec, char *err, size_t errlen) {
  size_t env_bytes = 0;
  for (size_t i = 0; i < spec->n_env; i++) {
    if (!ux_sb_env_ok(spec->env[i])) {
      snprintf(err, errlen, "bad env entry '%.100s': the name must match "
               "[A-Za-z_][A-Za-z0-9_]* and be followed by '='",
               spec->env[i] ? spec->env[i] : "(null)");
      return -1;
    }
    env_bytes += strlen(spec->env[i]) + 1;
  }
  if (env_bytes > UX_SB_ENV_BYTES) {
    snprintf(err, errlen, "env too large: %zu bytes (at most %lu)",
             env_bytes, (unsigned long)UX_SB_ENV_BYTES);
    return -1;
  }
  return 0;
}

/* The namespaces, identity and the fds bwrap talks to the runner on. */
static void namespaces(ux_argv *a) {
  char num[32];
  push(a, "/usr/bin/bwrap");
  push(a, "--unshare-user");
  push(a, "--unshare-pid");
  push(a, "--unshare-ipc");
  push(a, "--unshare-uts");
  push(a, "--unshare-cgroup-try");
  push(a, "--unshare-net");          /* semitrusted: slirp4netns, net.c */
  push(a, "--disable-userns");       /* no nested user namespaces */
  push(a, "--die-with-parent");
  push(a, "--new-session");          /* no TIOCSTI on a terminal */
  snprintf(num, sizeof num, "%d", UX_FD_INFO);
  push2(a, "--info-fd", num);        /* the runner kills a run by its pid
                                        namespace: see wait.c */
  /* every namespace and mount is made before bwrap reads this fd; the
  ** program starts once the runner writes to it: runner.c, setup.c */
  snprintf(num, sizeof num, "%d", UX_FD_BLOCK);
  push2(a, "--block-fd", num);
  push2(a, "--cap-drop", "ALL");
  snprintf(num, sizeof num, "%u", UX_SB_INNER_ID);
  push2(a, "--uid", num);
  push2(a, "--gid", num);
  push2(a, "--hostname", "sandbox");
}

/* /usr, the merged-usr links and the /etc entries the programs read. */
static void system_files(ux_argv *a, const ux_run_spec *spec, const ux_sb_plan *plan) {
  push3(a, "--ro-bind", "/usr", "/usr");
  usr_links(a);
  for (int i = 0; plan->etc_fd && i < UX_SB_ETC_FILES; i++)
    if (plan->etc_fd[i] >= 0) etc_copy(a, UX_FD_ETC + i, etc_files[i].path);
  etc_ro(a, "/etc/ld.so.conf.d");
  etc_ro(a, "/etc/alternatives");   /* /usr/bin/java -> /etc/alternatives/java */
  etc_ro(a, "/etc/perl");
  if (plan->lang)
    for (const char *const *e = ux_sb_lang_etc(plan->lang); *e; e++) etc_ro(a, *e);
  if (spec->network) {
    /* slirp4netns answers DNS at 10.0.2.3, whatever the host uses */
    etc_copy(a, UX_FD_RESOLV, "/etc/resolv.conf");
    etc_ro(a, "/etc/ssl");
    etc_ro(a, "/etc/ca-certificates");
  }
  etc_copy(a, UX_FD_PASSWD, "/etc/passwd");
  etc_copy(a, UX_FD_GROUP, "/etc/group");
}

/* /proc, /dev, the private tmpfs, the work and code directories, the
** spec's read-only binds; then the root goes read-only. */
static void run_files(ux_argv *a, const ux_run_spec *spec, const ux_sb_plan *plan) {
  char num[32];
  const char *work = ux_sb_work_mount(spec);
  push2(a, "--proc", "/proc");
  if (plan->dev) push3(a, "--dev-bind", plan->dev, "/dev");   /* mounts.c */
  else push2(a, "--dev", "/dev");
  snprintf(num, sizeof num, "%lu", plan->tmp_size);
  push2(a, "--size", num);
  push2(a, "--tmpfs", "/tmp");
  snprintf(num, sizeof num, "%lu", plan->shm_size);
  push2(a, "--size", num);
  push2(a, "--tmpfs", "/dev/shm");
  if (plan->mounted) {
    push3(a, "--bind", UX_SB_MNT_WORK, work);
    push3(a, "--ro-bind", UX_SB_MNT_CODE, UX_SB_CODE_DIR);
  } else {
    snprintf(num, sizeof num, "%d", UX_FD_WORK);
    push3(a, "--bind-fd", num, work);
    snprintf(num, sizeof num, "%d", UX_FD_CODE);
    push3(a, "--ro-bind-fd", num, UX_SB_CODE_DIR);
  }
  for (size_t i = 0; i < spec->n_ro_binds; i++) {
    char src[64];
    if (plan->mounted) {
      snprintf(src, sizeof src, UX_SB_MNT_RO "/%zu", i);
      push3(a, "--ro-bind", src, spec->ro_binds[i].dest);
    } else {
      snprintf(num, sizeof num, "%d", UX_FD_RO + (int)i);
      push3(a, "--ro-bind-fd", num, spec->ro_binds[i].dest);
    }
  }
  push2(a, "--remount-ro", "/");
  push2(a, "--chdir", work);
}

static void environment(ux_argv *a, const ux_run_spec *spec) {
  const char *work = ux_sb_work_mount(spec);
  push(a, "--clearenv");
  push3(a, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin");
  push3(a, "--setenv", "HOME", work);
  push3(a, "--setenv", "LANG", "C.UTF-8");
  push3(a, "--setenv", "USER", "sandbox");
  push3(a, "--setenv", "LOGNAME", "sandbox");
  push3(a, "--setenv", "TMPDIR", "/tmp");
  for (size_t i = 0; i < spec->n_env && !a->oom; i++) {
    const char *kv = spec->env[i], *eq = strchr(kv, '=');
    char *key = ux_xstrndup(kv, (size_t)(eq - kv));
    push3(a, "--setenv", key, eq + 1);
    free(key);
  }
}

/* 1 when a script is one `exec` of fixed words: no quoting, expansion,
** redirection or second command, so exec'ing the words is what /bin/sh
** would do, minus starting a shell. */
static int plain_exec(const char *script) {
  if (strncmp(script, "exec ", 5) != 0) return 0;
  for (const char *p = script + 5; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          strchr(" /._-+=:,@", *p))) return 0;
  return 1;
}

/* The program: the spec's argv (through /bin/sh's exec, so a program
** not found is exit 127 as from any shell), a plain script's words, or
** the script under /bin/sh. bwrap execs it once released. */
static void command(ux_argv *a, const ux_run_spec *spec, const ux_sb_plan *plan) {
  push(a, "--");
  if (spec->argv) {
    push3(a, "/bin/sh", "-c", "exec \"$@\"");
    push(a, "sh");
    for (const char *const *v = spec->argv; *v; v++) push(a, *v);
  } else if (plain_exec(plan->script)) {
    char *words = strdup(plan->script + 5), *save = NULL;
    if (!words) { a->oom = 1; return; }
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) push(a, w);
    free(words);
  } else {
    push3(a, "/bin/sh", "-c", plan->script);
  }
}

int ux_sb_build_argv(ux_argv *a, const ux_run_spec *spec, const ux_sb_plan *plan,
                     char *err, size_t errlen) {
  if (check_env(spec, err, errlen) != 0) return -1;
  namespaces(a);
  if (plan->broken) push3(a, "--ro-bind", "/nonexistent/unsb-broken", "/unsb-broken");
  system_files(a, spec, plan);
  run_files(a, spec, plan);
  environment(a, spec);
  command(a, spec, plan);
  if (a->oom) {
    snprintf(err, errlen, "out of memory building the sandbox command line");
    return -1;
  }
  return 0;
}

const char *ux_sb_work_mount(const ux_run_spec *spec) {
  return spec->work_mount ? spec->work_mount : UX_SB_WORK_DIR;
}

/* First components the runner mounts (or links) itself. */
static const char *const reserved[] = {
  "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "proc", "dev", "tmp",
  "code", "etc", "sys", NULL,
};

int ux_sb_check_mount_point(const char *what, const char *path, char *err, size_t errlen) {
  char sub[300];
  if (!path || path[0] != '/' || !path[1]) {
    snprintf(err, errlen, "%s must be an absolute path other than /, got '%.100s'",
             what, path ? path : "(null)");
    return -1;
  }
  if (ux_tree_check_name(path + 1, sub, sizeof sub) != 0) {
    snprintf(err, errlen, "%s: %s", what, sub);
    return -1;
  }
  size_t first = strcspn(path + 1, "/");
  for (const char *const *r = reserved; *r; r++)
    if (strlen(*r) == first && strncmp(path + 1, *r, first) == 0) {
      snprintf(err, errlen, "%s '%.100s' is inside /%s, which the sandbox mounts itself",
               what, path, *r);
      return -1;
    }
  return 0;
}

/* 1 when `path` is `dir` or below it. */
static int below(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* fd is open, and usable for reading (want O_RDONLY) or writing. */
static int fd_ok(const char *what, int fd, int want, char *err, size_t errlen) {
  if (fd == 0) return 0;
  int fl = fd > 0 ? fcntl(fd, F_GETFL) : -1;
  if (fl < 0) {
    snprintf(err, errlen, "%s %d is not an open file descriptor", what, fd);
    return -1;
  }
  int acc = fl & O_ACCMODE;
  if ((want == O_RDONLY && acc == O_WRONLY) || (want == O_WRONLY && acc == O_RDONLY)) {
    snprintf(err, errlen, "%s %d is not open for %s", what, fd,
             want == O_RDONLY ? "reading" : "writing");
    return -1;
  }
  return 0;
}

static int check_argv(const ux_run_spec *spec, char *err, size_t errlen) {
  size_t n = 0, bytes = 0;
  if (spec->code) {
    snprintf(err, errlen, "argv and code exclude each other");
    return -1;
  }
  for (; spec->argv[n] && n <= UX_SB_ARGV_MAX; n++) bytes += strlen(spec->argv[n]) + 1;
  if (n == 0 || !spec->argv[0][0]) {
    snprintf(err, errlen, "argv needs a program name");
    return -1;
  }
  if (n > UX_SB_ARGV_MAX || bytes > UX_SB_ENV_BYTES) {
    snprintf(err, errlen, "argv too large (at most %d entries and %lu bytes)",
             UX_SB_ARGV_MAX, (unsigned long)UX_SB_ENV_BYTES);
    return -1;
  }
  return 0;
}

int ux_sb_check_spec_io(const ux_run_spec *spec, char *err, size_t errlen) {
  if (spec->argv && check_argv(spec, err, errlen) != 0) return -1;
  if (fd_ok("in_fd", spec->in_fd, O_RDONLY, err, errlen) != 0 ||
      fd_ok("out_fd", spec->out_fd, O_WRONLY, err, errlen) != 0 ||
      fd_ok("pass_fd", spec->pass_fd, O_RDWR, err, errlen) != 0) return -1;
  const char *work = ux_sb_work_mount(spec);
  if (spec->work_mount && ux_sb_check_mount_point("work_mount", work, err, errlen) != 0) return -1;
  if (spec->n_ro_binds > UX_SB_RO_BINDS || (spec->n_ro_binds && !spec->ro_binds)) {
    snprintf(err, errlen, "at most %d read-only binds", UX_SB_RO_BINDS);
    return -1;
  }
  for (size_t i = 0; i < spec->n_ro_binds; i++) {
    const ux_ro_bind *b = &spec->ro_binds[i];
    if (ux_sb_check_mount_point("ro bind destination", b->dest, err, errlen) != 0) return -1;
    if (below(b->dest, work) || below(work, b->dest)) {
      snprintf(err, errlen, "ro bind destination '%.100s' overlaps the work directory %s",
               b->dest, work);
      return -1;
    }
    for (size_t j = 0; j < i; j++)
      if (below(b->dest, spec->ro_binds[j].dest) || below(spec->ro_binds[j].dest, b->dest)) {
        snprintf(err, errlen, "ro bind destinations '%.100s' and '%.100s' overlap",
                 spec->ro_binds[j].dest, b->dest);
        return -1;
      }
    if (b->fd > 0 ? fcntl(b->fd, F_GETFD) < 0 : (!b->src || b->src[0] != '/')) {
      snprintf(err, errlen, "ro bind %zu needs an open fd or an absolute source path", i);
      return -1;
    }
  }
  return 0;
}
