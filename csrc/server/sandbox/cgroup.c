/*
** Which cgroup hierarchy limits the runs, and the server's own parent
** cgroup in it (see cgroup.h for the split with cgroup_run.c).
**
** The parent lives next to the server's own cgroup (not at the root of a
** hierarchy): whatever limits the host put on the server keep applying to
** its sandboxes, and a server in a delegated subtree (systemd
** Delegate=yes, a container) needs no rights above it. Its name carries
** the pid and the start time of the server, so a new server can tell the
** parent of a dead one (removed at start) from that of a live one, also
** after the pid was reused.
**
** Detection and parsing take their inputs as text or as paths given by
** the caller; nothing here reads /proc/self/... on its own but the names
** of live processes, so the C tests run it on fake trees.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/cgroup.h"
#include "server/mem.h"

#define PREFIX "unsandboxd-"
/* the sibling a v2 server moves itself to (enable_v2) */
#define SERVER_SUFFIX "-server"

/* ---------------------------------------------------------------------
** Files of a cgroup
** ------------------------------------------------------------------- */

/* O_TRUNC as a shell's `echo 1 > file` does: cgroupfs ignores it, and a
** fake tree in the tests then reads back what was written */
int ux_cg_write(int dirfd, const char *file, const char *text) {
  int fd = openat(dirfd, file, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  ssize_t n;
  do n = write(fd, text, len); while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (n == (ssize_t)len) return 0;
  errno = n < 0 ? e : EIO;
  return -1;
}

long ux_cg_read(int dirfd, const char *file, char *buf, size_t size) {
  int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t n = read(fd, buf + len, size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  buf[len] = '\0';
  return (long)len;
}

long long ux_cg_key(const char *text, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, key, klen) == 0 && p[klen] == ' ') return strtoll(p + klen + 1, NULL, 10);
  }
  return -1;
}

int ux_cg_has_word(const char *list, const char *word) {
  size_t wlen = strlen(word);
  for (const char *p = list; *p; ) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == ',') p++;
    size_t n = strcspn(p, " \n\t,");
    if (n == wlen && strncmp(p, word, n) == 0) return 1;
    p += n;
  }
  return 0;
}

/* ---------------------------------------------------------------------
** Parsing /proc/PID/cgroup and /proc/PID/mountinfo
** ------------------------------------------------------------------- */

int ux_cg_self_path(const char *text, const char *controller, char *out, size_t size) {
  for (const char *line = text; line && *line; ) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    const char *c1 = memchr(line, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (c2) {
      char ctrls[256];
      size_t cl = (size_t)(c2 - c1 - 1);
      if (cl < sizeof ctrls) {
        memcpy(ctrls, c1 + 1, cl);
        ctrls[cl] = '\0';
        int match = controller ? ux_cg_has_word(ctrls, controller)
                               : (cl == 0 && c1 - line == 1 && line[0] == '0');
        size_t pl = len - (size_t)(c2 + 1 - line);
        if (match && pl > 0 && pl < size && c2[1] == '/') {
          memcpy(out, c2 + 1, pl);
          out[pl] = '\0';
          return 0;
        }
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return -1;
}

/* Copies a mountinfo field, decoding \ooo escapes; 0 or -1 (too long). */
static int unescape(const char *s, size_t n, char *out, size_t size) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '\\' && i + 3 < n &&
        s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      ch = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    }
    if (k + 1 >= size) return -1;
    out[k++] = ch;
  }
  out[k] = '\0';
  return 0;
}

/* The n-th space-separated field of a line (0-based): pointer and length. */
static const char *field(const char *line, size_t len, int n, size_t *flen) {
  const char *p = line, *end = line + len;
  for (int i = 0; p < end; i++) {
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    size_t l = sp ? (size_t)(sp - p) : (size_t)(end - p);
    if (i == n) { *flen = l; return p; }
    if (!sp) break;
    p = sp + 1;
  }
  return NULL;
}

