/*
** The mount namespace a sandbox's child starts from (see run_object.h,
** ux_child_mntns). A copy of the server's holds the host's mounts (a
** dozen cgroup v1 hierarchies under /sys among them), every volume and
** the scratch volume of every run in flight or waiting in the pool.
** bwrap copies its namespace again and reads all of /proc/self/mountinfo
** after each of its fifteen or so binds, so its cost grew with the number
** of runs; the program never sees any of those mounts (bwrap pivots to a
** root of its own). What bwrap itself needs stays: /, /proc (its own
** /proc/self/fd), /dev (the device nodes --dev binds), /usr and /etc with
** what is mounted below them. The work, code and read-only bind
** directories reach the child as detached clones (open_tree), so what is
** detached here changes nothing for them.
**
** The detaching is done once, by a thread of its own that unshares its
** mount namespace, detaches what bwrap does not need and keeps the
** namespace by an fd; every child enters it (setns) and unshares a copy.
** Each child used to detach those mounts itself, and every umount waits
** for an expedited RCU grace period: a dozen per sandbox, which also held
** up the namespace teardown at the end of the runs in progress (the
** kernel serialises expedited grace periods), a millisecond on a pooled
** run's answer while the pool refilled.
**
** The list is read once per process: the server's namespace is private,
** so it changes only by the server's own mounts, all of which are below
** its data directory, itself a mount that the list holds (volume.c makes
** it one).
*/
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/sandbox/run_object.h"

#define MAX_DETACH 256

/* 1 when `path` is `dir` or below it. */
static int within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (!strcmp(dir, "/")) return 1;
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Mounts bwrap needs: those at or above what it uses, and below /usr and
** /etc (--ro-bind /usr /usr takes what is mounted inside along). */
static int needed(const char *m) {
  static const char *const used[] = { "/proc", "/dev", "/usr", "/etc" };
  for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
    if (within(used[i], m)) return 1;
  return within(m, "/usr") || within(m, "/etc");
}

/* The mount point of one mountinfo line (the fifth field), its \ooo
** escapes decoded in place; NULL when malformed. */
static char *mount_point(char *line) {
  char *f = line;
  for (int i = 0; i < 4 && f; i++) f = strchr(f, ' '), f = f ? f + 1 : NULL;
  if (!f) return NULL;
  char *end = strchr(f, ' ');
  if (end) *end = '\0';
  char *o = f;
  for (char *p = f; *p; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
        p[3] >= '0' && p[3] <= '7') {
      *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
      p += 3;
    } else *o++ = *p;
  }
  *o = '\0';
  return f;
}

/* Reads /proc/self/mountinfo whole into a malloc'd string. */
static char *read_mountinfo(void) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return NULL;
  size_t cap = 16384, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (len + 1 < cap) break;
    char *nb = cap < (1u << 24) ? realloc(buf, cap * 2) : NULL;
    if (!nb) { free(buf); buf = NULL; break; }
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  if (buf) buf[len] = '\0';
  return buf;
}

/* The mount points to detach: the outermost of each unneeded subtree. */
typedef struct ux_detach {
  char *text;
  const char **paths;         /* point into text */
  int n;
} ux_detach;

static int make_plan(ux_detach *d) {
  memset(d, 0, sizeof *d);
  if (!(d->text = read_mountinfo()) || !(d->paths = calloc(MAX_DETACH, sizeof *d->paths))) {
    free(d->text);
    free(d->paths);
    memset(d, 0, sizeof *d);
    return -1;
  }
  for (char *line = d->text, *next; line && *line && d->n < MAX_DETACH; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *m = mount_point(line);
    if (!m || m[0] != '/' || needed(m)) continue;
    /* one detach takes what is mounted below it along */
    int covered = 0;
    for (int i = 0; i < d->n && !covered; i++) covered = within(m, d->paths[i]) && strcmp(m, d->paths[i]);
    if (!covered) d->paths[d->n++] = m;
  }
  return 0;
}

static int ns_fd = -1, ns_errno, dev_ok;

/* The sandboxes' /dev, in the namespace being made: what bwrap's --dev
** builds in every sandbox (a tmpfs, the host's device nodes bound one by
** one, its symlinks, a devpts), once, so that bwrap binds one tree
** instead: each of its binds costs it a read of the whole mount table.
** Read-only, since every sandbox shares it; the per-sandbox parts are
** mounted over its empty directories, pts by the child (spawn.c) and shm
** by bwrap. 0 or -1. */
static int make_dev(void) {
  static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
  static const char *const links[][2] = {
    { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" }, { "stdout", "/proc/self/fd/1" },
    { "stderr", "/proc/self/fd/2" }, { "core", "/proc/kcore" }, { "ptmx", "pts/ptmx" },
  };
  char host[64], at[96];
  if (mount("uxdev", UX_SB_DEV_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "mode=0755,size=16k") != 0 || mkdir(UX_SB_DEV, 0755) != 0) return -1;
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
    snprintf(host, sizeof host, "/dev/%s", nodes[i]);
    snprintf(at, sizeof at, UX_SB_DEV "/%s", nodes[i]);
    int fd = open(at, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    close(fd);
    if (mount(host, at, NULL, MS_BIND, NULL) != 0) return -1;
  }
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
    snprintf(at, sizeof at, UX_SB_DEV "/%s", links[i][0]);
    if (symlink(links[i][1], at) != 0) return -1;
  }
  if (mkdir(UX_SB_DEV "/pts", 0755) != 0 || mkdir(UX_SB_DEV "/shm", 0755) != 0) return -1;
  return mount(NULL, UX_SB_DEV_ROOT, NULL,
               MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

/* The thread that makes the namespace: its own fs context and mount
** namespace (the server's other threads keep theirs), every mount of the
** plan detached, the namespace kept by an fd after the thread ends. */
static void *make_ns(void *arg) {
  (void)arg;
  ux_detach d;
  if (make_plan(&d) != 0) { ns_errno = errno; return NULL; }
  if (unshare(CLONE_FS | CLONE_NEWNS) == 0 &&
      mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
    /* one already gone is fine: one line more for bwrap at worst */
    for (int i = 0; i < d.n; i++) umount2(d.paths[i], MNT_DETACH);
    dev_ok = make_dev() == 0;
    if (!dev_ok)
      fprintf(stderr, "unsandboxd: sandboxes make their own /dev (slower): %s\n", strerror(errno));
    ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
  }
  ns_errno = errno;
  free(d.text);
  free(d.paths);
  return NULL;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void ns_once(void) {
  pthread_t t;
  int rc = pthread_create(&t, NULL, make_ns, NULL);
  if (rc == 0) pthread_join(t, NULL);
  else ns_errno = rc;
  if (ns_fd < 0)
    fprintf(stderr, "unsandboxd: sandboxes start from the server's own mounts (slower): %s\n",
            strerror(ns_errno));
}

int ux_child_mntns(void) {
  pthread_once(&once, ns_once);
  return ns_fd;
}

const char *ux_child_dev(void) {
  return ux_child_mntns() >= 0 && dev_ok ? UX_SB_DEV : NULL;
}
