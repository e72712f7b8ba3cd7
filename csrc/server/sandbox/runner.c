/*
** The sandbox runner: one program under bubblewrap, as an unprivileged
** per-slot uid, with resource limits, a wall-clock ttl and capped output.
**
** Life of a run (ux_run_start, then ux_run_wait on the same thread):
**   1. check the spec (language, file names, env) before touching disk;
**   2. make a private run directory (0700, root): code/ holds the source,
**      work/ the work directory unless the spec brings a persistent one;
**   3. take a slot: uid/gid UX_SB_UID_BASE + slot, so RLIMIT_NPROC counts
**      this run (and the runs sharing its work directory, below) and
**      whatever the slot's runs left can be found and killed by uid once
**      the last of them has ended; the run that takes a slot chowns the
**      work directory and its whole tree to the slot uid, then the input
**      files are placed;
**   4. fork; the child becomes a session leader, sets the fds, rlimits,
**      drops to the slot uid and execs bwrap;
**   5. the waiter polls stdout, stderr, bwrap's --info-fd, a pidfd of the
**      child and a cancel eventfd until the child is reaped. The info
**      names bwrap's inner process, the init of the run's own pid
**      namespace, which the waiter pins with a pidfd. The ttl or a cancel
**      SIGKILL that init: the kernel then kills every process of the
**      namespace, and the outer bwrap sees its child die and exits (137);
**   6. once the outer bwrap is reaped the inner init is killed as well (a
**      program that left background processes keeps its namespace alive
**      after its main process exited) and reaped; artifacts are collected,
**      the run directory removed and the slot released. The last run to
**      leave a slot SIGKILLs every process still owned by the slot uid (a
**      belt over the namespace's braces).
**
** Runs that share a persistent work directory (a service's bootstrap and
** its execute commands, concurrent commands of one session) share one
** slot, and so one uid, for as long as any of them runs. Were each run to
** chown the tree to a uid of its own, the second would take the files,
** and the 0700 directory itself, from the first: bwrap of whichever
** started later than the other's chown could not even chdir into it, and
** the first program loses access to everything it wrote. Group or ACL
** permissions would not do: a program may chmod what it creates. So the
** slot table records, per slot, the work directory (its device and inode,
** read from the open directory: aliases of one path agree, the open fd
** pins the inode so the key cannot be recycled while a sharer runs, and a
** directory swapped in by a snapshot restore is another tree and gets its
** own slot) and a count of the runs using it. The first run chowns the
** tree; the others wait until it has, then start as the same uid. Only
** when the count drops to 0 is the slot swept and released.
**
** Sharing a uid means a run can no longer be killed by uid: that would
** kill its sharers (a service's bootstrap, when one of its commands hits
** its ttl). Hence step 5: each run has its own pid namespace, and killing
** its init kills exactly that run, race-free through the pidfd. The
** sharers are otherwise as apart as any two runs (separate pid, ipc and
** user namespaces); they share their files, which they share anyway, and
** RLIMIT_NPROC, which counts per uid. Should the inner process not be
** known (a kernel without pidfds), a kill falls back to every process of
** the uid but the outer bwrap, sharers included.
**
** Why a persistent work directory is chowned when its slot is taken
** (rather than made world-writable): the next run of a session may get
** another slot uid, and a program can always chmod 0600 what it creates,
** so only an ownership change is correct. The walk never follows symlinks
** (see workdir.c). Between runs the files stay owned by the last slot
** uid, which no process holds once its last run has ended.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/sandbox/runner.h"
#include "server/fsutil.h"
#include "server/sandbox/sandbox.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"
#include "server/sandbox/slots.h"

#define BWRAP        "/usr/bin/bwrap"
#define DRAIN_MS     1000     /* output still read after the child is reaped */
#define CHUNK        65536

struct ux_run {
  unsigned long long id;
  struct ux_run *next;        /* registry, under reg.lock */
  atomic_int cancel;
  int cancel_fd;              /* eventfd */

  pid_t pid;
  int pidfd;                  /* -1 when the kernel has no pidfd_open */
  int out_fd, err_fd, started_fd;
  int info_fd;                /* bwrap's --info-fd, until EOF */
  char info[512]; size_t info_len;
  pid_t inner;                /* bwrap's inner process (0: not known yet) */
  int inner_fd;               /* its pidfd, -1 when not pinned */
  long long t0_ms;
  int ttl_s;
  size_t cap;

  int slot;                   /* -1 when not running as root */
  uid_t uid; gid_t gid;
  int base_fd;                /* directory holding the run directory */
  char run_name[64];          /* its name there */
  char run_path[PATH_MAX + 32];  /* and its path: a scratch volume's mount point */
  int work_fd;
  int want_artifacts;
  void (*on_output)(void *ctx, int channel, const char *data, size_t len);
  void *output_ctx;
  ux_tree_list before;
  char **inputs; size_t n_inputs;   /* input file names (not artifacts) */
};

/* ---------------------------------------------------------------------
** Process-wide state: the registry of live runs (for ux_run_cancel_id)
** and the directory for run directories, under one mutex; the slot table
** (below) has its own.
** ------------------------------------------------------------------- */

