/*
** Helpers of the server_runtime*_test.c files: the set-up every runtime
** needs (volumes, the runner, a data directory), an on_end recorder,
** bounded waits, agent calls with their result, and a count of the
** processes in this test's sandbox cgroups (the proof that a runtime left
** nothing behind). Static functions in a header, like tap.h, because each
** test is one translation unit linked on its own. Every wait here is
** bounded in time.
*/
#ifndef RUNTIME_UTIL_H
#define RUNTIME_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "server/runtime/runtime.h"
#include "server/fsutil.h"
#include "server/sandbox/cgroup.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "tests/tap.h"

static char rt_data[PATH_MAX];      /* the test's data directory */
static char rt_agent[PATH_MAX];     /* bin/unsandboxd-agent */
static char rt_self[PATH_MAX];      /* this test binary */

/* Root, bwrap, a data directory, volumes (before any thread), the runner.
** 0, or 1 when the test must be skipped (a TAP plan line was printed). */
static __attribute__((unused)) int rt_setup(const char *tag) {
  if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0) {
    printf("1..0 # SKIP needs root and /usr/bin/bwrap\n");
    return 1;
  }
  ssize_t n = readlink("/proc/self/exe", rt_self, sizeof rt_self - 1);
  if (n <= 0) { printf("Bail out! readlink\n"); exit(1); }
  rt_self[n] = '\0';
  char dir[PATH_MAX];
  memcpy(dir, rt_self, sizeof dir);
  for (int i = 0; i < 3; i++) { char *s = strrchr(dir, '/'); if (s) *s = '\0'; }
  snprintf(rt_agent, sizeof rt_agent, "%.4000s/bin/unsandboxd-agent", dir);
  if (access(rt_agent, X_OK) != 0) { printf("Bail out! no agent at %s\n", rt_agent); exit(1); }
  snprintf(rt_data, sizeof rt_data, "/var/tmp/unsb-%s-XXXXXX", tag);
  if (!mkdtemp(rt_data)) { printf("Bail out! mkdtemp\n"); exit(1); }
  char desc[400], err[400], tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s/tmp", rt_data);
  if (mkdir(tmp, 0700) != 0) { printf("Bail out! mkdir tmp\n"); exit(1); }
  if (ux_volume_init(rt_data, 64ull << 20, desc, sizeof desc, err, sizeof err) != 0) {
    printf("Bail out! volumes: %s\n", err);
    exit(1);
  }
  ux_runner_set_tmpdir(tmp);
  ux_isolation iso;
  ux_runner_init(1, &iso);
  printf("# isolation: %s\n# %s\n", iso.detail, desc);
  return 0;
}

/* A new persistent volume DATA/name (its path goes to out). */
static __attribute__((unused)) void rt_volume(const char *name, char *out, size_t outlen) {
  char err[300];
  if (ux_path(out, outlen, "%s/%s", rt_data, name) < 0) { printf("Bail out! path\n"); exit(1); }
  if (ux_volume_create(out, err, sizeof err) != 0) { printf("Bail out! volume %s: %s\n", name, err); exit(1); }
}

static __attribute__((unused)) void rt_teardown(void) {
  char tmp[PATH_MAX + 8];
  ux_runner_shutdown();
  snprintf(tmp, sizeof tmp, "%s/tmp", rt_data);
  rmdir(tmp);
  DIR *d = opendir(rt_data);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char p[PATH_MAX + 300];
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", rt_data, e->d_name);
    ux_volume_destroy(p);
  }
  if (d) closedir(d);
  if (rmdir(rt_data) != 0) printf("# could not remove %s: %s\n", rt_data, strerror(errno));
}

/* ---- on_end recorder ---- */

typedef struct { char sb[32]; int status; char why[256]; } rt_end;
static struct {
  pthread_mutex_t mu;
  rt_end ev[256];
  int n;
} ends = { PTHREAD_MUTEX_INITIALIZER, { { "", 0, "" } }, 0 };

static __attribute__((unused)) void rt_on_end(void *ctx, const char *sb, int status, const char *why) {
  (void)ctx;
  pthread_mutex_lock(&ends.mu);
  if (ends.n < 256) {
    rt_end *e = &ends.ev[ends.n++];
    snprintf(e->sb, sizeof e->sb, "%s", sb);
    e->status = status;
    snprintf(e->why, sizeof e->why, "%s", why);
  }
  pthread_mutex_unlock(&ends.mu);
}

