/*
** slirp4netns for one run (see net.h).
**
** The parent (a server thread) opens the namespaces of the run's inner
** process itself: /proc/PID/ns/net, checked against the pinned pidfd so a
** reused pid is never taken, and the owning user namespace through
** NS_GET_USERNS on it. slirp4netns gets both as /proc/self/fd paths and
** never looks up the pid. Its child code below runs between the start
** (ux_spawn: sharing our memory) and the exec: raw syscalls only.
*/
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run_object.h"

enum { NFD_READY = 3, NFD_EXIT = 4, NFD_NET = 5, NFD_USER = 6, NFD_COUNT = 7 };

void ux_net_init(ux_net *n) { n->pid = 0; n->pidfd = -1; n->exit_fd = -1; }

int ux_net_available(void) { return access(UX_NET_SLIRP, X_OK) == 0; }

typedef struct slirp_plan {
  const ux_net_how *how;
  const int *fds;
  const char *const *argv;
  int mntns;                  /* ux_child_mntns, -1: ours */
} slirp_plan;

/* The child (ux_spawn: it shares our memory until it execs): joins the
** cgroup, gets a /dev/net/tun it can open as the slot uid, drops to it,
** execs slirp4netns. Never returns. */
static int slirp_child(void *arg) {
  static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
  const slirp_plan *plan = arg;
  const ux_net_how *how = plan->how;
  const int *fds = plan->fds;
  const char *const *argv = plan->argv;
  if (ux_cg_join(how->cg_fds, how->n_cg) != 0 || setsid() < 0) _exit(120);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* the sandboxes' mount namespace (mounts.c), not the server's with
  ** every volume in it; entered while its fd is open */
  if (plan->mntns >= 0 && setns(plan->mntns, CLONE_NEWNS) != 0) _exit(125);
  if (ux_place_fds(fds, NFD_COUNT) != 0) _exit(121);
  if (how->drop) {
    /* Debian may leave /dev/net/tun root-only: a node of our own, 0666,
    ** visible in this process's private mount namespace alone */
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("uxtun", "/dev/net", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=4k") != 0 ||
        mknod("/dev/net/tun", S_IFCHR | 0666, makedev(10, 200)) != 0 ||
        chmod("/dev/net/tun", 0666) != 0) _exit(122);
    if (syscall(SYS_setgroups, 0, NULL) != 0 ||
        syscall(SYS_setresgid, how->gid, how->gid, how->gid) != 0 ||
        syscall(SYS_setresuid, how->uid, how->uid, how->uid) != 0) _exit(123);
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(124);
  execve(argv[0], (char *const *)argv, (char *const *)envp);
  _exit(127);
}

/* Opens the run's network namespace and the user namespace owning it. */
static int open_ns(const ux_net_how *how, int *netfd, int *userfd, char *err, size_t errlen) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)how->inner);
  *netfd = open(path, O_RDONLY | O_CLOEXEC);
  /* the pidfd still names a live process: the path was its namespace */
  if (*netfd < 0 || syscall(SYS_pidfd_send_signal, how->inner_fd, 0, NULL, 0) != 0) {
    snprintf(err, errlen, "cannot open the run's network namespace: %s", strerror(errno));
    return -1;
  }
  *userfd = ioctl(*netfd, NS_GET_USERNS);
  if (*userfd < 0) {
    snprintf(err, errlen, "cannot find the owner of the run's network namespace: %s",
             strerror(errno));
    return -1;
  }
  if (fcntl(*userfd, F_SETFD, FD_CLOEXEC) != 0) {
    snprintf(err, errlen, "fcntl: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* Waits for the ready byte; 0, or -1 with err (slirp is then stopped). */
static int await_ready(ux_net *n, int ready, int timeout_ms, char *err, size_t errlen) {
  struct pollfd pf = { ready, POLLIN, 0 };
  long long end = ux_now_ms() + timeout_ms;
  int rc;
  do {
    long long left = end - ux_now_ms();
    rc = left > 0 ? poll(&pf, 1, (int)left) : 0;
  } while (rc < 0 && errno == EINTR);
  char c;
  if (rc > 0 && read(ready, &c, 1) == 1) return 0;
  ux_net_stop(n);
  if (rc == 0)
    snprintf(err, errlen, "slirp4netns did not bring the network up within %d ms", timeout_ms);
  else
    snprintf(err, errlen, "slirp4netns exited before the network was up");
  return -1;
}

int ux_net_start(ux_net *n, const ux_net_how *how, char *err, size_t errlen) {
  ux_net_init(n);
  if (!ux_net_available()) {
    snprintf(err, errlen, "semitrusted networking needs " UX_NET_SLIRP
             " (apt-get install slirp4netns)");
    return -1;
  }
  int netfd = -1, userfd = -1, devnull = -1, ready[2] = { -1, -1 }, ex[2] = { -1, -1 };
  int rc = -1;
  if (open_ns(how, &netfd, &userfd, err, errlen) != 0) goto out;
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0 ||
      (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
    snprintf(err, errlen, "cannot set up slirp4netns: %s", strerror(errno));
    goto out;
  }
  const char *argv[] = { UX_NET_SLIRP, "--configure", "--mtu=65520", "--disable-host-loopback",
                   "--enable-seccomp", "--ready-fd=3", "--exit-fd=4", "--netns-type=path",
                   "--userns-path=/proc/self/fd/6", "/proc/self/fd/5", "tap0", NULL };
  int fds[NFD_COUNT] = { devnull, devnull, devnull, ready[1], ex[0], netfd, userfd };
  slirp_plan plan = { how, fds, argv, how->drop ? ux_child_mntns() : -1 };
  n->pid = ux_spawn(slirp_child, &plan, &n->pidfd);
  if (n->pid < 0) {
    n->pid = 0;
    snprintf(err, errlen, "cannot start slirp4netns: %s", strerror(errno));
    goto out;
  }
  ux_close_fd(&ready[1]);
  ux_close_fd(&ex[0]);
  n->exit_fd = ex[1];
  ex[1] = -1;
  rc = await_ready(n, ready[0], how->timeout_ms, err, errlen);
out:
  ux_close_fd(&netfd); ux_close_fd(&userfd); ux_close_fd(&devnull);
  ux_close_fd(&ready[0]); ux_close_fd(&ready[1]); ux_close_fd(&ex[0]); ux_close_fd(&ex[1]);
  return rc;
}

void ux_net_stop(ux_net *n) {
  if (n->pid <= 0) { ux_close_fd(&n->exit_fd); ux_close_fd(&n->pidfd); return; }
  ux_close_fd(&n->exit_fd);                 /* slirp4netns exits on EOF */
  if (n->pidfd >= 0) {
    struct pollfd pf = { n->pidfd, POLLIN, 0 };
    while (poll(&pf, 1, 1000) < 0 && errno == EINTR) {}
    if (!(pf.revents & POLLIN)) syscall(SYS_pidfd_send_signal, n->pidfd, SIGKILL, NULL, 0);
  } else {
    kill(n->pid, SIGKILL);
  }
  int st;
  while (waitpid(n->pid, &st, 0) < 0 && errno == EINTR) {}
  ux_close_fd(&n->pidfd);
  n->pid = 0;
}
