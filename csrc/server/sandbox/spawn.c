/*
** The runner's children, from their start to the exec of bwrap (or
** slirp4netns). The server is multi-threaded and large, so a child is
** started with clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: it
** borrows the server's memory until it execs instead of copying its page
** tables, and the starting thread waits meanwhile. Hence the child code
** makes only async-signal-safe calls (raw syscalls: no malloc, no stdio,
** no locks) and writes nothing but its own stack; everything it needs
** (fds, limits, the argument vector, the cgroup.procs fds) was prepared
** by the parent in a ux_child_plan.
**
** Order matters: the cgroups are joined first, while still root, so
** every process the run will ever have is counted from its first page;
** the work, code and read-only-bind directories are mounted (as root, in
** a private mount namespace) before the uid drops; PR_SET_PDEATHSIG is
** set after the uid change, which clears it.
*/
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/sandbox/run_object.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

void ux_plan_limit(ux_child_plan *p, int res, rlim_t soft, rlim_t hard) {
  if (p->nlim >= UX_MAX_LIMITS) return;
  p->res[p->nlim] = res;
  p->lim[p->nlim].rlim_cur = soft;
  p->lim[p->nlim].rlim_max = hard;
  p->nlim++;
}

int ux_place_fds(const int *fds, int n) {
  int hi[UX_FD_COUNT];
  if (n > UX_FD_COUNT) return -1;
  /* out of the way first (a source may sit on a target number) */
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0 && (hi[i] = fcntl(fds[i], F_DUPFD, 64)) < 0) return -1;
  for (int i = 0; i < n; i++) {
    if (fds[i] >= 0) { if (dup2(hi[i], i) < 0) return -1; }
    else close(i);
  }
#ifdef SYS_close_range
  if (syscall(SYS_close_range, n, ~0U, 0) == 0) return 0;
#endif
  struct rlimit nf;
  int max = getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < 65536 ? (int)nf.rlim_cur : 65536;
  for (int fd = n; fd < max; fd++) close(fd);
  return 0;
}

static const char *const steps[] = {
  "set up fds", "unshare the mount namespace", "mount the tmpfs", "create mount points",
  "bind the directories", "set resource limits", "drop to the slot uid", "exec " UX_SB_BWRAP,
  "join the cgroup", "bind the read-only files", "enter the sandboxes' mount namespace",
  "mount the sandbox's terminals (devpts)",
};

const char *ux_spawn_step(int step) {
  return step >= 0 && (size_t)step < sizeof steps / sizeof steps[0] ? steps[step] : steps[0];
}