/* How many times on_end reported sb; the last report goes to *out. */
static __attribute__((unused)) int rt_ended(const char *sb, rt_end *out) {
  int n = 0;
  pthread_mutex_lock(&ends.mu);
  for (int i = 0; i < ends.n; i++)
    if (!strcmp(ends.ev[i].sb, sb)) { n++; if (out) *out = ends.ev[i]; }
  pthread_mutex_unlock(&ends.mu);
  return n;
}

/* Waits (at most ms) until on_end reported sb: 1 and *out, or 0. */
static __attribute__((unused)) int rt_wait_end(const char *sb, long ms, rt_end *out) {
  for (long end = ux_now_ms() + ms; ux_now_ms() < end; t_sleep_ms(20))
    if (rt_ended(sb, out)) return 1;
  return rt_ended(sb, out) > 0;
}

/* ---- calls ---- */

/* Calls op with the JSON arguments text (may be NULL); returns the code,
** the result in *res (or NULL) and the error text in err. */
static __attribute__((unused)) int rt_do(ux_rt *rt, const char *op, const char *args, int timeout_ms,
                                         json_t **res, char *err, size_t errlen) {
  json_t *req = args ? json_loads(args, 0, NULL) : json_object();
  if (!req) { snprintf(err, errlen, "test: bad args %s", args); *res = NULL; return -1; }
  json_object_set_new(req, "op", json_string(op));
  err[0] = '\0';
  int rc = ux_rt_call(rt, req, 0, timeout_ms, NULL, NULL, res, err, errlen);
  json_decref(req);
  return rc;
}

/* exec of a command: its stdout (malloc'd) or NULL; *code the exit code. */
static __attribute__((unused)) char *rt_exec(ux_rt *rt, const char *command, int *code) {
  json_t *req = json_pack("{s:s, s:s}", "op", "exec", "command", command), *res = NULL;
  char err[300];
  int rc = ux_rt_call(rt, req, 0, 40000, NULL, NULL, &res, err, sizeof err);
  json_decref(req);
  char *out = NULL;
  if (rc == UX_RTC_OK) {
    out = strdup(json_string_value(json_object_get(res, "stdout")) ?: "");
    if (code) *code = (int)json_integer_value(json_object_get(res, "exit_code"));
  } else {
    printf("#   exec '%s': %d %s\n", command, rc, err);
  }
  json_decref(res);
  return out;
}

/* Waits until sb's status is `want` (at most ms): 1 or 0. */
static __attribute__((unused)) int rt_wait_status(ux_runtimes *rts, const char *sb, int want, long ms) {
  ux_rt_info info;
  for (long end = ux_now_ms() + ms; ux_now_ms() < end; t_sleep_ms(20))
    if (ux_runtimes_info(rts, sb, &info) == 0 && info.status == want) return 1;
  return ux_runtimes_info(rts, sb, &info) == 0 && info.status == want;
}

/* ---- processes of this test's sandboxes ---- */

/* 1 when /proc/<pid>/cmdline, its NULs read as spaces, is `cmdline`. */
static __attribute__((unused)) int rt_cmdline_is(const char *pid, const char *cmdline) {
  char path[300], buf[512];
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  if (buf[n - 1] == '\0') n--;
  for (ssize_t i = 0; i < n; i++) if (buf[i] == '\0') buf[i] = ' ';
  buf[n] = '\0';
  return !strcmp(buf, cmdline);
}

/* Processes whose cgroup is a run of this process's sandboxes (below our
** parent cgroup unsandboxd-PID-START), those running `cmdline` only when
** it is not NULL; -1 without cgroups. Other servers on the machine use
** the same slot uids, so uids would not do. */
static __attribute__((unused)) int rt_sandbox_procs_running(const char *cmdline) {
  char name[64], needle[80], path[300], buf[4096];
  if (!strcmp(ux_runner_isolation()->cgroup, "none") || ux_cg_own_name(name, sizeof name) != 0)
    return -1;
  snprintf(needle, sizeof needle, "/%s/run-", name);
  DIR *d = opendir("/proc");
  struct dirent *e;
  int count = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/cgroup", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    if (strstr(buf, needle) && (!cmdline || rt_cmdline_is(e->d_name, cmdline))) count++;
  }
  if (d) closedir(d);
  return count;
}

static __attribute__((unused)) int rt_sandbox_procs(void) { return rt_sandbox_procs_running(NULL); }

#endif
