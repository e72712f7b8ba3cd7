/*
** The sandbox runner: one program under bubblewrap, as an unprivileged
** per-slot uid, in a cgroup of its own, with a wall-clock ttl and capped
** output. This file: the spec checks, the set-up and the start; the
** choice of limits is isolation.c,
** waiter wait.c, the forked child spawn.c, slirp4netns net.c, the
** cgroups cgroup*.c, freeze and kill by work directory workgroup.c.
**
** Life of a run (ux_run_start, then ux_run_wait on the same thread):
**   1. check the spec (language or argv, file names, env, fds, mount
**      points) before touching disk;
**   2. make a private run directory (0700, root): code/ holds the source,
**      work/ the work directory unless the spec brings a persistent one;
**   3. take a slot: uid/gid UX_SB_UID_BASE + slot, so whatever the slot's
**      runs left can be found and killed by uid once the last of them has
**      ended; the run that takes a slot chowns the work directory and its
**      whole tree to the slot uid, then the input files are placed;
**   4. make the run's cgroup (memory = vcpu x 1 GiB for all its processes
**      together, tmpfs pages included; pids); without a usable cgroup
**      hierarchy, rlimits (RLIMIT_DATA, RLIMIT_NPROC) are the fallback;
**   5. fork; the child joins the cgroup, becomes a session leader, sets
**      the fds and rlimits, drops to the slot uid and execs bwrap; for a
**      semitrusted run, slirp4netns is attached to the run's network
**      namespace before bwrap lets the program start (--block-fd);
**   6. the waiter polls stdout, stderr, bwrap's --info-fd, a pidfd of the
**      child, the cgroup's out-of-memory signal and a cancel eventfd until
**      the child is reaped. The info
**      names bwrap's inner process, the init of the run's own pid
**      namespace, which the waiter pins with a pidfd. The ttl or a cancel
**      SIGKILL that init: the kernel then kills every process of the
**      namespace, and the outer bwrap sees its child die and exits (137);
**   7. once the outer bwrap is reaped the inner init is killed as well (a
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
** its ttl). Hence step 6: each run has its own pid namespace, and killing
** its init kills exactly that run, race-free through the pidfd (and its
** cgroup, which holds exactly that run). The sharers are otherwise as
** apart as any two runs (separate pid, ipc, network and user namespaces,
** separate cgroups); they share their files, which they share anyway.
** Should the inner process not be
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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"
#include "server/sandbox/slots.h"
#include "server/mem.h"

/* ---------------------------------------------------------------------
** Process-wide state: the registry of live runs (for ux_run_cancel_id
** and workgroup.c) and the directory for run directories, under one
** mutex; the slot table (slots.c) and the limits in force (below) have
** their own.
** ------------------------------------------------------------------- */

pthread_mutex_t ux_reg_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t ux_reg_idle = PTHREAD_COND_INITIALIZER;

static struct {
  struct ux_run *head;
  unsigned long long next_id;
  char tmpdir[PATH_MAX];
} reg = { NULL, 1, "" };

int ux_privileged(void) { return geteuid() == 0; }

void ux_close_fd(int *fd) { if (*fd >= 0) { close(*fd); *fd = -1; } }

ux_run *ux_reg_first(void) { return reg.head; }

void ux_runner_set_tmpdir(const char *dir) {
  pthread_mutex_lock(&ux_reg_lock);
  snprintf(reg.tmpdir, sizeof reg.tmpdir, "%s", dir ? dir : "");
  pthread_mutex_unlock(&ux_reg_lock);
}

static void reg_add(ux_run *r) {
  pthread_mutex_lock(&ux_reg_lock);
  r->next = reg.head;
  reg.head = r;
  pthread_mutex_unlock(&ux_reg_lock);
}

/* Unlinks r once no workgroup operation uses it (they are bounded). */
static void reg_remove(ux_run *r) {
  pthread_mutex_lock(&ux_reg_lock);
  while (r->busy > 0) pthread_cond_wait(&ux_reg_idle, &ux_reg_lock);
  for (ux_run **p = &reg.head; *p; p = &(*p)->next)
    if (*p == r) { *p = r->next; break; }
  pthread_mutex_unlock(&ux_reg_lock);
}

void ux_run_unregister(ux_run *r) { reg_remove(r); }

static void request_cancel(ux_run *r) {
  uint64_t one = 1;
  atomic_store(&r->cancel, 1);
  if (write(r->cancel_fd, &one, sizeof one) < 0) { /* already signalled */ }
}