/* The ro binds at /tmp/ux/ro/N (mount points made here; the detached
** clones sit at fds UX_FD_RO + N). */
static int mount_ro(const ux_child_plan *p) {
  static const char *const at[UX_SB_RO_BINDS] = {
    UX_SB_MNT_RO "/0", UX_SB_MNT_RO "/1", UX_SB_MNT_RO "/2", UX_SB_MNT_RO "/3",
    UX_SB_MNT_RO "/4", UX_SB_MNT_RO "/5", UX_SB_MNT_RO "/6", UX_SB_MNT_RO "/7",
  };
  if (p->n_ro && mkdir(UX_SB_MNT_RO, 0755) != 0) return -1;
  for (int i = 0; i < p->n_ro; i++) {
    if (p->ro_dir[i]) { if (mkdir(at[i], 0755) != 0) return -1; }
    else {
      int fd = open(at[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) return -1;
      close(fd);
    }
    if (move_mount(UX_FD_RO + i, "", AT_FDCWD, at[i], MOVE_MOUNT_F_EMPTY_PATH) != 0) return -1;
    close(UX_FD_RO + i);
  }
  return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* The work and code directories (and ro binds) at fixed, traversable
** paths, in a mount namespace of this child alone (nothing propagates to
** the host); the fds are detached clones of their mounts made by the
** parent (a mount of another namespace cannot be bound here, a detached
** one can be attached). */
static int mount_dirs(const ux_child_plan *p, int *step) {
  *step = 1;
  if (unshare(CLONE_NEWNS) != 0) return -1;
  if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -1;
  /* the shared /dev's terminals are this sandbox's own (mounts.c), at
  ** most UX_SB_PTY_MAX of the host's pool */
  *step = 11;
  if (p->devpts && mount("devpts", UX_SB_DEV "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                         "newinstance,ptmxmode=0666,mode=620,max=" STR(UX_SB_PTY_MAX)) != 0)
    return -1;
  *step = 2;
  if (mount("ux", UX_SB_MNT_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "mode=0755,size=64k") != 0) return -1;
  *step = 3;
  if (mkdir(UX_SB_MNT_DIR, 0755) != 0 || mkdir(UX_SB_MNT_WORK, 0755) != 0 ||
      mkdir(UX_SB_MNT_CODE, 0755) != 0) return -1;
  *step = 4;
  if (move_mount(UX_FD_WORK, "", AT_FDCWD, UX_SB_MNT_WORK, MOVE_MOUNT_F_EMPTY_PATH) != 0 ||
      move_mount(UX_FD_CODE, "", AT_FDCWD, UX_SB_MNT_CODE, MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return -1;
  close(UX_FD_WORK);
  close(UX_FD_CODE);
  *step = 9;
  return mount_ro(p);
}

static int spawn_child(void *arg) {
  const ux_child_plan *p = arg;
  static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
  int err[2] = { 0, 0 }, placed = 0;

  /* first, as root: every process of the run is counted from here on */
  int joined = ux_cg_join(p->cg_fds, p->n_cg), join_errno = errno;
  /* the mount namespace to copy (mounts.c), entered while its fd is
  ** still open (ux_place_fds closes it); reported once the fds are */
  int entered = p->mntns < 0 || setns(p->mntns, CLONE_NEWNS) == 0, ns_errno = errno;
  if (setsid() < 0) goto fail;
  /* default dispositions and an empty mask: an ignored SIGPIPE in the
  ** server would otherwise be inherited by the program through exec */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  /* everything but the planned fds is closed, whatever other threads
  ** opened without O_CLOEXEC */
  if (ux_place_fds(p->fds, UX_FD_COUNT) != 0) goto fail;
  placed = 1;
  if (fcntl(UX_FD_EXECERR, F_SETFD, FD_CLOEXEC) < 0) goto fail;
  if (joined != 0) { err[0] = 8; errno = join_errno; goto fail; }
  if (!entered) { err[0] = 10; errno = ns_errno; goto fail; }
  if (p->mount && mount_dirs(p, &err[0]) != 0) goto fail;

  err[0] = 5;
  for (int i = 0; i < p->nlim; i++)
    if (setrlimit(p->res[i], &p->lim[i]) != 0) goto fail;
  umask(022);
  err[0] = 6;
  if (p->drop) {
    if (syscall(SYS_setgroups, 0, NULL) != 0) goto fail;
    if (syscall(SYS_setresgid, p->gid, p->gid, p->gid) != 0) goto fail;
    if (syscall(SYS_setresuid, p->uid, p->uid, p->uid) != 0) goto fail;
  }
  /* the sandbox dies with the thread that started it (set after the uid
  ** change, which clears it); ux_run_wait runs on that same thread */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto fail;
  if (getppid() != p->parent) _exit(127);
  err[0] = 7;
  execve(p->argv[0], p->argv, (char *const *)envp);
fail:
  err[1] = errno;
  /* before the fds are placed, fd UX_FD_EXECERR is not ours to write:
  ** the parent then sees EOF and an exit status of 127 */
  if (placed && write(UX_FD_EXECERR, err, sizeof err) < 0) { /* nothing to do */ }
  _exit(127);
}

/* ---------------------------------------------------------------------
** Starting a child without copying the server
** ------------------------------------------------------------------- */

#define CHILD_STACK (64 * 1024)

/* The child's stack: one per starting thread, reused (the thread waits
** while its child runs on it, CLONE_VFORK), rather than an mmap and an
** munmap per start, which in a multi-threaded process costs a TLB
** shootdown on every CPU. */
static __thread char child_stack[CHILD_STACK] __attribute__((aligned(64)));

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif

pid_t ux_spawn(int (*fn)(void *), void *arg, int *pidfd) {
  *pidfd = -1;
  /* no handler of the server may run in the child before it has reset
  ** them all: every signal stays blocked until the child unblocks */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  char *top = child_stack + CHILD_STACK;
  pid_t pid = clone(fn, top, flags | CLONE_PIDFD, arg, pidfd);
  if (pid < 0 && errno == EINVAL) {           /* a kernel before 5.2 */
    *pidfd = -1;
    pid = clone(fn, top, flags, arg);
  }
  int e = errno;
  /* the child ran instrumented frames on this buffer and exec'd without
  ** returning from them: under AddressSanitizer their redzones stay marked
  ** in the shadow it shares with us (CLONE_VM), and would be reported
  ** against whatever later reuses this thread's memory */
  UNPOISON(child_stack, sizeof child_stack);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
#ifdef SYS_pidfd_open
  if (pid > 0 && *pidfd < 0) *pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
  errno = e;
  return pid;
}

pid_t ux_spawn_bwrap(const ux_child_plan *p, int *pidfd) {
  return ux_spawn(spawn_child, (void *)p, pidfd);
}
