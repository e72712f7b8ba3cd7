/*
** local_server.c: the user's lasting unsandboxd (see local_server.h).
**
** Starting it is a double fork: the middle child makes a new session (no
** terminal, so the Ctrl-C of the shell that ran `un local start` never
** reaches the server) and forks the server, whose parent becomes init; the
** middle child tells us the server's pid on a pipe and exits. We then wait
** for the server's own --env-file, which it writes 0600 once it listens:
** no second announcement channel, and the file is what every later command
** reads. Stopping is by that pid, after checking that the process is still
** the server of this env file.
*/
#include "host/local_server.h"
#include "core/interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 50

static void nap(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ~/.unsandbox/local and the paths in it. */
static int set_paths(local_server *s, char *err, size_t errlen) {
  const char *home = getenv("HOME");
  memset(s, 0, sizeof *s);
  if (home == NULL || home[0] != '/') {
    snprintf(err, errlen, "HOME is not set to an absolute directory");
    return -1;
  }
  if (snprintf(s->dir, sizeof s->dir, "%s/.unsandbox/local", home) >= (int)sizeof s->dir) {
    snprintf(err, errlen, "HOME is too long");
    return -1;
  }
  snprintf(s->env, sizeof s->env, "%s/env", s->dir);
  snprintf(s->data, sizeof s->data, "%s/data", s->dir);
  snprintf(s->log, sizeof s->log, "%s/unsandboxd.log", s->dir);
  return 0;
}

/* A directory of ours, 0700: made when missing, refused when it is a
** symlink, another user's, or open to others. */
static int own_dir(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (mkdir(path, 0700) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
    return -1;
  }
  if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()
      || (st.st_mode & 077) != 0) {
    snprintf(err, errlen, "%s must be a directory of yours that only you can use (chmod 700)",
             path);
    return -1;
  }
  return 0;
}

/* Is pid a live process (not a zombie)? */
static int alive(long pid) {
  char path[64], buf[512];
  FILE *f;
  int live = 0;
  if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno != EPERM)) return 0;
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  if ((f = fopen(path, "r")) == NULL) return 0;
  while (fgets(buf, sizeof buf, f))
    if (strncmp(buf, "State:", 6) == 0) { live = strchr(buf, 'Z') == NULL; break; }
  fclose(f);
  return live;
}

/* Is pid the server of this env file (its command line names the file)? */
static int is_our_server(long pid, const char *env) {
  char path[64], cmd[8192];
  ssize_t n, i;
  int fd;
  if (!alive(pid)) return 0;
  snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return 0;
  n = read(fd, cmd, sizeof cmd - 1);
  close(fd);
  if (n <= 0) return 0;
  cmd[n] = '\0';
  for (i = 0; i < n; i += (ssize_t)strlen(cmd + i) + 1)
    if (strcmp(cmd + i, "--env-file") == 0 && i + 11 < n && strcmp(cmd + i + 11, env) == 0)
      return 1;
  return 0;
}

/* Reads the env file into s->a. 1 read, 0 none, -1 refused (err). */
static int read_env(local_server *s, char *err, size_t errlen) {
  char buf[8192], *line, *save = NULL;
  struct stat st;
  ssize_t n;
  int fd = open(s->env, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : (snprintf(err, errlen, "cannot read %s: %s", s->env,
                                                     strerror(errno)), -1);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()
      || (st.st_mode & 077) != 0) {
    close(fd);
    snprintf(err, errlen, "%s holds keys but is not a file of yours that only you can read; "
             "remove it", s->env);
    return -1;
  }
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) n = 0;
  buf[n] = '\0';
  for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    local_take_line(line, &s->a);
  explicit_bzero(buf, sizeof buf);
  return 1;
}

int local_server_probe(local_server *s, char *err, size_t errlen) {
  int r;
  if (set_paths(s, err, errlen) != 0) return -1;
  if ((r = read_env(s, err, errlen)) <= 0) return r;
  s->pid = strtol(s->a.pid, NULL, 10);
  if (s->a.url[0] && s->a.pub[0] && s->a.sec[0] && is_our_server(s->pid, s->env)) return 1;
  local_server_wipe(s);
  return 0;
}

void local_server_wipe(local_server *s) {
  explicit_bzero(&s->a, sizeof s->a);
  s->pid = 0;
}

