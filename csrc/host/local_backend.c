/*
** local_backend.c: `unlua --local`, a private unsandboxd for one run.
**
** The server is a child in its own process group, so the terminal's
** Ctrl-C reaches only unlua, which decides how to stop it. It gets a
** throw-away directory (data/ and unsandboxd.log inside) and announces its
** URL and dev keys (and, with the Control Plane, its URL and token) on a
** pipe that is its stdout.
**
** The server must be stopped on every way out of unlua:
**   - normal end, script error, os.exit(): local_stop(), which is also
**     registered with atexit() because os.exit() calls exit();
**   - a fatal signal where stock lua would die (a second Ctrl-C, SIGTERM,
**     SIGHUP): local_fatal_signal() does the same with async-signal-safe
**     calls only, then dies of that signal;
**   - unlua killed outright (SIGKILL, a crash): the child asked the kernel
**     for SIGTERM when its parent dies (PR_SET_PDEATHSIG); only the temp
**     directory is left behind then.
**
** The state is one static struct: a process has at most one private
** backend, and neither signal handlers nor atexit() take arguments.
*/
#include "host/local_backend.h"
#include "host/local_server.h"
#include "core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
  pid_t pid;                  /* the server; 0 when none runs */
  pid_t owner;                /* the unlua process that started it */
  int out_fd;                 /* read end of the server's stdout */
  int registered;             /* atexit(local_stop) done */
  int announced;              /* it started and told us its URL */
  const char *progname;       /* for messages */
  volatile sig_atomic_t done; /* stopped and cleaned (or never started) */
  char top[PATH_MAX - 32];    /* temp directory holding data/ and the log */
  char data[PATH_MAX];
  char log[PATH_MAX];
  const char *rm_argv[5];           /* "rm -rf -- top", prepared for the signal path */
} lb = { 0, 0, -1, 0, 0, "unlua", 1, "", "", "", { NULL } };

static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define N_FATAL ((int)(sizeof(fatal_signals) / sizeof(fatal_signals[0])))


/*
** {==================================================================
** Small helpers
** ===================================================================
*/

static int is_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Looks name up in $PATH; writes the full path to out. */
static int search_path(const char *name, char *out, size_t outlen) {
  const char *p = getenv("PATH");
  if (p == NULL || *p == '\0') p = "/usr/local/bin:/usr/bin:/bin";
  while (*p) {
    size_t len = strcspn(p, ":");
    int n = (len == 0) ? snprintf(out, outlen, "./%s", name)
                       : snprintf(out, outlen, "%.*s/%s", (int)len, p, name);
    if (n > 0 && (size_t)n < outlen && is_executable(out)) return 1;
    p += len;
    if (*p == ':') p++;
  }
  return 0;
}