int ux_run_cancel_id(unsigned long long id) {
  int found = 0;
  pthread_mutex_lock(&ux_reg_lock);
  for (ux_run *r = reg.head; r; r = r->next)
    if (r->id == id) { request_cancel(r); found = 1; break; }
  pthread_mutex_unlock(&ux_reg_lock);
  return found;
}

unsigned long long ux_run_id(const ux_run *run) { return run ? run->id : 0; }

void ux_run_cancel(ux_run *run) {
  if (!run) return;
  /* only a registered run is touched, so a cancel racing with the end
  ** of ux_run_wait does nothing rather than write to freed memory */
  pthread_mutex_lock(&ux_reg_lock);
  for (ux_run *r = reg.head; r; r = r->next)
    if (r == run) { request_cancel(r); break; }
  pthread_mutex_unlock(&ux_reg_lock);
}

/* ---------------------------------------------------------------------
** Set-up
** ------------------------------------------------------------------- */

static int xpipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

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

static int open_dir_at(int at, const char *path) {
  return openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The run directory, the source file (for a language) and the work
** directory. */
static int prepare_dirs(ux_run *r, const ux_run_spec *spec, const ux_lang *lang,
                        int *code_fd, char *err, size_t errlen) {
  char base[PATH_MAX], tmpl[PATH_MAX + 32];
  pthread_mutex_lock(&ux_reg_lock);
  snprintf(base, sizeof base, "%s", reg.tmpdir[0] ? reg.tmpdir : "/tmp");
  pthread_mutex_unlock(&ux_reg_lock);
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
  if (lang && ux_tree_place_file(*code_fd, lang->file, spec->code ? spec->code : "",
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
  struct stat wd;
  if (r->work_fd < 0 || fstat(r->work_fd, &wd) != 0) {
    snprintf(err, errlen, "cannot open the work directory: %s", strerror(errno));
    return -1;
  }
  r->wd_dev = wd.st_dev;
  r->wd_ino = wd.st_ino;
  return 0;
}

/* Takes the run's slot (as root) and hands it the work directory: the
** whole tree when the slot is new to it, then the input files. */
static int take_slot(ux_run *r, const ux_run_spec *spec, char *err, size_t errlen) {
  int prepare = 1;
  if (ux_privileged()) {
    struct stat wd = { .st_dev = r->wd_dev, .st_ino = r->wd_ino };
    int persistent = spec->workdir || spec->workdir_fd > 0;
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
  *lang = NULL;
  if (!spec->argv && !(*lang = ux_sb_lang(spec->language))) {
    snprintf(err, errlen, "unsupported language '%.100s'",
             spec->language ? spec->language : "(null)");
    return -1;
  }
  if (spec->ttl_s < 0) { snprintf(err, errlen, "negative ttl"); return -1; }
  for (size_t i = 0; i < spec->n_files; i++)
    if (ux_tree_check_name(spec->files[i].name, err, errlen) != 0) return -1;
  return ux_sb_check_spec_io(spec, err, errlen);
}

/* Detached clones of the read-only bind sources (as the work and code
** directories are handed over: see spawn.c), or, unprivileged, the
** sources themselves for --ro-bind-fd. */
static int open_ro_binds(const ux_run_spec *spec, int mounted, int *fds, int *is_dir,
                         char *err, size_t errlen) {
  for (size_t i = 0; i < spec->n_ro_binds; i++) {
    const ux_ro_bind *b = &spec->ro_binds[i];
    int src = b->fd > 0 ? b->fd : open(b->src, O_PATH | O_CLOEXEC);
    struct stat st;
    if (src < 0 || fstat(src, &st) != 0) {
      snprintf(err, errlen, "cannot open the source of ro bind %zu: %s", i, strerror(errno));
      return -1;
    }
    is_dir[i] = S_ISDIR(st.st_mode);
    fds[i] = mounted ? open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)
                     : fcntl(src, F_DUPFD_CLOEXEC, 0);
    int e = errno;
    if (src != b->fd) close(src);
    if (fds[i] < 0) {
      snprintf(err, errlen, "cannot clone ro bind %zu: %s", i, strerror(e));
      return -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------------
** Start
** ------------------------------------------------------------------- */

/* Everything opened for one start; what the child needs is closed in
** the parent once it has forked. */
typedef struct start_fds {
  int code, pw, gr, devnull, wtree, ctree, resolv;
  int out[2], err[2], st[2], ex[2], info[2], block[2];
  int ro[UX_SB_RO_BINDS], ro_dir[UX_SB_RO_BINDS];
} start_fds;

static void sf_init(start_fds *f) {
  memset(f, 0, sizeof *f);
  f->code = f->pw = f->gr = f->devnull = f->wtree = f->ctree = f->resolv = -1;
  int *pairs[] = { f->out, f->err, f->st, f->ex, f->info, f->block };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) pairs[i][0] = pairs[i][1] = -1;
  for (int i = 0; i < UX_SB_RO_BINDS; i++) f->ro[i] = -1;
}

static void sf_close(start_fds *f) {
  int *one[] = { &f->code, &f->pw, &f->gr, &f->devnull, &f->wtree, &f->ctree, &f->resolv };
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) ux_close_fd(one[i]);
  int *pairs[] = { f->out, f->err, f->st, f->ex, f->info, f->block };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    ux_close_fd(&pairs[i][0]);
    ux_close_fd(&pairs[i][1]);
  }
  for (int i = 0; i < UX_SB_RO_BINDS; i++) ux_close_fd(&f->ro[i]);
}

static ux_run *new_run(const ux_run_spec *spec) {
  ux_run *r = ux_xcalloc(1, sizeof *r);
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
  ux_cg_run_init(&r->cg);
  ux_net_init(&r->net);
  pthread_mutex_lock(&ux_reg_lock);
  r->id = reg.next_id++;
  pthread_mutex_unlock(&ux_reg_lock);
  return r;
}

/* The pipes and fds of the child; 0 or -1 with err. */
static int open_fds(ux_run *r, const ux_run_spec *spec, start_fds *f, char *err, size_t errlen) {
  char passwd[512], group[256];
  snprintf(passwd, sizeof passwd,
           "root:x:0:0:root:/root:/bin/sh\n"
           "sandbox:x:%u:%u:sandbox:%s:/bin/sh\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
           UX_SB_INNER_ID, UX_SB_INNER_ID, ux_sb_work_mount(spec));
  snprintf(group, sizeof group, "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", UX_SB_INNER_ID);
  if ((f->pw = data_pipe(passwd)) < 0 || (f->gr = data_pipe(group)) < 0 ||
      (spec->out_fd <= 0 && xpipe(f->out)) || xpipe(f->err) || xpipe(f->st) || xpipe(f->ex) ||
      xpipe(f->info) || (f->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
      (spec->network && (xpipe(f->block) || (f->resolv = data_pipe(UX_NET_RESOLV)) < 0)) ||
      (r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    snprintf(err, errlen, "cannot set up the run: %s", strerror(errno));
    return -1;
  }
  if (ux_privileged() &&
      ((f->wtree = open_tree(r->work_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0 ||
       (f->ctree = open_tree(f->code, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0)) {
    snprintf(err, errlen, "cannot clone the work directory mount: %s", strerror(errno));
    return -1;
  }
  return open_ro_binds(spec, ux_privileged(), f->ro, f->ro_dir, err, errlen);
}

/* Directories, slot, cgroup and fds of a new run. */
static int set_up(ux_run *r, const ux_run_spec *spec, const ux_lang *lang, int use_cg,
                  unsigned long long mem, start_fds *f, char *err, size_t errlen) {
  if (ux_privileged()) ux_become_subreaper();
  if (spec->n_files) {
    r->inputs = ux_xcalloc(spec->n_files, sizeof *r->inputs);
    for (; r->n_inputs < spec->n_files; r->n_inputs++)
      r->inputs[r->n_inputs] = ux_xstrdup(spec->files[r->n_inputs].name);
  }
  if (prepare_dirs(r, spec, lang, &f->code, err, errlen) != 0 ||
      take_slot(r, spec, err, errlen) != 0) return -1;
  if (r->want_artifacts) ux_tree_list_files(r->work_fd, &r->before);
  if (use_cg) {
    ux_cg_limits l = { mem, UX_SB_NPROC };
    if (ux_cg_run_create(ux_runner_cg(), r->id, &l, &r->cg, err, errlen) != 0) return -1;
    r->has_cg = 1;
    r->mem_mb = (long)(mem >> 20);
  }
  return open_fds(r, spec, f, err, errlen);
}

static void fill_plan(ux_child_plan *p, const ux_run *r, const ux_run_spec *spec,
                      const start_fds *f, unsigned long long mem, char **argv) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < UX_FD_COUNT; i++) p->fds[i] = -1;
  p->fds[0] = spec->in_fd > 0 ? spec->in_fd : f->devnull;
  p->fds[1] = spec->out_fd > 0 ? spec->out_fd : f->out[1];
  p->fds[2] = f->err[1];
  p->fds[UX_FD_STARTED] = f->st[1];
  p->fds[UX_FD_WORK] = f->wtree >= 0 ? f->wtree : r->work_fd;
  p->fds[UX_FD_CODE] = f->ctree >= 0 ? f->ctree : f->code;
  p->fds[UX_FD_PASSWD] = f->pw;
  p->fds[UX_FD_GROUP] = f->gr;
  p->fds[UX_FD_EXECERR] = f->ex[1];
  p->fds[UX_FD_INFO] = f->info[1];
  p->fds[UX_FD_PASS] = spec->pass_fd > 0 ? spec->pass_fd : -1;
  p->fds[UX_FD_BLOCK] = f->block[0];
  p->fds[UX_FD_RESOLV] = f->resolv;
  p->n_ro = (int)spec->n_ro_binds;
  for (int i = 0; i < p->n_ro; i++) { p->fds[UX_FD_RO + i] = f->ro[i]; p->ro_dir[i] = f->ro_dir[i]; }
  if (r->has_cg) p->n_cg = ux_cg_run_join_fds(&r->cg, p->cg_fds);
  else {
    /* the fallback without a cgroup: per slot uid and per process */
    ux_plan_limit(p, RLIMIT_NPROC, UX_SB_NPROC, UX_SB_NPROC);
    ux_plan_limit(p, RLIMIT_DATA, mem, mem);
  }
  ux_plan_limit(p, RLIMIT_FSIZE, UX_SB_FSIZE, UX_SB_FSIZE);
  ux_plan_limit(p, RLIMIT_CORE, 0, 0);
  ux_plan_limit(p, RLIMIT_NOFILE, UX_SB_NOFILE, UX_SB_NOFILE);
  ux_plan_limit(p, RLIMIT_MEMLOCK, 0, 0);
  /* CPU time: a backstop behind the wall clock, so it must never fire
  ** first, even for a program that keeps every core busy */
  if (spec->ttl_s > 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rlim_t cpu = (rlim_t)spec->ttl_s * (rlim_t)(cpus > 0 ? cpus : 1) + UX_SB_CPU_SLACK;
    ux_plan_limit(p, RLIMIT_CPU, cpu, cpu + UX_SB_CPU_SLACK);
  }
  p->drop = r->slot >= 0;
  p->mount = ux_privileged();
  p->uid = r->uid; p->gid = r->gid;
  p->parent = getpid();
  p->argv = argv;
}

/* Forks the child and learns whether bwrap was exec'd. 0 or -1 with err. */
static int spawn(ux_run *r, const ux_child_plan *plan, start_fds *f, char *err, size_t errlen) {
  r->t0_ms = ux_now_ms();
  r->pid = fork();
  if (r->pid < 0) {
    snprintf(err, errlen, "cannot fork: %s", strerror(errno));
    return -1;
  }
  if (r->pid == 0) ux_spawn_child(plan);
  /* the child's ends, and what it alone needed */
  int *mine[] = { &f->out[1], &f->err[1], &f->st[1], &f->ex[1], &f->info[1], &f->pw, &f->gr,
                  &f->devnull, &f->code, &f->wtree, &f->ctree, &f->block[0], &f->resolv };
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) ux_close_fd(mine[i]);
  for (int i = 0; i < UX_SB_RO_BINDS; i++) ux_close_fd(&f->ro[i]);
  r->out_fd = f->out[0]; r->err_fd = f->err[0]; r->started_fd = f->st[0]; r->info_fd = f->info[0];
  f->out[0] = f->err[0] = f->st[0] = f->info[0] = -1;
  int *nb[] = { &r->out_fd, &r->info_fd, &r->err_fd, &r->started_fd };
  for (size_t i = 0; i < sizeof nb / sizeof nb[0]; i++)
    if (*nb[i] >= 0) fcntl(*nb[i], F_SETFL, O_NONBLOCK);

  int child_err[2] = { 0, 0 };
  ssize_t n;
  do n = read(f->ex[0], child_err, sizeof child_err); while (n < 0 && errno == EINTR);
  ux_close_fd(&f->ex[0]);
  if (n > 0) {
    int status;
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {}
    r->pid = 0;
    snprintf(err, errlen, "cannot start the sandbox: %s: %s", ux_spawn_step(child_err[0]),
             strerror(child_err[1]));
    return -1;
  }
#ifdef SYS_pidfd_open
  r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
#endif
  return 0;
}

/*
** A semitrusted run: once bwrap names its inner process (within
** milliseconds), slirp4netns is attached to that process's network
** namespace and, once the tap device is up, bwrap is let go (--block-fd).
** 1 when bwrap died before naming it (ux_run_wait then reports bwrap's
** own error), 0 when the network is up, -1 with err.
*/
static int net_up(ux_run *r, start_fds *f, char *err, size_t errlen) {
  long long end = ux_now_ms() + UX_SB_NET_MS;
  while (r->inner_fd < 0 && r->info_fd >= 0) {
    long long left = end - ux_now_ms();
    if (left <= 0) break;
    struct pollfd pf = { r->info_fd, POLLIN, 0 };
    if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) break;
    ux_read_info(r);
  }
  if (r->inner_fd < 0) {
    if (r->info_fd < 0) return 1;
    snprintf(err, errlen, "the sandbox did not start within %d ms", UX_SB_NET_MS);
    return -1;
  }
  int cg[UX_CG_NDIR];
  ux_net_how how = { r->inner, r->inner_fd, cg, r->has_cg ? ux_cg_run_join_fds(&r->cg, cg) : 0,
                     r->slot >= 0, r->uid, r->gid, (int)(end - ux_now_ms()) };
  if (how.timeout_ms < 100) how.timeout_ms = 100;
  if (ux_net_start(&r->net, &how, err, errlen) != 0) return -1;
  if (write(f->block[1], "x", 1) != 1) {
    snprintf(err, errlen, "cannot release the sandbox: %s", strerror(errno));
    return -1;
  }
  ux_close_fd(&f->block[1]);
  return 0;
}

/* Ends a run that started but must not go on (its network failed). */
static void abandon(ux_run *r) {
  ux_kill_tree(r, 1);
  ux_run_result res;
  ux_run_wait(r, &res);                  /* reaps everything, frees r */
  ux_run_result_free(&res);
}

/* Starts `spec`: `lang` and `script` for a language, or NULL for argv. */
static ux_run *start(const ux_run_spec *spec, const ux_lang *lang, const char *script,
                     char *err, size_t errlen) {
  int use_cg = ux_privileged() && ux_runner_cg()->version != UX_CG_NONE;
  int vcpu = spec->vcpu < 1 ? 1 : spec->vcpu > 8 ? 8 : spec->vcpu;
  unsigned long long mem = (unsigned long long)UX_SB_MEM_PER_VCPU * (unsigned)vcpu;
  ux_sb_plan sp = { ux_privileged(), lang, script, use_cg ? (unsigned long)mem : UX_SB_TMP_SIZE,
                    use_cg ? (unsigned long)mem : UX_SB_SHM_SIZE };
  ux_argv argv = { 0 };
  if (ux_sb_build_argv(&argv, spec, &sp, err, errlen) != 0) {
    ux_sb_argv_free(&argv);
    return NULL;
  }
  ux_run *r = new_run(spec);
  start_fds f;
  sf_init(&f);
  ux_child_plan plan;
  if (set_up(r, spec, lang, use_cg, mem, &f, err, errlen) != 0) goto fail;
  fill_plan(&plan, r, spec, &f, mem, argv.v);
  if (spawn(r, &plan, &f, err, errlen) != 0) goto fail;
  ux_sb_argv_free(&argv);
  if (spec->network && net_up(r, &f, err, errlen) < 0) {
    abandon(r);
    sf_close(&f);
    return NULL;
  }
  sf_close(&f);
  reg_add(r);
  return r;
fail:
  sf_close(&f);
  ux_sb_argv_free(&argv);
  ux_run_free(r);
  return NULL;
}

ux_run *ux_run_start(const ux_run_spec *spec, char *err, size_t errlen) {
  const ux_lang *lang;
  if (check_spec(spec, &lang, err, errlen) != 0) return NULL;
  char *script = NULL;
  if (lang && !(script = ux_sb_script(lang, spec))) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  ux_run *r = start(spec, lang, script, err, errlen);
  free(script);
  return r;
}

/* ---------------------------------------------------------------------
** Start-up check
** ------------------------------------------------------------------- */

int ux_runner_check(char *err, size_t errlen) {
  if (access(UX_SB_BWRAP, X_OK) != 0) {
    snprintf(err, errlen, "bubblewrap not found at " UX_SB_BWRAP
             " (apt-get install bubblewrap)");
    return -1;
  }
  static const ux_lang probe = { "check", "/usr/bin/true", "check.sh", "", NULL };
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