int ux_cg_find_mount(const char *text, const char *fstype, const char *option,
                     char *mnt, size_t mntlen, char *root, size_t rootlen) {
  for (const char *line = text; line && *line; ) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
    const char *sep = NULL;
    for (const char *p = line; p + 2 < line + len; p++)
      if (p[0] == ' ' && p[1] == '-' && p[2] == ' ') { sep = p + 3; break; }
    size_t tl = 0, sl = 0, rl = 0, ml = 0;
    const char *rest = sep, *t = NULL, *so = NULL;
    if (rest) {
      size_t restlen = len - (size_t)(rest - line);
      t = field(rest, restlen, 0, &tl);
      so = field(rest, restlen, 2, &sl);
    }
    const char *r = field(line, len, 3, &rl), *m = field(line, len, 4, &ml);
    if (t && r && m && tl == strlen(fstype) && strncmp(t, fstype, tl) == 0) {
      char opts[512] = "";
      if (so && sl < sizeof opts) { memcpy(opts, so, sl); opts[sl] = '\0'; }
      if ((!option || ux_cg_has_word(opts, option)) &&
          unescape(m, ml, mnt, mntlen) == 0 && unescape(r, rl, root, rootlen) == 0)
        return 0;
    }
    line = eol ? eol + 1 : NULL;
  }
  return -1;
}

/* Reads a whole small file by path into a malloc'd string; NULL on error. */
static char *slurp(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 8192, len = 0;
  char *buf = ux_xmalloc(cap);
  while (buf) {
    if (len + 1 >= cap) {
      if (cap >= (1u << 22)) { free(buf); buf = NULL; break; }   /* not a small file */
      buf = ux_xrealloc(buf, cap * 2);
      cap *= 2;
    }
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { free(buf); buf = NULL; break; }
    if (n == 0) { buf[len] = '\0'; break; }
    len += (size_t)n;
  }
  close(fd);
  return buf;
}

/* dir = mount point + (cgroup path relative to the mount's root): a
** hierarchy mounted from a subtree (a container) shows that subtree. */
static int join_path(const char *mnt, const char *root, const char *path, char *out, size_t size) {
  size_t rl = strlen(root);
  const char *rel = path;
  if (strcmp(root, "/") != 0) {
    if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0')) return -1;
    rel = path + rl;
  }
  if (strcmp(rel, "/") == 0) rel = "";
  int n = snprintf(out, size, "%s%s", mnt, rel);
  return n > 0 && (size_t)n < size ? 0 : -1;
}

/* Where our cgroup of one hierarchy is: 0 with dir, or -1 with why. */
static int locate(const char *cg, const char *mi, const char *fstype, const char *ctrl,
                  char *dir, size_t size, char *why, size_t whylen) {
  char mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX];
  const char *what = ctrl ? ctrl : "cgroup2";
  if (ux_cg_find_mount(mi, fstype, ctrl, mnt, sizeof mnt, root, sizeof root) != 0) {
    snprintf(why, whylen, "%s not mounted", what);
    return -1;
  }
  if (ux_cg_self_path(cg, ctrl, path, sizeof path) != 0) {
    snprintf(why, whylen, "no %s line in our /proc/self/cgroup", what);
    return -1;
  }
  if (join_path(mnt, root, path, dir, size) != 0) {
    snprintf(why, whylen, "our %s cgroup %.150s is outside its mount", what, path);
    return -1;
  }
  if (access(dir, W_OK) != 0) {
    snprintf(why, whylen, "%.200s is not writable (%s)", dir, strerror(errno));
    return -1;
  }
  return 0;
}

static int exists_in(const char *dir, const char *file) {
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return access(p, F_OK) == 0;
}

static int detect_v2(const char *cg, const char *mi, ux_cg_layout *l, char *why, size_t whylen) {
  char *dir = l->base[UX_CG_MEM], p[PATH_MAX + 64];
  if (locate(cg, mi, "cgroup2", NULL, dir, PATH_MAX, why, whylen) != 0) return -1;
  snprintf(p, sizeof p, "%s/cgroup.controllers", dir);
  char *ctrls = slurp(p);
  int ok = ctrls && ux_cg_has_word(ctrls, "memory") && ux_cg_has_word(ctrls, "pids");
  if (!ok) {
    char shown[64];
    snprintf(shown, sizeof shown, "%s", ctrls ? ctrls : "unreadable");
    shown[strcspn(shown, "\n")] = '\0';
    snprintf(why, whylen, "cgroup v2 at %.100s lacks the memory and pids controllers "
             "(available: '%s')", dir, shown);
  }
  free(ctrls);
  if (!ok) return -1;
  l->freezer = 1;     /* cgroup.freeze: a core file of every non-root cgroup */
  l->kill = exists_in(dir, "cgroup.kill");
  return 0;
}