static struct {
  pthread_mutex_t lock;
  struct ux_run *head;
  unsigned long long next_id;
  char tmpdir[PATH_MAX];
} reg = { PTHREAD_MUTEX_INITIALIZER, NULL, 1, "" };

static int privileged(void) { return geteuid() == 0; }

/* ---------------------------------------------------------------------
** Configuration and the registry
** ------------------------------------------------------------------- */

void ux_runner_set_tmpdir(const char *dir) {
  pthread_mutex_lock(&reg.lock);
  snprintf(reg.tmpdir, sizeof reg.tmpdir, "%s", dir ? dir : "");
  pthread_mutex_unlock(&reg.lock);
}

static void reg_add(ux_run *r) {
  pthread_mutex_lock(&reg.lock);
  r->id = reg.next_id++;
  r->next = reg.head;
  reg.head = r;
  pthread_mutex_unlock(&reg.lock);
}

static void reg_remove(ux_run *r) {
  pthread_mutex_lock(&reg.lock);
  for (ux_run **p = &reg.head; *p; p = &(*p)->next)
    if (*p == r) { *p = r->next; break; }
  pthread_mutex_unlock(&reg.lock);
}

static void request_cancel(ux_run *r) {
  uint64_t one = 1;
  atomic_store(&r->cancel, 1);
  if (write(r->cancel_fd, &one, sizeof one) < 0) { /* already signalled */ }
}

int ux_run_cancel_id(unsigned long long id) {
  int found = 0;
  pthread_mutex_lock(&reg.lock);
  for (ux_run *r = reg.head; r; r = r->next)
    if (r->id == id) { request_cancel(r); found = 1; break; }
  pthread_mutex_unlock(&reg.lock);
  return found;
}

unsigned long long ux_run_id(const ux_run *run) { return run ? run->id : 0; }

/* Cancels every registered run working in dir_fd's directory, then waits
** (polling the registry) until none is left or timeout_ms passed. */
int ux_runner_kill_workdir(int dir_fd, int timeout_ms) {
  struct stat want;
  if (fstat(dir_fd, &want) != 0) return -1;
  long long end = ux_now_ms() + timeout_ms;
  for (;;) {
    int left = 0;
    pthread_mutex_lock(&reg.lock);
    for (ux_run *r = reg.head; r; r = r->next) {
      struct stat st;
      if (r->work_fd >= 0 && fstat(r->work_fd, &st) == 0 &&
          st.st_dev == want.st_dev && st.st_ino == want.st_ino) {
        request_cancel(r);
        left++;
      }
    }
    pthread_mutex_unlock(&reg.lock);
    if (!left) return 0;
    if (ux_now_ms() >= end) return -1;
    struct timespec ts = { 0, 20 * 1000000L };
    nanosleep(&ts, NULL);
  }
}

void ux_run_cancel(ux_run *run) {
  if (!run) return;
  /* only a registered run is touched, so a cancel racing with the end
  ** of ux_run_wait does nothing rather than write to freed memory */
  pthread_mutex_lock(&reg.lock);
  for (ux_run *r = reg.head; r; r = r->next)
    if (r == run) { request_cancel(r); break; }
  pthread_mutex_unlock(&reg.lock);
}

/* ---------------------------------------------------------------------
** Start
** ------------------------------------------------------------------- */

static int xpipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

static void close_fd(int *fd) { if (*fd >= 0) { close(*fd); *fd = -1; } }

/* A pipe whose read end holds `text` (short: it fits the pipe buffer). */
static int data_pipe(const char *text) {
  int p[2];
  if (xpipe(p) != 0) return -1;
  size_t len = strlen(text);
  ssize_t w = write(p[1], text, len);
  close(p[1]);
  if (w != (ssize_t)len) { close(p[0]); return -1; }
  return p[0];
}

typedef struct child_plan {
  int fds[UX_FD_COUNT];       /* sources for fds 0..UX_FD_COUNT-1 */
  struct rlimit lim[8];
  int res[8];
  int nlim;
  int drop;                   /* setuid to uid/gid */
  int mount;                  /* bind the dirs at UX_SB_MNT_* first */
  uid_t uid; gid_t gid;
  pid_t parent;
  char **argv;
} child_plan;

/*
** Runs in the forked child of a multi-threaded process: only
** async-signal-safe calls (raw syscalls, no malloc, no stdio).
*/
static void child(const child_plan *p) {
  static char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
  int hi[UX_FD_COUNT], err[2] = { 0, 0 };
#define STEP(n) (err[0] = (n))

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

  /* move the sources out of the way, then into place; everything else is
  ** closed, whatever other threads opened without O_CLOEXEC */
  for (int i = 0; i < UX_FD_COUNT; i++)
    if ((hi[i] = fcntl(p->fds[i], F_DUPFD, 64)) < 0) goto fail;
  for (int i = 0; i < UX_FD_COUNT; i++)
    if (dup2(hi[i], i) < 0) goto fail;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, UX_FD_COUNT, ~0U, 0) != 0)
