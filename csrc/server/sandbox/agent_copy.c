/*
** The copy of unsandboxd-agent that sandboxes run (see agent_copy.h).
**
** A read-only bind of the installed binary shows where it is installed:
** a bind's root, in the sandbox's /proc/self/mountinfo, is the file's path
** in its file system (/home/you/unsandbox/bin/unsandboxd-agent). So the
** sandboxes get a copy on a small tmpfs of its own instead, mounted at
** DATA/agent in the server's private mount namespace and made read-only
** once written: inside, the bind reads "/unsandboxd-agent" on "tmpfs".
** Outside the private namespace (ux_volume_init makes it; not as an
** unprivileged user, or when unshare failed) nothing is mounted, since the mount would land in the host's namespace: the
** installed binary is used as it is, and the server says so.
*/
#include "server/sandbox/agent_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/volume.h"

#define COPY_NAME "unsandboxd-agent"

/* Copies all of in to out: 0 or -1. */
static int copy_all(int in, int out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) { if (errno == EINTR) continue; return -1; }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf + done, (size_t)(n - done));
      if (w < 0) { if (errno == EINTR) continue; return -1; }
      done += w;
    }
  }
}

/* Writes the copy into the tmpfs at dir and seals the tmpfs read-only:
** an O_PATH fd of the copy, or -1 with errno. */
static int fill(int dirfd, const char *dir, int src, const char *opts) {
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", src);
  int in = open(self, O_RDONLY | O_CLOEXEC);
  int out = openat(dirfd, COPY_NAME, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0555);
  int rc = in >= 0 && out >= 0 && copy_all(in, out) == 0 && fchmod(out, 0555) == 0 ? 0 : -1;
  int e = errno;
  if (in >= 0) close(in);
  if (out >= 0 && close(out) != 0 && rc == 0) { rc = -1; e = errno; }
  if (rc == 0 && mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, opts) != 0) {
    rc = -1;
    e = errno;
  }
  int fd = rc == 0 ? openat(dirfd, COPY_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (rc != 0) errno = e;
  return fd;
}

int ux_agent_copy(int src, const char *data_dir, char *why, size_t whylen) {
  char dir[4200], opts[96];
  struct stat st;
  if (!ux_volume_private_ns()) {
    snprintf(why, whylen, "the server has no private mount namespace");
    return -1;
  }
  if (fstat(src, &st) != 0 || ux_path(dir, sizeof dir, "%s/agent", data_dir) < 0 ||
      (mkdir(dir, 0700) != 0 && errno != EEXIST)) {
    snprintf(why, whylen, "cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  snprintf(opts, sizeof opts, "mode=0755,nr_inodes=8,size=%lld", (long long)st.st_size + 65536);
  if (mount("unsandboxd", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
    snprintf(why, whylen, "cannot mount a tmpfs at %s: %s", dir, strerror(errno));
    return -1;
  }
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int fd = dirfd >= 0 ? fill(dirfd, dir, src, opts) : -1;
  int e = errno;
  if (dirfd >= 0) close(dirfd);
  if (fd < 0) {
    umount2(dir, MNT_DETACH);
    snprintf(why, whylen, "cannot copy the agent to %s: %s", dir, strerror(e));
  }
  return fd;
}
