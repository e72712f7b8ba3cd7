/*
** Slot uids of the runner and the processes that run under them: finding,
** killing and reaping by uid, and the table of slots (see slots.h).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/limits.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/slots.h"

/* ---------------------------------------------------------------------
** Processes by uid
** ------------------------------------------------------------------- */

/* The start of /proc/PID/status (where State:, PPid:, Uid: and NSpid:
** stand) as a string in buf; 0, or -1 when the process is gone. */
int ux_proc_status(long pid, char *buf, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return 0;
}

/* Reads the State: and Uid: lines of /proc/PID/status (real, effective,
** saved, fs uid) rather than the owner of /proc/PID, which a non-dumpable
** process hides: 0 not of uid, 1 a live process of uid, 2 a zombie. */
static int owned_by(const char *pid, uid_t uid) {
  char buf[2048];
  if (ux_proc_status(strtol(pid, NULL, 10), buf, sizeof buf) != 0) return 0;
  char *st = strstr(buf, "\nState:"), *u = strstr(buf, "\nUid:");
  unsigned long ids[4];
  if (!u || sscanf(u + 5, "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) != 4)
    return 0;
  for (int i = 0; i < 4; i++)
    if (ids[i] == uid) return st && strncmp(st + 8, "\tZ", 2) == 0 ? 2 : 1;
  return 0;
}


int ux_pidfd_alive(int fd) {
  struct pollfd pf = { fd, POLLIN, 0 };
  return fd >= 0 && poll(&pf, 1, 0) == 0;
}

int ux_pidfd_kill(int fd) {
#ifdef SYS_pidfd_send_signal
  return (int)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
#else
  (void)fd; errno = ENOSYS; return -1;
#endif
}

/*
** SIGKILLs every live process of `uid` but `spare` and reaps those that
** are (or became, see ux_become_subreaper()) our children; returns how many live
** ones were seen. Zombies do not count: they are dead already.
** Each process is checked again once a pidfd holds it, and signalled and
** reaped through that pidfd: a process that ended (and was reaped) since
** /proc was read is then never confused with the next owner of its pid.
*/
int ux_kill_uid(uid_t uid, pid_t spare) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  int seen = 0, status;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
    if (pid == spare) continue;
    int kind = owned_by(e->d_name, uid);
    if (!kind) continue;
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
      kind = owned_by(e->d_name, uid);
      if (kind == 1) { seen++; ux_pidfd_kill(fd); }
      if (kind) {
        siginfo_t si;
        waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG);
      }
      close(fd);
      continue;
    }
    if (errno != ENOSYS) continue;      /* gone (and reaped) already */
#endif
    if (kind == 1) { seen++; kill(pid, SIGKILL); }
    waitpid(pid, &status, WNOHANG);
  }
  closedir(d);
  return seen;
}

int ux_signal_uid(uid_t uid, int sig) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || owned_by(e->d_name, uid) != 1) continue;
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)strtol(e->d_name, NULL, 10), 0);
    if (fd < 0) continue;
    if (owned_by(e->d_name, uid) == 1 && syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0) n++;
    close(fd);
#else
    if (kill((pid_t)strtol(e->d_name, NULL, 10), sig) == 0) n++;
#endif
  }
  closedir(d);
  return n;
}

/*
** bwrap's outer process exits as soon as it has the program's status,
** and its inner one (the pid namespace's init) is then orphaned. Its
** zombie would go to the host's init, which in a container may never
** reap it: zombies pile up, count against RLIMIT_NPROC of the slot uid
** and eat pids. As a child subreaper this process gets them instead and
** ux_kill_uid reaps them.
*/
static pthread_once_t subreaper_once = PTHREAD_ONCE_INIT;
static void subreaper_set(void) { prctl(PR_SET_CHILD_SUBREAPER, 1); }
void ux_become_subreaper(void) { pthread_once(&subreaper_once, subreaper_set); }