/* In the middle child: a session of its own, then the server, with stdin
** and stdout on /dev/null and stderr on the log; tells the parent the
** server's pid on out and exits. */
static void spawn_server(const local_server *s, const char *path, int out) {
  const char *argv[] = { path, "--listen", "127.0.0.1:0", "--cp-listen", "127.0.0.1:0",
                         "--data", s->data, "--dev-keys", "--env-file", s->env, NULL };
  sigset_t none;
  pid_t pid;
  int fd;
  setsid();
  pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL); signal(SIGTERM, SIG_DFL); signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    fd = open("/dev/null", O_RDWR);
    if (fd >= 0) { dup2(fd, STDIN_FILENO); dup2(fd, STDOUT_FILENO); if (fd > 2) close(fd); }
    fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (fd >= 0) { dup2(fd, STDERR_FILENO); if (fd > 2) close(fd); }
    closefrom(3);
    execv(path, (char *const *)argv);
    dprintf(STDERR_FILENO, "cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
  }
  if (write(out, &pid, sizeof pid) != (ssize_t)sizeof pid) _exit(1);
  _exit(pid > 0 ? 0 : 1);
}

/* Forks the server; its pid, or -1. */
static pid_t fork_server(const local_server *s, const char *path, char *err, size_t errlen) {
  int fds[2];
  pid_t mid, server = -1;
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  mid = fork();
  if (mid == 0) { close(fds[0]); spawn_server(s, path, fds[1]); }
  close(fds[1]);
  if (mid < 0 || read(fds[0], &server, sizeof server) != (ssize_t)sizeof server) server = -1;
  close(fds[0]);
  if (mid > 0) while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {}
  if (server <= 0) snprintf(err, errlen, "cannot start unsandboxd: %s", strerror(errno));
  return server;
}

/* Waits for the env file of the server pid; 1, or -1 (err). */
static int await_server(local_server *s, long pid, char *err, size_t errlen) {
  long waited;
  char why[256];
  for (waited = 0; waited < LOCAL_SERVER_START_TIMEOUT_S * 1000L; waited += POLL_MS) {
    int r = local_server_probe(s, why, sizeof why);
    if (r == 1 && s->pid == pid) return 1;
    if (r < 0) { snprintf(err, errlen, "%s", why); return -1; }
    if (!alive(pid)) { snprintf(err, errlen, "unsandboxd exited at start"); return -1; }
    if (unsb_interrupt_pending()) { snprintf(err, errlen, "interrupted"); break; }
    nap(POLL_MS);
  }
  if (waited >= LOCAL_SERVER_START_TIMEOUT_S * 1000L)
    snprintf(err, errlen, "unsandboxd did not listen within %d s", LOCAL_SERVER_START_TIMEOUT_S);
  kill((pid_t)pid, SIGTERM);
  return -1;
}

int local_server_start(local_server *s, const char *progname, const char *exedir,
                       char *err, size_t errlen) {
  char path[PATH_MAX], top[PATH_MAX];
  pid_t pid;
  int r = local_server_probe(s, err, errlen);
  if (r != 0) return r < 0 ? -1 : 0;
  snprintf(top, sizeof top, "%.*s", (int)(strlen(s->dir) - strlen("/local")), s->dir);
  if (own_dir(top, err, errlen) != 0 || own_dir(s->dir, err, errlen) != 0) return -1;
  if (!local_find_server(progname, exedir, path, sizeof path)) {
    snprintf(err, errlen, "unsandboxd was not found");
    return -1;
  }
  unlink(s->env);   /* a killed server's: never read as the new one's */
  if ((pid = fork_server(s, path, err, errlen)) < 0) return -1;
  if (await_server(s, (long)pid, err, errlen) == 1) return 1;
  local_print_log_tail(s->log);
  return -1;
}

int local_server_stop(local_server *s, char *err, size_t errlen) {
  long waited;
  int r = local_server_probe(s, err, errlen);
  if (r <= 0) {
    if (r == 0) unlink(s->env);   /* a stale one, if any */
    return r;
  }
  kill((pid_t)s->pid, SIGTERM);
  for (waited = 0; waited < LOCAL_SERVER_STOP_GRACE_S * 1000L && alive(s->pid); waited += POLL_MS)
    nap(POLL_MS);
  if (alive(s->pid)) {
    kill((pid_t)s->pid, SIGKILL);
    for (waited = 0; waited < 2000 && alive(s->pid); waited += POLL_MS) nap(POLL_MS);
  }
  unlink(s->env);   /* the server removes it itself, unless it was killed */
  local_server_wipe(s);
  return 1;
}

int local_server_reuse(const char *progname) {
  local_server s;
  char err[512];
  int r = local_server_probe(&s, err, sizeof err);
  if (r < 0 && strstr(err, "HOME") == NULL)
    fprintf(stderr, "%s: warning: not using the local unsandboxd: %s\n", progname, err);
  if (r != 1) return 0;
  local_export_config(&s.a, s.pid);
  fprintf(stderr, "%s: using the local unsandboxd at %s (pid %ld, `un local stop` stops it)\n",
          progname, s.a.url, s.pid);
  local_server_wipe(&s);
  return 1;
}