#endif
  {
    struct rlimit nf;
    int max = getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < 65536
              ? (int)nf.rlim_cur : 65536;
    for (int fd = UX_FD_COUNT; fd < max; fd++) close(fd);
  }
  if (fcntl(UX_FD_EXECERR, F_SETFD, FD_CLOEXEC) < 0) goto fail;

  /* the work and code directories at fixed, traversable paths, in a mount
  ** namespace of this child alone (nothing propagates to the host); the
  ** fds are detached clones of their mounts made by the parent (a mount
  ** of another namespace cannot be bound here, a detached one can be
  ** attached) */
  if (p->mount) {
    STEP(1);
    if (unshare(CLONE_NEWNS) != 0) goto fail;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) goto fail;
    STEP(2);
    if (mount("ux", UX_SB_MNT_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64k") != 0) goto fail;
    STEP(3);
    if (mkdir(UX_SB_MNT_DIR, 0755) != 0 || mkdir(UX_SB_MNT_WORK, 0755) != 0 ||
        mkdir(UX_SB_MNT_CODE, 0755) != 0) goto fail;
    STEP(4);
    if (move_mount(UX_FD_WORK, "", AT_FDCWD, UX_SB_MNT_WORK, MOVE_MOUNT_F_EMPTY_PATH) != 0 ||
        move_mount(UX_FD_CODE, "", AT_FDCWD, UX_SB_MNT_CODE, MOVE_MOUNT_F_EMPTY_PATH) != 0)
      goto fail;
    close(UX_FD_WORK);
    close(UX_FD_CODE);
  }

  STEP(5);
  for (int i = 0; i < p->nlim; i++)
    if (setrlimit(p->res[i], &p->lim[i]) != 0) goto fail;
  umask(022);
  STEP(6);
  if (p->drop) {
    if (syscall(SYS_setgroups, 0, NULL) != 0) goto fail;
    if (syscall(SYS_setresgid, p->gid, p->gid, p->gid) != 0) goto fail;
    if (syscall(SYS_setresuid, p->uid, p->uid, p->uid) != 0) goto fail;
  }
  /* the sandbox dies with the thread that started it (set after the uid
  ** change, which clears it); ux_run_wait runs on that same thread */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto fail;
  if (getppid() != p->parent) _exit(127);
  STEP(7);
  execve(p->argv[0], p->argv, envp);
fail:
  err[1] = errno;
  if (write(UX_FD_EXECERR, err, sizeof err) < 0) { /* nothing to do */ }
  _exit(127);
#undef STEP
}

static void add_limit(child_plan *p, int res, rlim_t soft, rlim_t hard) {
  p->res[p->nlim] = res;
  p->lim[p->nlim].rlim_cur = soft;
  p->lim[p->nlim].rlim_max = hard;
  p->nlim++;
}

static void run_free(ux_run *r) {
  close_fd(&r->out_fd); close_fd(&r->err_fd); close_fd(&r->started_fd);
  close_fd(&r->pidfd); close_fd(&r->cancel_fd);
  close_fd(&r->info_fd); close_fd(&r->inner_fd);
  if (r->base_fd >= 0) {
    /* a scratch volume goes with one unmount; the walk is only for the
    ** plain-directory fallback, and nothing of the run is left by now */
    if (r->run_path[0]) ux_scratch_unmount(r->run_path);
    if (r->run_name[0]) ux_tree_remove(r->base_fd, r->run_name);
    close_fd(&r->base_fd);
  }
  /* the work directory stays open until the slot is given back: its
  ** inode, the slot's key, cannot be recycled while the slot is joinable */
  ux_slot_give(r->slot);
  close_fd(&r->work_fd);
  ux_tree_list_free(&r->before);
  for (size_t i = 0; i < r->n_inputs; i++) free(r->inputs[i]);
  free(r->inputs);
  free(r);
}