/* Kills until none is left, or gives up after SWEEP_MS: 0 when clean. */
int ux_sweep_uid(uid_t uid) {
  long long end = ux_now_ms() + SWEEP_MS;
  while (ux_kill_uid(uid, 0) > 0) {
    if (ux_now_ms() > end) return -1;
    struct timespec ts = { 0, 10 * 1000000 };
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* ---------------------------------------------------------------------
** Slots. Within the process a table under a mutex; across processes (two
** servers, a server and the tests) an flock on /run/unsandboxd/uid-UID,
** which the kernel drops when a process dies. A slot newly locked is
** swept: whatever still runs as its uid belongs to nobody. A slot taken
** for a persistent work directory is shared by every run of that
** directory until the last one ends (see the top of runner.c).
**
** Sweeps read /proc/PID/status of every process on the machine, so they
** stay off the hot path: the mutex is never held across one, a slot
** whose runs all proved their processes gone (ux_slot_give's `clean`)
** is given back without one, and up to a number of such slots stay
** locked by this process, idle, for the next runs to take at no cost
** (ux_runner_keep_slots, plus the pool's own: ux_slots_keep).
** A slot left with no proof is swept before it is reused or unlocked.
** ------------------------------------------------------------------- */

#define LOCK_DIR "/run/unsandboxd"

enum { TREE_NONE, TREE_PREPARING, TREE_READY };

static struct {
  pthread_mutex_t lock;
  pthread_cond_t ready;       /* a tree was handed over (or not) */
  unsigned char busy[UX_SB_SLOTS];   /* in use, or being locked/swept */
  unsigned char kept[UX_SB_SLOTS];   /* locked, idle, known clean */
  unsigned char unsure[UX_SB_SLOTS]; /* a run ended without proof */
  int lockfd[UX_SB_SLOTS];    /* the flock while busy or kept */
  int refs[UX_SB_SLOTS];      /* runs using the slot */
  unsigned char keyed[UX_SB_SLOTS];  /* joinable by runs of the workdir */
  dev_t dev[UX_SB_SLOTS];
  ino_t ino[UX_SB_SLOTS];
  unsigned char tree[UX_SB_SLOTS];   /* TREE_*: is the workdir the uid's? */
  int cursor, n_kept, keep_max;
  int keep[2];                /* UX_KEEP_*: the runner's, the pool's */
} slots = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
            {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, 0, 0, 0, {0, 0} };

static int slot_lock(int i) {
  char path[64];
  snprintf(path, sizeof path, LOCK_DIR "/uid-%u", UX_SB_UID_BASE + (unsigned)i);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) { close(fd); return -1; }
  return fd;
}

/* Makes slot i (busy, locked: lockfd set) the caller's; locked. */
static void own(int i, const struct stat *wd) {
  slots.refs[i] = 1;
  slots.unsure[i] = 0;
  slots.keyed[i] = wd != NULL;
  slots.dev[i] = wd ? wd->st_dev : 0;
  slots.ino[i] = wd ? wd->st_ino : 0;
  slots.tree[i] = TREE_PREPARING;
}

/* The slot that already serves the work directory wd, with one more
** use, or -1. Locked. */
static int find_keyed(const struct stat *wd) {
  for (int i = 0; i < UX_SB_SLOTS; i++) {
    if (!slots.busy[i] || !slots.keyed[i] || slots.dev[i] != wd->st_dev ||
        slots.ino[i] != wd->st_ino) continue;
    slots.refs[i]++;
    return i;
  }
  return -1;
}

/* A run that joined slot i waits until the tree is the slot's. Locked. */
static void await_tree(int i, int *prepare) {
  while (slots.tree[i] == TREE_PREPARING) pthread_cond_wait(&slots.ready, &slots.lock);
  /* the run that took it could not hand the tree over: try again */
  if (slots.tree[i] == TREE_READY) *prepare = 0;
  else slots.tree[i] = TREE_PREPARING;
}

/* An idle slot this process kept, or -1. Locked. */
static int take_kept(const struct stat *wd) {
  for (int i = 0; slots.n_kept > 0 && i < UX_SB_SLOTS; i++) {
    if (!slots.kept[i]) continue;
    slots.kept[i] = 0;
    slots.n_kept--;
    slots.busy[i] = 1;
    own(i, wd);
    return i;
  }
  return -1;
}

/* A slot no process of ours holds: locked and swept with the mutex
** released (the candidate is marked busy meanwhile). Called and returns
** with the lock held; -1 when every slot is taken. */
static int lock_fresh(const struct stat *wd) {
  for (int k = 0; k < UX_SB_SLOTS; k++) {
    int i = (slots.cursor + k) % UX_SB_SLOTS;
    if (slots.busy[i] || slots.kept[i]) continue;
    slots.busy[i] = 1;
    pthread_mutex_unlock(&slots.lock);
    int fd = slot_lock(i);
    if (fd >= 0 && ux_sweep_uid(UX_SB_UID_BASE + (uid_t)i) != 0) { close(fd); fd = -1; }
    pthread_mutex_lock(&slots.lock);
    if (fd < 0) { slots.busy[i] = 0; continue; }
    slots.lockfd[i] = fd;
    slots.cursor = i + 1;
    own(i, wd);
    return i;
  }
  return -1;
}

/* Serialises the takes of runs with a persistent work directory from
** "is a slot serving it?" to "this one is": two runs of a fresh directory
** must not each lock a slot of their own (the table's mutex is released
** during a sweep). Taken before slots.lock; never held while waiting for
** a tree to be handed over. */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;

/*
** A slot for a run whose persistent work directory is `wd` (NULL for a
** temporary one): the slot already held for that directory, else a kept
** one, else a fresh one. *prepare is set when the caller must hand the
** work directory to the slot uid and then call slot_prepared; a run
** joining a slot returns only once the tree is the slot's. -1 when every
** slot is taken.
*/
int ux_slot_take(const struct stat *wd, int *prepare) {
  *prepare = 1;
  if (wd) pthread_mutex_lock(&wd_lock);
  pthread_mutex_lock(&slots.lock);
  int got = wd ? find_keyed(wd) : -1, joined = got >= 0;
  if (got < 0) got = take_kept(wd);
  if (got < 0 && (mkdir(LOCK_DIR, 0700) == 0 || errno == EEXIST)) got = lock_fresh(wd);
  if (wd) pthread_mutex_unlock(&wd_lock);
  if (joined) await_tree(got, prepare);
  pthread_mutex_unlock(&slots.lock);
  return got;
}

/* Ends the hand-over ux_slot_take asked for; lets the waiting sharers go. */
void ux_slot_prepared(int slot, int ok) {
  pthread_mutex_lock(&slots.lock);
  slots.tree[slot] = ok ? TREE_READY : TREE_NONE;
  pthread_cond_broadcast(&slots.ready);
  pthread_mutex_unlock(&slots.lock);
}

/* Drops the caller's use of the slot. The last user sweeps it unless
** every run proved its processes gone, then keeps it (up to the keep
** limit) or unlocks it. A slot being given back is no longer joinable:
** a new run of its work directory takes another slot (and chowns the
** tree to it). */
void ux_slot_give(int slot, int clean) {
  if (slot < 0) return;
  pthread_mutex_lock(&slots.lock);
  if (!clean) slots.unsure[slot] = 1;
  int last = --slots.refs[slot] == 0;
  int sweep = last && slots.unsure[slot];
  if (last) slots.keyed[slot] = 0;
  pthread_mutex_unlock(&slots.lock);
  if (!last) return;
  int swept = sweep ? ux_sweep_uid(UX_SB_UID_BASE + (uid_t)slot) == 0 : 1;
  pthread_mutex_lock(&slots.lock);
  slots.busy[slot] = 0;
  slots.unsure[slot] = 0;
  if (swept && slots.n_kept < slots.keep_max) {
    slots.kept[slot] = 1;
    slots.n_kept++;
  } else {
    close(slots.lockfd[slot]);
    slots.lockfd[slot] = -1;
  }
  pthread_mutex_unlock(&slots.lock);
}

/* 1 when another run still uses the slot (so its uid is not ours alone). */
int ux_slot_shared(int slot) {
  if (slot < 0) return 0;
  pthread_mutex_lock(&slots.lock);
  int shared = slots.refs[slot] > 1;
  pthread_mutex_unlock(&slots.lock);
  return shared;
}

/* Unlocks kept slots beyond the limit. Locked. */
static void trim_kept(void) {
  for (int i = 0; i < UX_SB_SLOTS && slots.n_kept > slots.keep_max; i++) {
    if (!slots.kept[i]) continue;
    slots.kept[i] = 0;
    slots.n_kept--;
    close(slots.lockfd[i]);
    slots.lockfd[i] = -1;
  }
}

void ux_slots_keep(int who, int n) {
  pthread_mutex_lock(&slots.lock);
  slots.keep[who] = n < 0 ? 0 : n > UX_SB_SLOTS ? UX_SB_SLOTS : n;
  slots.keep_max = slots.keep[UX_KEEP_RUNNER] + slots.keep[UX_KEEP_POOL];
  if (slots.keep_max > UX_SB_SLOTS) slots.keep_max = UX_SB_SLOTS;
  trim_kept();
  pthread_mutex_unlock(&slots.lock);
}

void ux_runner_keep_slots(int n) { ux_slots_keep(UX_KEEP_RUNNER, n); }