static int detect_v1(const char *cg, const char *mi, ux_cg_layout *l, char *why, size_t whylen) {
  static const char *const ctrl[UX_CG_NDIR] = { "memory", "pids", "freezer" };
  for (int i = 0; i < UX_CG_NDIR; i++) {
    char w[200];
    if (locate(cg, mi, "cgroup", ctrl[i], l->base[i], PATH_MAX, w, sizeof w) == 0) continue;
    l->base[i][0] = '\0';
    if (i == UX_CG_FRZ) break;                  /* optional */
    snprintf(why, whylen, "cgroup v1: %s", w);
    return -1;
  }
  if (!exists_in(l->base[UX_CG_MEM], "memory.limit_in_bytes")) {
    snprintf(why, whylen, "cgroup v1: no memory.limit_in_bytes in %.150s", l->base[UX_CG_MEM]);
    return -1;
  }
  l->memsw = exists_in(l->base[UX_CG_MEM], "memory.memsw.limit_in_bytes");
  l->freezer = l->base[UX_CG_FRZ][0] != '\0';
  return 0;
}

int ux_cg_detect(const char *self_cgroup, const char *mountinfo, ux_cg_layout *l) {
  memset(l, 0, sizeof *l);
  for (int i = 0; i < UX_CG_NDIR; i++) l->parent_fd[i] = -1;
  l->limits = 1;
  char *cg = slurp(self_cgroup), *mi = slurp(mountinfo);
  char w2[240] = "", w1[240] = "";
  if (!cg || !mi) {
    snprintf(l->why, sizeof l->why, "cannot read %s or %s", self_cgroup, mountinfo);
  } else if (detect_v2(cg, mi, l, w2, sizeof w2) == 0) {
    l->version = UX_CG_V2;
  } else {
    memset(l->base, 0, sizeof l->base);
    l->freezer = l->kill = 0;
    if (detect_v1(cg, mi, l, w1, sizeof w1) == 0) l->version = UX_CG_V1;
    else memset(l->base, 0, sizeof l->base);
    snprintf(l->why, sizeof l->why, "%s%s%s", w2, w1[0] ? "; " : "", w1);
  }
  free(cg);
  free(mi);
  return l->version;
}

/* ---------------------------------------------------------------------
** Names of server parents
** ------------------------------------------------------------------- */

/* Field 22 of /proc/PID/stat (start time in clock ticks); 0 if gone. */
static unsigned long long start_time(long pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  for (int f = 2; p && f < 22; f++) p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, NULL, 10) : 0;
}

int ux_cg_own_name(char *out, size_t size) {
  unsigned long long st = start_time((long)getpid());
  int n = snprintf(out, size, PREFIX "%ld-%llu", (long)getpid(), st);
  return st && n > 0 && (size_t)n < size ? 0 : -1;
}

int ux_cg_name_stale(const char *name) {
  if (strncmp(name, PREFIX, strlen(PREFIX)) != 0) return 0;
  char *end;
  const char *p = name + strlen(PREFIX);
  long pid = strtol(p, &end, 10);
  if (end == p || *end != '-' || pid <= 0) return 0;
  p = end + 1;
  unsigned long long st = strtoull(p, &end, 10);
  if (end == p || (*end && strcmp(end, SERVER_SUFFIX) != 0)) return 0;
  return start_time(pid) != st;
}

/* ---------------------------------------------------------------------
** Killing and removing cgroups
** ------------------------------------------------------------------- */

/* 1 when /proc/PID/cgroup has a line whose path ends with `tail`. */
static int in_cgroup(long pid, const char *tail) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  size_t tl = strlen(tail);
  for (char *line = buf; line && *line; ) {
    char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    if (len >= tl && memcmp(line + len - tl, tail, tl) == 0) return 1;
    line = eol ? eol + 1 : NULL;
  }
  return 0;
}

int ux_cg_kill_procs(int dirfd, const char *tail) {
  char buf[65536];
  if (ux_cg_read(dirfd, "cgroup.procs", buf, sizeof buf) <= 0) return 0;
  int n = 0;
  for (char *p = buf; *p; ) {
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p) break;
    p = end;
    while (*p == '\n') p++;
    if (pid <= 0) continue;
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0) continue;                       /* gone already */
    if (in_cgroup(pid, tail) && syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0) n++;
    close(fd);