static int open_dir_at(int at, const char *path) {
  return openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The run directory, the source file and the work directory. */
static int prepare_dirs(ux_run *r, const ux_run_spec *spec, const ux_lang *lang,
                        int *code_fd, char *err, size_t errlen) {
  char base[PATH_MAX], tmpl[PATH_MAX + 32];
  pthread_mutex_lock(&reg.lock);
  snprintf(base, sizeof base, "%s", reg.tmpdir[0] ? reg.tmpdir : "/tmp");
  pthread_mutex_unlock(&reg.lock);
  if ((r->base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    snprintf(err, errlen, "cannot open %s: %s", base, strerror(errno));
    return -1;
  }
  snprintf(tmpl, sizeof tmpl, "%s/unsb-run-XXXXXX", base);
  if (!mkdtemp(tmpl)) {
    snprintf(err, errlen, "cannot create a run directory in %s: %s", base, strerror(errno));
    return -1;
  }
  snprintf(r->run_name, sizeof r->run_name, "%s", strrchr(tmpl, '/') + 1);
  if (ux_scratch_mount(tmpl) != 0) {
    snprintf(err, errlen, "cannot mount the run's scratch volume: %s", strerror(errno));
    return -1;
  }
  snprintf(r->run_path, sizeof r->run_path, "%s", tmpl);
  int run_fd = open_dir_at(r->base_fd, r->run_name);
  if (run_fd < 0 || mkdirat(run_fd, "code", 0755) != 0 ||
      (*code_fd = open_dir_at(run_fd, "code")) < 0) {
    snprintf(err, errlen, "cannot create the code directory: %s", strerror(errno));
    if (run_fd >= 0) close(run_fd);
    return -1;
  }
  if (ux_tree_place_file(*code_fd, lang->file, spec->code ? spec->code : "",
                       spec->code ? spec->code_len : 0, (uid_t)-1, (gid_t)-1,
                       err, errlen) != 0) {
    close(run_fd);
    return -1;
  }

  /* a persistent work directory is a volume its owner made (volume.h);
  ** a run never creates one, so a run queued for a resource deleted
  ** meanwhile fails here rather than bring its directory back */
  if (spec->workdir_fd > 0) {
    r->work_fd = fcntl(spec->workdir_fd, F_DUPFD_CLOEXEC, 0);
  } else if (spec->workdir) {
    r->work_fd = open_dir_at(AT_FDCWD, spec->workdir);
  } else if (mkdirat(run_fd, "work", 0700) == 0) {
    r->work_fd = open_dir_at(run_fd, "work");
  }
  close(run_fd);
  if (r->work_fd < 0) {
    snprintf(err, errlen, "cannot open the work directory: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* Takes the run's slot (as root) and hands it the work directory: the
** whole tree when the slot is new to it, then the input files. */
static int take_slot(ux_run *r, const ux_run_spec *spec, char *err, size_t errlen) {
  int prepare = 1;
  if (privileged()) {
    struct stat wd;
    int persistent = spec->workdir || spec->workdir_fd > 0;
    if (persistent && fstat(r->work_fd, &wd) != 0) {
      snprintf(err, errlen, "cannot stat the work directory: %s", strerror(errno));
      return -1;
    }
    if ((r->slot = ux_slot_take(persistent ? &wd : NULL, &prepare)) < 0) {
      snprintf(err, errlen, "too many concurrent runs (%d)", UX_SB_SLOTS);
      return -1;
    }
    r->uid = UX_SB_UID_BASE + (uid_t)r->slot;
    r->gid = UX_SB_UID_BASE + (gid_t)r->slot;
    if (prepare) {
      int rc = ux_tree_chown(r->work_fd, r->uid, r->gid);
      int e = errno;
      ux_slot_prepared(r->slot, rc == 0);
      if (rc != 0) {
        snprintf(err, errlen, "cannot hand the work directory to the sandbox user: %s",
                 strerror(e));
        return -1;
      }
    }
  }
  for (size_t i = 0; i < spec->n_files; i++)
    if (ux_tree_place_file(r->work_fd, spec->files[i].name, spec->files[i].data,
                         spec->files[i].len, r->uid, r->gid, err, errlen) != 0)
      return -1;
  return 0;
}

static int check_spec(const ux_run_spec *spec, const ux_lang **lang,
                      char *err, size_t errlen) {
  if (!spec) { snprintf(err, errlen, "no run spec"); return -1; }
  if (!(*lang = ux_sb_lang(spec->language))) {
    snprintf(err, errlen, "unsupported language '%.100s'",
             spec->language ? spec->language : "(null)");
    return -1;
  }
  if (spec->ttl_s < 0) { snprintf(err, errlen, "negative ttl"); return -1; }
  for (size_t i = 0; i < spec->n_files; i++)
    if (ux_tree_check_name(spec->files[i].name, err, errlen) != 0) return -1;
  return 0;
}

/* Starts `script` (already expanded) for `spec`; `lang` gives the code
** file name. */
static ux_run *start(const ux_run_spec *spec, const ux_lang *lang,
                     const char *script, char *err, size_t errlen) {
  ux_argv argv = { 0 };
  if (ux_sb_build_argv(&argv, spec, privileged(), script, err, errlen) != 0) {
    ux_sb_argv_free(&argv);
    return NULL;
  }
  ux_run *r = calloc(1, sizeof *r);
  if (!r) { snprintf(err, errlen, "out of memory"); ux_sb_argv_free(&argv); return NULL; }
  r->out_fd = r->err_fd = r->started_fd = r->pidfd = r->cancel_fd = -1;
  r->info_fd = r->inner_fd = -1;
  r->work_fd = r->base_fd = -1;
  r->slot = -1;
  r->uid = getuid(); r->gid = getgid();
  r->ttl_s = spec->ttl_s;
  r->cap = spec->output_cap ? spec->output_cap : UX_SB_OUTPUT_CAP;
  r->want_artifacts = spec->want_artifacts;
  r->on_output = spec->on_output;
  r->output_ctx = spec->output_ctx;

  int code_fd = -1, pw = -1, gr = -1, devnull = -1, wtree = -1, ctree = -1;
  int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, st[2] = { -1, -1 }, ex[2] = { -1, -1 };
  int info[2] = { -1, -1 };

  if (privileged()) ux_become_subreaper();
  if (spec->n_files) {
    if (!(r->inputs = calloc(spec->n_files, sizeof *r->inputs))) goto oom;
    for (; r->n_inputs < spec->n_files; r->n_inputs++)
      if (!(r->inputs[r->n_inputs] = strdup(spec->files[r->n_inputs].name))) goto oom;
  }
  if (prepare_dirs(r, spec, lang, &code_fd, err, errlen) != 0 ||
      take_slot(r, spec, err, errlen) != 0) goto fail;
  if (r->want_artifacts) ux_tree_list_files(r->work_fd, &r->before);

  char passwd[256], group[256];
  snprintf(passwd, sizeof passwd,
           "root:x:0:0:root:/root:/bin/sh\n"
           "sandbox:x:%u:%u:sandbox:" UX_SB_WORK_DIR ":/bin/sh\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
           UX_SB_INNER_ID, UX_SB_INNER_ID);
  snprintf(group, sizeof group, "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n",
           UX_SB_INNER_ID);
  if ((pw = data_pipe(passwd)) < 0 || (gr = data_pipe(group)) < 0 ||
      xpipe(out) || xpipe(errp) || xpipe(st) || xpipe(ex) || xpipe(info) ||
      (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
      (r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    snprintf(err, errlen, "cannot set up the run: %s", strerror(errno));
    goto fail;
  }

  if (privileged() &&
      ((wtree = open_tree(r->work_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0 ||
       (ctree = open_tree(code_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0)) {
    snprintf(err, errlen, "cannot clone the work directory mount: %s", strerror(errno));
    goto fail;
  }

  child_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.fds[0] = devnull; plan.fds[1] = out[1]; plan.fds[2] = errp[1];
  plan.fds[UX_FD_STARTED] = st[1];
  plan.fds[UX_FD_WORK] = wtree >= 0 ? wtree : r->work_fd;
  plan.fds[UX_FD_CODE] = ctree >= 0 ? ctree : code_fd;
  plan.fds[UX_FD_PASSWD] = pw;
  plan.fds[UX_FD_GROUP] = gr; plan.fds[UX_FD_EXECERR] = ex[1];
  plan.fds[UX_FD_INFO] = info[1];
  int vcpu = spec->vcpu < 1 ? 1 : spec->vcpu > 8 ? 8 : spec->vcpu;
  rlim_t mem = (rlim_t)UX_SB_MEM_PER_VCPU * (rlim_t)vcpu;
  add_limit(&plan, RLIMIT_NPROC, UX_SB_NPROC, UX_SB_NPROC);
  add_limit(&plan, RLIMIT_DATA, mem, mem);
  add_limit(&plan, RLIMIT_FSIZE, UX_SB_FSIZE, UX_SB_FSIZE);
  add_limit(&plan, RLIMIT_CORE, 0, 0);
  add_limit(&plan, RLIMIT_NOFILE, UX_SB_NOFILE, UX_SB_NOFILE);
  add_limit(&plan, RLIMIT_MEMLOCK, 0, 0);
  /* CPU time: a backstop behind the wall clock, so it must never fire
  ** first, even for a program that keeps every core busy */
  if (spec->ttl_s > 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rlim_t cpu = (rlim_t)spec->ttl_s * (rlim_t)(cpus > 0 ? cpus : 1) + UX_SB_CPU_SLACK;
    add_limit(&plan, RLIMIT_CPU, cpu, cpu + UX_SB_CPU_SLACK);
  }
  plan.drop = r->slot >= 0;
  plan.mount = privileged();
  plan.uid = r->uid; plan.gid = r->gid;
  plan.parent = getpid();
  plan.argv = argv.v;

  r->t0_ms = ux_now_ms();
  r->pid = fork();
  if (r->pid < 0) {
    snprintf(err, errlen, "cannot fork: %s", strerror(errno));
    goto fail;
  }
  if (r->pid == 0) child(&plan);

  close_fd(&out[1]); close_fd(&errp[1]); close_fd(&st[1]); close_fd(&ex[1]);
  close_fd(&info[1]);
  close_fd(&pw); close_fd(&gr); close_fd(&devnull); close_fd(&code_fd);
  close_fd(&wtree); close_fd(&ctree);
  r->out_fd = out[0]; r->err_fd = errp[0]; r->started_fd = st[0]; r->info_fd = info[0];
  out[0] = errp[0] = st[0] = info[0] = -1;
  fcntl(r->out_fd, F_SETFL, O_NONBLOCK);
  fcntl(r->info_fd, F_SETFL, O_NONBLOCK);
  fcntl(r->err_fd, F_SETFL, O_NONBLOCK);
  fcntl(r->started_fd, F_SETFL, O_NONBLOCK);

  static const char *const steps[] = { "set up fds", "unshare the mount namespace",
    "mount the tmpfs", "create mount points", "bind the directories",
    "set resource limits", "drop to the slot uid", "exec " BWRAP };
  int child_err[2] = { 0, 0 };
  ssize_t n;
  do n = read(ex[0], child_err, sizeof child_err); while (n < 0 && errno == EINTR);
  close_fd(&ex[0]);
  if (n > 0) {
    int status;
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {}
    unsigned step = (unsigned)child_err[0] < 8 ? (unsigned)child_err[0] : 0;
    snprintf(err, errlen, "cannot start the sandbox: %s: %s", steps[step],
             strerror(child_err[1]));
    goto fail;
  }
#ifdef SYS_pidfd_open
  r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
#endif
  ux_sb_argv_free(&argv);
  reg_add(r);
  return r;

oom:
  snprintf(err, errlen, "out of memory");
fail:
  close_fd(&out[0]); close_fd(&out[1]); close_fd(&errp[0]); close_fd(&errp[1]);
  close_fd(&st[0]); close_fd(&st[1]); close_fd(&ex[0]); close_fd(&ex[1]);
  close_fd(&info[0]); close_fd(&info[1]);
  close_fd(&pw); close_fd(&gr); close_fd(&devnull); close_fd(&code_fd);
  close_fd(&wtree); close_fd(&ctree);
  ux_sb_argv_free(&argv);
  run_free(r);
  return NULL;
}

ux_run *ux_run_start(const ux_run_spec *spec, char *err, size_t errlen) {
  const ux_lang *lang;
  if (check_spec(spec, &lang, err, errlen) != 0) return NULL;
  char *script = ux_sb_script(lang, spec);
  if (!script) { snprintf(err, errlen, "out of memory"); return NULL; }
  ux_run *r = start(spec, lang, script, err, errlen);
  free(script);
  return r;
}

/* ---------------------------------------------------------------------
** Wait
** ------------------------------------------------------------------- */

typedef struct outbuf {
  char *p; size_t len, cap, limit;
  int truncated, eof;
} outbuf;

/* Reads what is there; keeps up to `limit` bytes and discards the rest,
** so a chatty program never blocks on a full pipe. */
static void pump(ux_run *r, int channel, int *fd, outbuf *b) {
  char chunk[CHUNK];
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) { b->eof = 1; close_fd(fd); return; }
  if (r->on_output) r->on_output(r->output_ctx, channel, chunk, (size_t)n);
  size_t keep = b->limit - b->len < (size_t)n ? b->limit - b->len : (size_t)n;
  if (keep < (size_t)n) b->truncated = 1;
  if (keep == 0) return;
  if (b->len + keep + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + keep + 1) cap *= 2;
    if (cap > b->limit + 1) cap = b->limit + 1;
    char *p = realloc(b->p, cap);
    if (!p) { b->truncated = 1; return; }
    b->p = p; b->cap = cap;
  }
  memcpy(b->p + b->len, chunk, keep);
  b->len += keep;
}

/* ---------------------------------------------------------------------
** The run's pid namespace. bwrap's outer process (our child) clones the
** inner one into new user and pid namespaces, writes {"child-pid": N} to
** --info-fd and only then lets it go on: by the time the program runs,
** the waiter can know N. The inner process is the namespace's init;
** SIGKILL from an ancestor namespace always reaches it, and its death
** makes the kernel kill every other process of the namespace. A pidfd
** keeps the kill and the reap from ever hitting a reused pid.
** ------------------------------------------------------------------- */

/* 1 when /proc says `pid` is bwrap's inner process of run r: a child of
** its outer bwrap (or of this process, which inherits it as subreaper
** once the outer one exited) and pid 1 of a namespace of its own. */
static int is_inner(const ux_run *r, pid_t pid) {
  char buf[2048];
  if (ux_proc_status((long)pid, buf, sizeof buf) != 0) return 0;
  char *pp = strstr(buf, "\nPPid:"), *ns = strstr(buf, "\nNSpid:");
  long ppid;
  if (!pp || !ns || sscanf(pp + 6, "%ld", &ppid) != 1) return 0;
  if (ppid != (long)r->pid && ppid != (long)getpid()) return 0;
  char *eol = strchr(ns + 1, '\n');
  if (eol) *eol = '\0';
  char *last = strrchr(ns, '\t'), *first = strchr(ns, '\t');
  return last && first && last != first && strtol(last + 1, NULL, 10) == 1;
}

/* Pins the inner process named by the info: open a pidfd, check that it
** is the right process, then that it still is (not reaped since), so the
** check applied to the pidfd's process rather than to a successor. */
static void pin_inner(ux_run *r) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  int fd = (int)syscall(SYS_pidfd_open, r->inner, 0);
  if (fd < 0) return;
  if (is_inner(r, r->inner) && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0) {
    r->inner_fd = fd;
    return;
  }
  close(fd);
#endif
}

/* Reads what bwrap wrote to the info fd so far; pins the inner process
** once its pid is complete. */
static void read_info(ux_run *r) {
  while (r->info_fd >= 0) {
    size_t room = sizeof r->info - 1 - r->info_len;
    ssize_t n = room ? read(r->info_fd, r->info + r->info_len, room) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { close_fd(&r->info_fd); break; }
    r->info_len += (size_t)n;
  }
  r->info[r->info_len] = '\0';
  if (r->inner) return;
  const char *k = strstr(r->info, "\"child-pid\"");
  if (!k || !(k = strchr(k, ':'))) return;
  char *end;
  long pid = strtol(k + 1, &end, 10);
  if (end == k + 1 || pid <= 0 || pid > INT_MAX) return;
  if (*end == '\0' && r->info_fd >= 0) return;    /* more digits may follow */
  r->inner = (pid_t)pid;
  pin_inner(r);
}

/*
** Kills the run: its pid namespace, through the pinned inner process;
** the outer bwrap then reaps it and exits. Killing the outer one as well
** (`all`, the waiter's escalation after a second) is never needed then,
** but harmless: the inner one, orphaned, comes to this process (child
** subreaper), and ux_run_wait reaps it.
** Without a pinned inner process: a run alone on its slot uid still
** kills every process of the uid but the outer bwrap; one that shares
** its uid must not. It waits (the waiter calls again every 50 ms) for
** the info, which comes within milliseconds of the start (killing the
** outer bwrap between its clone and that write would strand the inner
** one, waiting forever for a go-ahead), and once there is none to wait
** for kills the outer bwrap, whose death takes the namespace along
** (--die-with-parent). Without a slot uid (not root) the process group
** is all there is.
*/
static void kill_tree(ux_run *r, int all) {
  read_info(r);
  if (r->inner_fd >= 0) ux_pidfd_kill(r->inner_fd);
  else if (r->slot >= 0 && !ux_slot_shared(r->slot)) ux_kill_uid(r->uid, r->pid);
  else if (r->slot < 0 || r->info_fd < 0) all = 1;
  if (all) { kill(-r->pid, SIGKILL); kill(r->pid, SIGKILL); }
}

/*
** After the outer bwrap was reaped: the namespace can outlive the
** program's main process (a program that left a background process
** behind), so the inner process is killed, then reaped once the kernel
** has emptied the namespace (it is our child by now, unless the outer
** bwrap reaped it already: ECHILD). Without a pinned inner process, a
** run alone on its slot sweeps the uid as before; one that shares it
** leaves any straggler to the sweep of the slot's last run.
*/
static void end_inner(ux_run *r) {
  read_info(r);
  if (r->inner_fd < 0) {
    if (r->slot >= 0 && !ux_slot_shared(r->slot)) ux_sweep_uid(r->uid);
    return;
  }
  ux_pidfd_kill(r->inner_fd);
  long long end = ux_now_ms() + SWEEP_MS;
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc = waitid((idtype_t)P_PIDFD, (id_t)r->inner_fd, &si, WEXITED | WNOHANG);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || si.si_pid != 0) break;        /* reaped, or not ours */
    long long left = end - ux_now_ms();
    if (left <= 0) break;                        /* the slot's sweep reaps it */
    struct pollfd pf = { r->inner_fd, POLLIN, 0 };
    if (poll(&pf, 1, left > 50 ? 50 : (int)left) < 0 && errno != EINTR) break;
  }
  close_fd(&r->inner_fd);
}

static char *finish_buf(outbuf *b) {
  if (!b->p && !(b->p = malloc(1))) return NULL;
  b->p[b->len] = '\0';
  return b->p;
}

void ux_run_wait(ux_run *r, ux_run_result *res) {
  memset(res, 0, sizeof *res);
  if (!r) { snprintf(res->error, sizeof res->error, "no run"); return; }
  outbuf ob = { .limit = r->cap }, eb = { .limit = r->cap };
  int status = 0, reaped = 0;
  long long killed = 0;       /* when the ttl or a cancel killed it */
  long long deadline = r->ttl_s > 0 ? r->t0_ms + (long long)r->ttl_s * 1000 : -1;
  long long drain_end = -1;

  for (;;) {
    if (!reaped) {
      pid_t w = waitpid(r->pid, &status, WNOHANG);
      if (w == r->pid || (w < 0 && errno == ECHILD)) {
        reaped = 1;
        res->elapsed_ms = (long)(ux_now_ms() - r->t0_ms);
        end_inner(r);                          /* stragglers, if any */
        if (r->slot < 0) { kill(-r->pid, SIGKILL); }
        drain_end = ux_now_ms() + DRAIN_MS;
        close_fd(&r->pidfd);
      }
    }
    if (reaped && (r->out_fd < 0 || ob.eof) && (r->err_fd < 0 || eb.eof)) break;

    long long now = ux_now_ms();
    if (reaped && now >= drain_end) break;
    if (!reaped && killed) /* new processes, then the outer bwrap too */
      kill_tree(r, now - killed > 1000);
    if (!reaped && !killed && deadline >= 0 && now >= deadline) {
      res->timed_out = 1; killed = now; kill_tree(r, 0);
    }
    struct pollfd pf[5];
    int np = 0, io = -1, ie = -1, ip = -1, ic = -1, ii = -1;
    if (r->out_fd >= 0) { io = np; pf[np++] = (struct pollfd){ r->out_fd, POLLIN, 0 }; }
    if (!reaped && r->info_fd >= 0) { ii = np; pf[np++] = (struct pollfd){ r->info_fd, POLLIN, 0 }; }
    if (r->err_fd >= 0) { ie = np; pf[np++] = (struct pollfd){ r->err_fd, POLLIN, 0 }; }
    if (r->pidfd >= 0) { ip = np; pf[np++] = (struct pollfd){ r->pidfd, POLLIN, 0 }; }
    if (!reaped && !killed) { ic = np; pf[np++] = (struct pollfd){ r->cancel_fd, POLLIN, 0 }; }

    long long wait = reaped ? drain_end - now : 1000;
    if (!reaped && !killed && deadline >= 0 && deadline - now < wait) wait = deadline - now;
    if (!reaped && r->pidfd < 0 && wait > 50) wait = 50;   /* no pidfd: tick */
    if (killed && wait > 50) wait = 50;
    if (wait < 0) wait = 0;
    int n = poll(pf, (nfds_t)np, (int)wait);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (io >= 0 && pf[io].revents) pump(r, 1, &r->out_fd, &ob);
    if (ie >= 0 && pf[ie].revents) pump(r, 2, &r->err_fd, &eb);
    if (ii >= 0 && pf[ii].revents) read_info(r);
    if (ic >= 0 && pf[ic].revents && atomic_load(&r->cancel)) {
      res->cancelled = 1; killed = ux_now_ms(); kill_tree(r, 0);
    }
    (void)ip;  /* a readable pidfd just ends the poll; waitpid above reaps */
  }
  if (!reaped) {  /* poll failed: never leave the sandbox behind */
    kill_tree(r, 1);
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {}
    res->elapsed_ms = (long)(ux_now_ms() - r->t0_ms);
    end_inner(r);
  }

  if (WIFEXITED(status)) res->exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) res->exit_code = 128 + WTERMSIG(status);

  char mark = 0;
  int started = read(r->started_fd, &mark, 1) == 1 && mark == 'x';
  if (!started && !res->timed_out && !res->cancelled) {
    /* bwrap itself failed: its message is the first line of stderr */
    if (eb.len) {
      const char *nl = memchr(eb.p, '\n', eb.len);
      int len = nl ? (int)(nl - eb.p) : (int)eb.len;
      snprintf(res->error, sizeof res->error, "sandbox failed to start: %.*s", len, eb.p);
    } else {
      snprintf(res->error, sizeof res->error,
               "sandbox failed to start (exit status %d)", res->exit_code);
    }
  }

  res->out = finish_buf(&ob); res->out_len = ob.len; res->out_truncated = ob.truncated;
  res->err = finish_buf(&eb); res->err_len = eb.len; res->err_truncated = eb.truncated;

  if (r->want_artifacts && r->work_fd >= 0) {
    ux_tree_list after = { 0 };
    ux_file *skip = NULL;
    if (r->n_inputs && (skip = calloc(r->n_inputs, sizeof *skip)))
      for (size_t i = 0; i < r->n_inputs; i++) skip[i].name = r->inputs[i];
    if (ux_tree_list_files(r->work_fd, &after) == 0)
      ux_tree_collect(r->work_fd, &r->before, &after, skip, skip ? r->n_inputs : 0,
                    &res->artifacts, &res->n_artifacts);
    free(skip);
    ux_tree_list_free(&after);
  }
  reg_remove(r);
  run_free(r);
}

void ux_run_result_free(ux_run_result *res) {
  if (!res) return;
  free(res->out); free(res->err);
  for (size_t i = 0; i < res->n_artifacts; i++) {
    free(res->artifacts[i].name);
    free(res->artifacts[i].data);
  }
  free(res->artifacts);
  res->out = res->err = NULL;
  res->artifacts = NULL;
  res->n_artifacts = 0;
}

/* ---------------------------------------------------------------------
** Start-up check
** ------------------------------------------------------------------- */

int ux_runner_check(char *err, size_t errlen) {
  if (access(BWRAP, X_OK) != 0) {
    snprintf(err, errlen, "bubblewrap not found at " BWRAP
             " (apt-get install bubblewrap)");
    return -1;
  }
  static const ux_lang probe = { "check", "/usr/bin/true", "check.sh", "" };
  ux_run_spec spec = { .language = "check", .ttl_s = 10, .vcpu = 1 };
  ux_run *r = start(&spec, &probe, "printf x >&3; exec 3>&-; echo ok", err, errlen);
  if (!r) return -1;
  ux_run_result res;
  ux_run_wait(r, &res);
  int good = !res.error[0] && res.exit_code == 0 && res.out_len >= 2 &&
             memcmp(res.out, "ok", 2) == 0;
  if (!good) {
    const char *why = res.error[0] ? res.error : "the trivial sandbox did not print ok";
    int userns = (res.err && (strstr(res.err, "namespace") || strstr(res.err, "uid map")));
    snprintf(err, errlen, "%s%s", why,
             userns ? " (user namespaces seem disabled: enable them with sysctl "
                      "kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0)"
                    : "");
  }
  ux_run_result_free(&res);
  return good ? 0 : -1;
}