static void sleep_ms(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Blocks (or restores) the fatal signals around state changes, so the
** signal path never sees a half-started or half-stopped backend. */
static void block_fatal(sigset_t *old) {
  sigset_t set;
  int i;
  sigemptyset(&set);
  for (i = 0; i < N_FATAL; i++) sigaddset(&set, fatal_signals[i]);
  sigprocmask(SIG_BLOCK, &set, old);
}

/* What the fatal signals did before local_start took them. */
static struct sigaction saved_actions[N_FATAL];
static int taken[N_FATAL];

/* Routes the fatal signals to local_fatal_signal. SIGTERM and SIGHUP stay
** ignored if they were (nohup); SIGINT is always taken, as lua.c does
** around every call. */
static void take_fatal_signals(void) {
  struct sigaction sa;
  int i;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = local_fatal_signal;
  sigfillset(&sa.sa_mask);  /* no fatal signal interrupts the cleanup */
  for (i = 0; i < N_FATAL; i++) {
    sigaction(fatal_signals[i], NULL, &saved_actions[i]);
    if (fatal_signals[i] != SIGINT && saved_actions[i].sa_handler == SIG_IGN)
      continue;
    sigaction(fatal_signals[i], &sa, NULL);
    taken[i] = 1;
  }
}

static void restore_fatal_signals(void) {
  int i;
  for (i = 0; i < N_FATAL; i++)
    if (taken[i]) {
      sigaction(fatal_signals[i], &saved_actions[i], NULL);
      taken[i] = 0;
    }
}

void local_print_log_tail(const char *log) {
  char buf[2048 + 1];
  long start;
  size_t n;
  char *text;
  FILE *f = fopen(log, "rb");
  if (f == NULL) return;
  fseek(f, 0, SEEK_END);
  start = ftell(f) - (long)(sizeof buf - 1);
  fseek(f, start > 0 ? start : 0, SEEK_SET);
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  text = buf;
  if (start > 0 && (text = strchr(buf, '\n')) != NULL) text++;  /* whole lines */
  if (text == NULL || *text == '\0') {
    fprintf(stderr, "  (its log %s is empty)\n", log);
    return;
  }
  fprintf(stderr, "  last lines of its log:\n");
  while (*text) {
    size_t len = strcspn(text, "\n");
    fprintf(stderr, "  | %.*s\n", (int)len, text);
    text += len;
    if (*text == '\n') text++;
  }
}

/* }================================================================== */


/*
** {==================================================================
** Stopping (async-signal-safe parts first)
** ===================================================================
*/

/* Has the server exited? Leaves the zombie for waitpid, so its pid, which
** is also its process-group id, cannot be reused in between. */
static int has_exited(pid_t pid, siginfo_t *si) {
  memset(si, 0, sizeof *si);
  return waitid(P_PID, (id_t)pid, si, WEXITED | WNOHANG | WNOWAIT) == 0
         && si->si_pid == pid;
}

/* SIGTERM, a bounded wait, then SIGKILL to the whole group, which also
** takes anything the server left behind; finally reap it. */
static void terminate_server(void) {
  siginfo_t si;
  pid_t pid = lb.pid;
  long waited;
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (waited = 0; waited < LOCAL_STOP_GRACE_MS && !has_exited(pid, &si); waited += 20)
    sleep_ms(20);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  /* in case setpgid failed */
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  lb.pid = 0;
}

/* The signal path cannot use nftw (it allocates): run rm instead. */
static void remove_tree_async(void) {
  pid_t pid;
  if (lb.rm_argv[0] == NULL) return;
  pid = fork();
  if (pid == 0) {
    execv("/bin/rm", (char *const *)lb.rm_argv);
    _exit(127);
  }
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

void local_fatal_signal(int sig) {
  int saved = errno;
  if (!lb.done && lb.owner == getpid()) {
    lb.done = 1;
    terminate_server();
    remove_tree_async();
  }
  /* die of the signal, as without a handler: it is blocked while we run
  ** and is delivered, with the default action, when we return */
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved;
}

static int make_writable(const char *path, const struct stat *st, int type,
                         struct FTW *ftw) {
  (void)ftw;
  if (type == FTW_D) chmod(path, (st->st_mode & 07777) | S_IRWXU);
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st; (void)type; (void)ftw;
  remove(path);
  return 0;
}

static void remove_tree(const char *dir) {
  if (dir[0] == '\0') return;
  /* sandboxes may leave read-only directories; we own everything here */
  nftw(dir, make_writable, 16, FTW_PHYS);
  nftw(dir, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
}

void local_stop(void) {
  sigset_t old;
  siginfo_t si;
  if (lb.done || lb.owner != getpid()) return;  /* never started, or a fork */
  block_fatal(&old);
  if (!lb.done) {
    if (lb.announced && lb.pid > 0 && has_exited(lb.pid, &si)) {
      fprintf(stderr, "%s: warning: the local unsandboxd (pid %d) exited "
              "before the script ended (%s %d)\n", lb.progname, (int)lb.pid,
              si.si_code == CLD_EXITED ? "status" : "signal", si.si_status);
      local_print_log_tail(lb.log);
    }
    terminate_server();
    if (lb.out_fd >= 0) { close(lb.out_fd); lb.out_fd = -1; }
    remove_tree(lb.top);
    lb.done = 1;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* }================================================================== */


/*
** {==================================================================
** Starting
** ===================================================================
*/

int local_find_server(const char *progname, const char *exedir,
                      char *out, size_t outlen) {
  const char *env = getenv("UNSANDBOXD");
  if (env != NULL && *env != '\0') {
    if (is_executable(env) && strlen(env) < outlen) {
      strcpy(out, env);
      return 1;
    }
    fprintf(stderr, "%s: UNSANDBOXD=%s is not an executable file\n",
            progname, env);
    return 0;
  }
  if (exedir[0] != '\0') {
    int n = snprintf(out, outlen, "%s/unsandboxd", exedir);
    if (n > 0 && (size_t)n < outlen && is_executable(out)) return 1;
  }
  if (search_path("unsandboxd", out, outlen)) return 1;
  fprintf(stderr,
          "%s: --local needs unsandboxd, which was not found\n"
          "  (looked at $UNSANDBOXD, %s%sunsandboxd and $PATH)\n"
          "  the LuaRocks package has no unsandboxd (it needs libmicrohttpd,\n"
          "  jansson, SQLite, libarchive and bubblewrap): build it with `make`\n"
          "  in the unsandbox source tree (`make install` puts it on $PATH),\n"
          "  or set UNSANDBOXD=/path/to/unsandboxd\n",
          progname, exedir, exedir[0] ? "/" : "");
  return 0;
}

static int have_bwrap(void) {
  char buf[PATH_MAX];
  return is_executable("/usr/bin/bwrap") || search_path("bwrap", buf, sizeof buf);
}

/* Makes the temp directory: top/, top/data/, and the log's path. */
static int make_dirs(const char *progname) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
  if (snprintf(lb.top, sizeof lb.top, "%s/unlua-local.XXXXXX", tmp)
      >= (int)sizeof lb.top || mkdtemp(lb.top) == NULL) {
    fprintf(stderr, "%s: cannot create a temporary directory in %s: %s\n",
            progname, tmp, strerror(errno));
    lb.top[0] = '\0';
    return 0;
  }
  snprintf(lb.data, sizeof lb.data, "%s/data", lb.top);
  snprintf(lb.log, sizeof lb.log, "%s/unsandboxd.log", lb.top);
  if (mkdir(lb.data, 0700) != 0) {
    fprintf(stderr, "%s: cannot create %s: %s\n", progname, lb.data, strerror(errno));
    rmdir(lb.top);
    lb.top[0] = '\0';
    return 0;
  }
  lb.rm_argv[0] = "rm";
  lb.rm_argv[1] = "-rf";
  lb.rm_argv[2] = "--";
  lb.rm_argv[3] = lb.top;
  lb.rm_argv[4] = NULL;
  return 1;
}

/* In the child: a new process group, death with the parent, plain signal
** state, stdin from /dev/null, stdout to the pipe, stderr to the log. */
static void exec_server(const char *path, int out_fd, pid_t parent) {
  const char *argv[] = { path, "--listen", "127.0.0.1:0", "--data", lb.data,
                   "--dev-keys", NULL };
  sigset_t none;
  int fd, i;
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);  /* the parent died before prctl */
  for (i = 0; i < N_FATAL; i++) signal(fatal_signals[i], SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  fd = open(lb.log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0 && fd != STDERR_FILENO) { dup2(fd, STDERR_FILENO); close(fd); }
  fd = open("/dev/null", O_RDONLY);
  if (fd >= 0 && fd != STDIN_FILENO) { dup2(fd, STDIN_FILENO); close(fd); }
  dup2(out_fd, STDOUT_FILENO);  /* clears close-on-exec */
  execv(path, (char *const *)argv);
  dprintf(STDERR_FILENO, "cannot run %s: %s\n", path, strerror(errno));
  _exit(127);
}

void local_take_line(const char *line, local_announcement *a) {
  static const char *const keys[] = { "UNSANDBOX_URL=", "UNSANDBOX_PUBLIC_KEY=",
                                      "UNSANDBOX_SECRET_KEY=", "SANDBOX_CONTROL_PLANE_URL=",
                                      "SANDBOX_TOKEN=", "UNSANDBOXD_PID=" };
  char *dest[6] = { a->url, a->pub, a->sec, a->cp_url, a->cp_token, a->pid };
  size_t size[6] = { sizeof a->url, sizeof a->pub, sizeof a->sec, sizeof a->cp_url,
                     sizeof a->cp_token, sizeof a->pid };
  int i;
  for (i = 0; i < 6; i++) {
    size_t klen = strlen(keys[i]);
    if (strncmp(line, keys[i], klen) == 0) {
      snprintf(dest[i], size[i], "%s", line + klen);
      return;
    }
  }
}

/* Complete: the three execution API values, and either both Control
** Plane values or a quiet pipe once the rest is in (a server without a
** Control Plane announces none: `quiet` says nothing more came). */
static int complete(const local_announcement *a, int quiet) {
  if (!(a->url[0] && a->pub[0] && a->sec[0])) return 0;
  return (a->cp_url[0] && a->cp_token[0]) || quiet;
}

/* Reads the announcement until it is complete, EOF or the deadline.
** Returns 1, or 0 with a reason in why. The server writes all its lines
** at once, so the quiet wait for Control Plane lines is short. */
static int read_announcement(local_announcement *a, const char **why) {
  char buf[4096];
  size_t len = 0;
  long deadline = (long)unsb_monotonic_ms() + LOCAL_START_TIMEOUT_S * 1000L;
  int quiet = 0;
  memset(a, 0, sizeof *a);
  while (!complete(a, quiet)) {
    struct pollfd pfd = { lb.out_fd, POLLIN, 0 };
    long left = deadline - (long)unsb_monotonic_ms();
    int have_exec = a->url[0] && a->pub[0] && a->sec[0];
    char *nl;
    ssize_t got;
    int r;
    if (left <= 0) { *why = "it did not announce its URL in time"; return 0; }
    r = poll(&pfd, 1, have_exec ? 300 : (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && have_exec) { quiet = 1; continue; }
    if (r <= 0) continue;  /* timeout: checked above */
    got = read(lb.out_fd, buf + len, sizeof buf - 1 - len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (have_exec) { quiet = 1; continue; }
      *why = "it exited before announcing its URL";
      return 0;
    }
    len += (size_t)got;
    buf[len] = '\0';
    while ((nl = strchr(buf, '\n')) != NULL) {  /* whole lines only */
      *nl = '\0';
      if (nl > buf && nl[-1] == '\r') nl[-1] = '\0';
      local_take_line(buf, a);
      len -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, len + 1);
    }
    if (len == sizeof buf - 1) { *why = "it wrote an overlong line"; return 0; }
  }
  return 1;
}

void local_export_config(const local_announcement *a, long pid) {
  char pidbuf[32];
  snprintf(pidbuf, sizeof pidbuf, "%ld", pid);
  setenv("UNSANDBOX_URL", a->url, 1);
  setenv("UNSANDBOX_PUBLIC_KEY", a->pub, 1);
  setenv("UNSANDBOX_SECRET_KEY", a->sec, 1);
  if (a->cp_url[0] && a->cp_token[0]) {
    setenv("SANDBOX_CONTROL_PLANE_URL", a->cp_url, 1);
    setenv("SANDBOX_TOKEN", a->cp_token, 1);
  }
  setenv("UNSANDBOX_LOCAL", "1", 1);
  setenv("UNSANDBOXD_PID", pidbuf, 1);
}

int local_start(const char *progname, const char *exedir) {
  char path[PATH_MAX];
  local_announcement a;
  const char *why = NULL;
  int fds[2];
  sigset_t old;
  pid_t parent = getpid();
  lb.progname = progname;
  if (local_server_reuse(progname)) return 0;
  if (!have_bwrap()) {
    fprintf(stderr, "%s: --local runs code under bubblewrap, but bwrap was not "
            "found (/usr/bin/bwrap or $PATH)\n"
            "  install it with `apt-get install bubblewrap`\n", progname);
    return -1;
  }
  if (!local_find_server(progname, exedir, path, sizeof path)) return -1;
  if (!make_dirs(progname)) return -1;
  if (pipe2(fds, O_CLOEXEC) != 0) {
    fprintf(stderr, "%s: pipe: %s\n", progname, strerror(errno));
    remove_tree(lb.top);
    return -1;
  }
  block_fatal(&old);
  lb.owner = parent;
  lb.done = 0;
  take_fatal_signals();
  lb.pid = fork();
  if (lb.pid == 0) exec_server(path, fds[1], parent);
  close(fds[1]);
  lb.out_fd = fds[0];
  if (lb.pid < 0) {
    fprintf(stderr, "%s: fork: %s\n", progname, strerror(errno));
    lb.pid = 0;
  }
  else
    setpgid(lb.pid, lb.pid);  /* also here: no race with the child's call */
  if (!lb.registered) lb.registered = (atexit(local_stop) == 0);
  sigprocmask(SIG_SETMASK, &old, NULL);
  /* a Ctrl-C from here on stops the server through local_fatal_signal */
  if (lb.pid > 0 && read_announcement(&a, &why)) {
    local_export_config(&a, (long)lb.pid);
    explicit_bzero(&a, sizeof a);   /* the keys live on in the environment only */
    lb.announced = 1;
    if (isatty(STDERR_FILENO))
      fprintf(stderr, "%s: a private unsandboxd for this run (pid %d; `un local start` keeps "
              "one running between runs)\n", progname, (int)lb.pid);
    return 0;
  }
  explicit_bzero(&a, sizeof a);
  if (why != NULL) {
    fprintf(stderr, "%s: the local unsandboxd (%s) did not start: %s\n",
            progname, path, why);
    local_print_log_tail(lb.log);
  }
  local_stop();
  restore_fatal_signals();
  return -1;
}

/* }================================================================== */