#else
    if (in_cgroup(pid, tail) && kill((pid_t)pid, SIGKILL) == 0) n++;
#endif
  }
  return n;
}

static void nap_ms(int ms) {
  struct timespec ts = { 0, ms * 1000000L };
  nanosleep(&ts, NULL);
}

/* Removes the child cgroups of dirfd (tail: dirfd's path ending). */
static void remove_children(int dirfd, const char *tail, int timeout_ms) {
  int dup = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
  if (!d) { if (dup >= 0) close(dup); return; }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    char sub[PATH_MAX];
    if (snprintf(sub, sizeof sub, "%s/%s", tail, e->d_name) >= (int)sizeof sub) continue;
    ux_cg_remove_tree(dirfd, e->d_name, sub, timeout_ms);
  }
  closedir(d);
}

int ux_cg_remove_tree(int parentfd, const char *name, const char *tail, int timeout_ms) {
  /* the common case, an empty cgroup with no child: one rmdir */
  if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
  int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  remove_children(fd, tail, timeout_ms);
  long long end = ux_now_ms() + timeout_ms;
  int rc;
  for (;;) {
    if ((rc = unlinkat(parentfd, name, AT_REMOVEDIR)) == 0 || errno == ENOENT) { rc = 0; break; }
    if (errno != EBUSY || ux_now_ms() > end) break;
    /* a frozen v1 process dies only once thawed; v2 has cgroup.kill */
    ux_cg_write(fd, "freezer.state", "THAWED");
    if (ux_cg_write(fd, "cgroup.kill", "1") != 0) ux_cg_kill_procs(fd, tail);
    nap_ms(10);
  }
  close(fd);
  return rc;
}

/* ---------------------------------------------------------------------
** The server's parent cgroups
** ------------------------------------------------------------------- */

/* Removes the parents of dead servers found in a base directory. */
static void remove_stale(int basefd) {
  int dup = fcntl(basefd, F_DUPFD_CLOEXEC, 0);
  DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
  if (!d) { if (dup >= 0) close(dup); return; }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_type != DT_DIR || !ux_cg_name_stale(e->d_name)) continue;
    char tail[300];
    snprintf(tail, sizeof tail, "/%s", e->d_name);
    ux_cg_remove_tree(basefd, e->d_name, tail, 2000);
  }
  closedir(d);
}

/* v2: enables memory and pids for the children of dirfd. When the kernel
** refuses because dirfd's cgroup has processes (the "no internal
** processes" rule) and the only one is this process, this process moves to
** the leaf NAME-server beside the parent and tries again: beside, not
** below, because the parent's memory limit is the runs' budget. */
static int enable_v2(ux_cg_layout *l, int basefd, char *err, size_t errlen) {
  char buf[4096], leaf[80];
  if (ux_cg_read(basefd, "cgroup.subtree_control", buf, sizeof buf) >= 0 &&
      ux_cg_has_word(buf, "memory") && ux_cg_has_word(buf, "pids")) return 0;
  if (ux_cg_write(basefd, "cgroup.subtree_control", "+memory +pids") == 0) return 0;
  int e = errno;
  char self[32];
  snprintf(self, sizeof self, "%ld\n", (long)getpid());
  snprintf(leaf, sizeof leaf, "%s" SERVER_SUFFIX, l->name);
  if (e == EBUSY && ux_cg_read(basefd, "cgroup.procs", buf, sizeof buf) > 0 &&
      strcmp(buf, self) == 0) {
    if ((mkdirat(basefd, leaf, 0755) == 0 || errno == EEXIST)) {
      int sfd = openat(basefd, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      int moved = sfd >= 0 && ux_cg_write(sfd, "cgroup.procs", "0") == 0;
      if (sfd >= 0) close(sfd);
      if (moved) {
        l->moved = 1;
        if (ux_cg_write(basefd, "cgroup.subtree_control", "+memory +pids") == 0) return 0;
      }
    }
    e = errno;
  }
  snprintf(err, errlen, "cannot enable the memory and pids controllers in %.300s: %s",
           l->base[UX_CG_MEM], strerror(e));
  return -1;
}

/* The runs' budget as the parent's memory limit. v1: memory first, then
** memory+swap (which may never be below it); and hierarchical accounting,
** without which a v1 parent's limit does not cover its children (always
** on in recent kernels, where the file refuses writes or is gone). */
static int limit_parent(const ux_cg_layout *l, char *err, size_t errlen) {
  int fd = l->parent_fd[UX_CG_MEM];
  char num[32];
  const char *bad = NULL;
  snprintf(num, sizeof num, "%llu", l->budget);
  if (l->version == UX_CG_V2) {
    if (ux_cg_write(fd, "memory.max", num) != 0) bad = "memory.max";
  } else {
    ux_cg_write(fd, "memory.use_hierarchy", "1");
    if (ux_cg_write(fd, "memory.limit_in_bytes", num) != 0) bad = "memory.limit_in_bytes";
    else if (l->memsw && ux_cg_write(fd, "memory.memsw.limit_in_bytes", num) != 0)
      bad = "memory.memsw.limit_in_bytes";
  }
  if (!bad) return 0;
  snprintf(err, errlen, "cannot set %s of %.300s/%s to the memory budget: %s", bad,
           l->base[UX_CG_MEM], l->name, strerror(errno));
  return -1;
}

/* The parent in one hierarchy: stale ones removed, ours made. */
static int make_parent(ux_cg_layout *l, int i, char *err, size_t errlen) {
  int basefd = open(l->base[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (basefd < 0) {
    snprintf(err, errlen, "cannot open %.300s: %s", l->base[i], strerror(errno));
    return -1;
  }
  remove_stale(basefd);
  if (mkdirat(basefd, l->name, 0755) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %.300s/%s: %s", l->base[i], l->name, strerror(errno));
    close(basefd);
    return -1;
  }
  l->parent_fd[i] = openat(basefd, l->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  int rc = l->parent_fd[i] < 0 ? -1 : 0;
  if (rc) snprintf(err, errlen, "cannot open %.300s/%s: %s", l->base[i], l->name, strerror(errno));
  if (rc == 0 && l->version == UX_CG_V2 && l->limits) {
    rc = enable_v2(l, basefd, err, errlen);
    if (rc == 0 && ux_cg_write(l->parent_fd[i], "cgroup.subtree_control", "+memory +pids") != 0) {
      snprintf(err, errlen, "cannot enable memory and pids below %.300s/%s: %s",
               l->base[i], l->name, strerror(errno));
      rc = -1;
    }
  }
  if (rc == 0 && i == UX_CG_MEM && l->limits && l->budget)
    rc = limit_parent(l, err, errlen);
  close(basefd);
  return rc;
}

int ux_cg_setup(ux_cg_layout *l, const char *name, char *err, size_t errlen) {
  if (l->version == UX_CG_NONE) { snprintf(err, errlen, "no cgroup hierarchy"); return -1; }
  if (name) snprintf(l->name, sizeof l->name, "%s", name);
  else if (ux_cg_own_name(l->name, sizeof l->name) != 0) {
    snprintf(err, errlen, "cannot read this process's start time");
    return -1;
  }
  for (int i = 0; i < UX_CG_NDIR; i++) {
    if (!l->base[i][0] || (l->version == UX_CG_V2 && i != UX_CG_MEM)) continue;
    if (make_parent(l, i, err, errlen) != 0) { ux_cg_teardown(l); return -1; }
  }
  return 0;
}

void ux_cg_teardown(ux_cg_layout *l) {
  for (int i = 0; i < UX_CG_NDIR; i++) {
    if (l->parent_fd[i] < 0) continue;
    /* runs have ended; nothing of ours is below the parent but them */
    int dup = fcntl(l->parent_fd[i], F_DUPFD_CLOEXEC, 0);
    DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)))
      if (e->d_type == DT_DIR && e->d_name[0] != '.')
        unlinkat(l->parent_fd[i], e->d_name, AT_REMOVEDIR);
    if (d) closedir(d); else if (dup >= 0) close(dup);
    close(l->parent_fd[i]);
    l->parent_fd[i] = -1;
    int basefd = open(l->base[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (basefd >= 0) { unlinkat(basefd, l->name, AT_REMOVEDIR); close(basefd); }
    /* a moved server's NAME-server stays while it lives in it: the next
    ** server removes it as stale */
  }
}
