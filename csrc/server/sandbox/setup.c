/*
** A sandbox up to the moment its program may start (ux_sb_prepare): the
** private run directory (a scratch volume with code/ and work/), the
** slot, the cgroup, the child's fds and limits, bwrap started and, for a
** semitrusted run, slirp4netns attached to its network namespace. bwrap
** then waits on its --block-fd, with every namespace and mount done; the
** source and input files are placed, and the program let go, by
** runner.c (ux_sb_arm). A run that starts cold goes through both at
** once; the pool (pool.c) does this half ahead of time, so nothing but
** the arming is left when the code arrives. Either way the program sees
** the same sandbox: the command line, the mounts and the limits are made
** here from the same spec fields.
**
** What a prepared sandbox holds is its own and never reused: the run
** directory, the cgroup run-ID, the network namespace, the slot (a uid no
** other live run has), the fds.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "server/sandbox/run_object.h"
#include "server/sandbox/slots.h"
#include "server/sandbox/tree.h"
#include "server/sandbox/volume.h"

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

/* The run directory with its (empty) code directory, and the work
** directory: the spec's persistent one, or work/ of the run directory. */
static int prepare_dirs(ux_run *r, const ux_run_spec *spec, char *err, size_t errlen) {
  char base[PATH_MAX], tmpl[PATH_MAX + 32];
  ux_runner_tmpdir(base, sizeof base);
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
      (r->code_fd = open_dir_at(run_fd, "code")) < 0) {
    snprintf(err, errlen, "cannot create the code directory: %s", strerror(errno));
    if (run_fd >= 0) close(run_fd);
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

/* Takes the run's slot (as root) and hands it the work directory, the
** whole tree when the slot is new to it. */
static int take_slot(ux_run *r, const ux_run_spec *spec, char *err, size_t errlen) {
  if (!ux_privileged()) return 0;
  int prepare = 1;
  struct stat wd = { .st_dev = r->wd_dev, .st_ino = r->wd_ino };
  int persistent = spec->workdir || spec->workdir_fd > 0;
  if ((r->slot = ux_slot_take(persistent ? &wd : NULL, &prepare)) < 0) {
    snprintf(err, errlen, "too many concurrent runs (%d)", UX_SB_SLOTS);
    return -1;
  }
  r->uid = UX_SB_UID_BASE + (uid_t)r->slot;
  r->gid = UX_SB_UID_BASE + (gid_t)r->slot;
  if (!prepare) return 0;
  int rc = ux_tree_chown(r->work_fd, r->uid, r->gid);
  int e = errno;
  ux_slot_prepared(r->slot, rc == 0);
  if (rc == 0) return 0;
  snprintf(err, errlen, "cannot hand the work directory to the sandbox user: %s", strerror(e));
  return -1;
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
** The child's fds
** ------------------------------------------------------------------- */

/* Everything opened for one start; what the child needs is closed in
** the parent once it has started. */
typedef struct start_fds {
  int pw, gr, devnull, wtree, ctree, resolv;
  int etc[UX_SB_ETC_FILES];   /* ux_sb_etc_open */
  int out[2], err[2], ex[2], info[2], block[2];
  int ro[UX_SB_RO_BINDS], ro_dir[UX_SB_RO_BINDS];
} start_fds;

static void sf_init(start_fds *f) {
  memset(f, 0, sizeof *f);
  f->pw = f->gr = f->devnull = f->wtree = f->ctree = f->resolv = -1;
  int *pairs[] = { f->out, f->err, f->ex, f->info, f->block };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) pairs[i][0] = pairs[i][1] = -1;
  for (int i = 0; i < UX_SB_RO_BINDS; i++) f->ro[i] = -1;
  for (int i = 0; i < UX_SB_ETC_FILES; i++) f->etc[i] = -1;
}

static void sf_close(start_fds *f) {
  int *one[] = { &f->pw, &f->gr, &f->devnull, &f->wtree, &f->ctree, &f->resolv };
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) ux_close_fd(one[i]);
  int *pairs[] = { f->out, f->err, f->ex, f->info, f->block };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    ux_close_fd(&pairs[i][0]);
    ux_close_fd(&pairs[i][1]);
  }
  for (int i = 0; i < UX_SB_RO_BINDS; i++) ux_close_fd(&f->ro[i]);
  for (int i = 0; i < UX_SB_ETC_FILES; i++) ux_close_fd(&f->etc[i]);
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
      (spec->out_fd <= 0 && xpipe(f->out)) || xpipe(f->err) || xpipe(f->ex) ||
      xpipe(f->info) || xpipe(f->block) ||
      (f->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
      (spec->network && (f->resolv = data_pipe(UX_NET_RESOLV)) < 0) ||
      (r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    snprintf(err, errlen, "cannot set up the run: %s", strerror(errno));
    return -1;
  }
  if (ux_privileged() &&
      ((f->wtree = open_tree(r->work_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0 ||
       (f->ctree = open_tree(r->code_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0)) {
    snprintf(err, errlen, "cannot clone the work directory mount: %s", strerror(errno));
    return -1;
  }
  return open_ro_binds(spec, ux_privileged(), f->ro, f->ro_dir, err, errlen);
}

/* ---------------------------------------------------------------------
** The run object, its directories, slot and cgroup
** ------------------------------------------------------------------- */

static ux_run *new_run(const ux_run_spec *spec) {
  ux_run *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->out_fd = r->err_fd = r->pidfd = r->cancel_fd = -1;
  r->info_fd = r->inner_fd = r->block_fd = r->code_fd = r->sys_fd = -1;
  r->work_fd = r->base_fd = -1;
  r->slot = -1;
  r->uid = getuid(); r->gid = getgid();
  r->ttl_s = spec->ttl_s;
  r->cap = UX_SB_OUTPUT_CAP;
  ux_cg_run_init(&r->cg);
  ux_net_init(&r->net);
  r->id = ux_reg_next_id();
  return r;
}

/* Directories, slot, cgroup and fds of a new run. */
static int set_up(ux_run *r, const ux_run_spec *spec, int use_cg, unsigned long long mem,
                  start_fds *f, char *err, size_t errlen) {
  if (ux_privileged()) ux_become_subreaper();
  if (prepare_dirs(r, spec, err, errlen) != 0 || take_slot(r, spec, err, errlen) != 0)
    return -1;
  if (use_cg) {
    ux_cg_limits l = { mem, UX_SB_NPROC };
    if (ux_cg_run_create(ux_runner_cg(), r->id, &l, &r->cg, err, errlen) != 0) return -1;
    r->has_cg = 1;
    r->mem_mb = (long)(mem >> 20);
  }
  return open_fds(r, spec, f, err, errlen);
}

/* ---------------------------------------------------------------------
** The child's plan and its start
** ------------------------------------------------------------------- */

static void fill_fds(ux_child_plan *p, const ux_run *r, const ux_run_spec *spec,
                     const start_fds *f) {
  for (int i = 0; i < UX_FD_COUNT; i++) p->fds[i] = -1;
  p->fds[0] = spec->in_fd > 0 ? spec->in_fd : f->devnull;
  p->fds[1] = spec->out_fd > 0 ? spec->out_fd : f->out[1];
  p->fds[2] = f->err[1];
  p->fds[UX_FD_WORK] = f->wtree >= 0 ? f->wtree : r->work_fd;
  p->fds[UX_FD_CODE] = f->ctree >= 0 ? f->ctree : r->code_fd;
  p->fds[UX_FD_PASSWD] = f->pw;
  p->fds[UX_FD_GROUP] = f->gr;
  p->fds[UX_FD_EXECERR] = f->ex[1];
  p->fds[UX_FD_INFO] = f->info[1];
  p->fds[UX_FD_PASS] = spec->pass_fd > 0 ? spec->pass_fd : -1;
  p->fds[UX_FD_BLOCK] = f->block[0];
  p->fds[UX_FD_RESOLV] = f->resolv;
  p->n_ro = (int)spec->n_ro_binds;
  for (int i = 0; i < p->n_ro; i++) { p->fds[UX_FD_RO + i] = f->ro[i]; p->ro_dir[i] = f->ro_dir[i]; }
  for (int i = 0; i < UX_SB_ETC_FILES; i++) p->fds[UX_FD_ETC + i] = f->etc[i];
}

/* `cpu`: set RLIMIT_CPU from the spec's ttl now; else ux_sb_arm sets it
** on the sandbox once the ttl of the run that takes it is known. */
static void fill_plan(ux_child_plan *p, const ux_run *r, const ux_run_spec *spec,
                      const start_fds *f, unsigned long long mem, int cpu, char **argv) {
  memset(p, 0, sizeof *p);
  fill_fds(p, r, spec, f);
  if (r->has_cg) p->n_cg = ux_cg_run_join_fds(&r->cg, p->cg_fds);
  else {
    /* the fallback without a cgroup: per slot uid and per process */
    ux_plan_limit(p, RLIMIT_NPROC, UX_SB_NPROC, UX_SB_NPROC);
    ux_plan_limit(p, RLIMIT_DATA, mem, mem);
  }
  rlim_t fsize = spec->fsize ? (rlim_t)spec->fsize : UX_SB_FSIZE;
  ux_plan_limit(p, RLIMIT_FSIZE, fsize, fsize);
  ux_plan_limit(p, RLIMIT_CORE, 0, 0);
  ux_plan_limit(p, RLIMIT_NOFILE, UX_SB_NOFILE, UX_SB_NOFILE);
  ux_plan_limit(p, RLIMIT_MEMLOCK, 0, 0);
  if (cpu && spec->ttl_s > 0) {
    struct rlimit l;
    ux_sb_cpu_limit(spec->ttl_s, &l);
    ux_plan_limit(p, RLIMIT_CPU, l.rlim_cur, l.rlim_max);
  }
  p->drop = r->slot >= 0;
  p->mount = ux_privileged();
  p->mntns = p->mount ? ux_child_mntns() : -1;
  p->devpts = p->mount && ux_child_dev() != NULL;
  p->uid = r->uid; p->gid = r->gid;
  p->parent = getpid();
  p->argv = argv;
}

/* Starts the child and learns whether bwrap was exec'd. 0 or -1 with err. */
static int spawn(ux_run *r, const ux_child_plan *plan, start_fds *f, char *err, size_t errlen) {
  r->t0_ms = ux_now_ms();
  r->pid = ux_spawn_bwrap(plan, &r->pidfd);
  if (r->pid < 0) {
    r->pid = 0;
    snprintf(err, errlen, "cannot start the sandbox: %s", strerror(errno));
    return -1;
  }
  /* the child's ends, and what it alone needed */
  int *mine[] = { &f->out[1], &f->err[1], &f->ex[1], &f->info[1], &f->pw, &f->gr,
                  &f->devnull, &f->wtree, &f->ctree, &f->block[0], &f->resolv };
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) ux_close_fd(mine[i]);
  for (int i = 0; i < UX_SB_RO_BINDS; i++) ux_close_fd(&f->ro[i]);
  r->out_fd = f->out[0]; r->err_fd = f->err[0]; r->info_fd = f->info[0];
  r->block_fd = f->block[1];
  f->out[0] = f->err[0] = f->info[0] = f->block[1] = -1;
  int *nb[] = { &r->out_fd, &r->info_fd, &r->err_fd };
  for (size_t i = 0; i < sizeof nb / sizeof nb[0]; i++)
    if (*nb[i] >= 0) fcntl(*nb[i], F_SETFL, O_NONBLOCK);

  /* the child has exec'd or exited by now (it shared our memory until
  ** then): its error record, or EOF */
  int child_err[2] = { 0, 0 };
  ssize_t n;
  do n = read(f->ex[0], child_err, sizeof child_err); while (n < 0 && errno == EINTR);
  ux_close_fd(&f->ex[0]);
  if (n <= 0) return 0;
  int status;
  while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {}
  r->pid = 0;
  ux_close_fd(&r->pidfd);
  snprintf(err, errlen, "cannot start the sandbox: %s: %s", ux_spawn_step(child_err[0]),
           strerror(child_err[1]));
  return -1;
}

/* Waits (bounded by `end`) until bwrap names its inner process and the
** waiter can pin it. 1 when bwrap died first, 0 pinned, -1 timeout. */
static int await_inner(ux_run *r, long long end) {
  while (r->inner_fd < 0 && r->info_fd >= 0) {
    long long left = end - ux_now_ms();
    if (left <= 0) break;
    struct pollfd pf = { r->info_fd, POLLIN, 0 };
    if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) break;
    ux_read_info(r);
  }
  if (r->inner_fd >= 0) return 0;
  return r->info_fd < 0 ? 1 : -1;
}

/*
** A semitrusted run: once bwrap names its inner process (within
** milliseconds), slirp4netns is attached to that process's network
** namespace; the program is let go (ux_sb_arm) only once the tap device
** is up. 1 when bwrap died before naming it (ux_run_wait then reports
** bwrap's own error), 0 when the network is up, -1 with err.
*/
static int net_up(ux_run *r, char *err, size_t errlen) {
  long long end = ux_now_ms() + UX_SB_NET_MS;
  int rc = await_inner(r, end);
  if (rc > 0) return 1;
  if (rc < 0) {
    snprintf(err, errlen, "the sandbox did not start within %d ms", UX_SB_NET_MS);
    return -1;
  }
  int cg[UX_CG_NDIR];
  ux_net_how how = { r->inner, r->inner_fd, cg, r->has_cg ? ux_cg_run_join_fds(&r->cg, cg) : 0,
                     r->slot >= 0, r->uid, r->gid, (int)(end - ux_now_ms()) };
  if (how.timeout_ms < 100) how.timeout_ms = 100;
  return ux_net_start(&r->net, &how, err, errlen) != 0 ? -1 : 0;
}

/* Ends a sandbox that started but must not go on. */
void ux_sb_abandon(ux_run *r) {
  ux_kill_tree(r, 1);
  ux_run_result res;
  ux_run_wait(r, &res);                  /* reaps everything, frees r */
  ux_run_result_free(&res);
}

ux_run *ux_sb_prepare(const ux_run_spec *spec, const ux_lang *lang, const char *script,
                      int flags, char *err, size_t errlen) {
  int pooled = (flags & UX_SB_POOLED) != 0;
  int use_cg = ux_privileged() && ux_runner_cg()->version != UX_CG_NONE;
  unsigned long long mem = ux_run_memory_bytes(spec->vcpu);
  /* the /etc files first: the command line copies those that exist */
  start_fds f;
  sf_init(&f);
  ux_sb_etc_open(spec, f.etc);
  ux_sb_plan sp = { ux_privileged(), lang, script, use_cg ? (unsigned long)mem : UX_SB_TMP_SIZE,
                    use_cg ? (unsigned long)mem : UX_SB_SHM_SIZE, (flags & UX_SB_BROKEN) != 0,
                    f.etc, ux_privileged() ? ux_child_dev() : NULL };
  ux_argv argv = { 0 };
  ux_run *r = NULL;
  if (ux_sb_build_argv(&argv, spec, &sp, err, errlen) != 0) goto fail;
  if (!(r = new_run(spec))) { snprintf(err, errlen, "out of memory"); goto fail; }
  r->lang = lang;
  r->pooled = pooled;
  ux_child_plan plan;
  if (set_up(r, spec, use_cg, mem, &f, err, errlen) != 0) goto fail;
  fill_plan(&plan, r, spec, &f, mem, !pooled, argv.v);
  if (spawn(r, &plan, &f, err, errlen) != 0) goto fail;
  ux_sb_argv_free(&argv);
  sf_close(&f);
  if (spec->network && net_up(r, err, errlen) < 0) {
    ux_sb_abandon(r);
    return NULL;
  }
  return r;
fail:
  sf_close(&f);
  ux_sb_argv_free(&argv);
  if (r) ux_run_free(r);
  return NULL;
}

/* ---------------------------------------------------------------------
** Readiness of a pre-started sandbox
** ------------------------------------------------------------------- */

/* 1 when the outer bwrap (our child) has exited. */
static int outer_gone(const ux_run *r) {
  if (r->pidfd < 0) return kill(r->pid, 0) != 0;
  struct pollfd pf = { r->pidfd, POLLIN, 0 };
  return poll(&pf, 1, 0) > 0;
}

/*
** bwrap reads its --block-fd after its whole set-up (namespaces, mounts,
** the pivot, the dropped capabilities) and before it forks the program:
** the inner process blocked in read(UX_FD_BLOCK) is a sandbox that can
** no longer fail to start for its own reasons. /proc/PID/syscall shows
** the syscall a blocked process is in and its arguments. The file is
** opened once the inner process is pinned, and read again from offset 0
** at each look: one pread, which fails once that process is gone (a
** /proc file stays bound to its process, whatever its pid becomes). A
** kernel without that file is trusted once the inner process is pinned
** (a set-up failure then surfaces as the run's "sandbox failed to
** start").
*/
int ux_sb_ready(ux_run *r) {
  /* the info pipe is read to its end, so that a poll on it (the cold
  ** start's wait) never wakes for an EOF left unread */
  if (r->info_fd >= 0) ux_read_info(r);
  if (r->inner_fd < 0) {
    if (!r->pid || outer_gone(r)) return -1;
    return r->info_fd < 0 ? -1 : 0;
  }
  if (r->sys_fd < 0) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/syscall", (long)r->inner);
    if ((r->sys_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
      return errno == ENOENT && ux_pidfd_alive(r->inner_fd) ? 1 : -1;
    /* the pidfd, checked after the open, proves the pid was still its */
    if (!ux_pidfd_alive(r->inner_fd)) return -1;
  }
  char buf[256];
  ssize_t n = pread(r->sys_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  /* "NR 0xARG0 ...": in read(2) on the block fd */
  char *end;
  long nr = strtol(buf, &end, 10);
  if (end == buf || nr != SYS_read || strncmp(end, " 0x", 3) != 0) return 0;
  if (strtoul(end + 3, NULL, 16) != UX_FD_BLOCK) return 0;
  ux_close_fd(&r->sys_fd);
  return 1;
}

int ux_sb_alive(ux_run *r) {
  return r->pid && !outer_gone(r) && r->inner_fd >= 0 && ux_pidfd_alive(r->inner_fd);
}

/* Why a sandbox died before its release: the first line bwrap wrote to
** stderr (all it writes before the program runs), or its exit. */
void ux_sb_start_error(ux_run *r, char *err, size_t errlen) {
  char buf[512];
  size_t len = 0;
  ssize_t n;
  while (r->err_fd >= 0 && len < sizeof buf - 1 &&
         (n = read(r->err_fd, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
  buf[len] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  if (buf[0]) snprintf(err, errlen, "sandbox failed to start: %s", buf);
  else snprintf(err, errlen, "sandbox failed to start (bwrap exited during its set-up)");
}

int ux_sb_await_ready(ux_run *r, char *err, size_t errlen) {
  long long end = ux_now_ms() + UX_SB_NET_MS;
  /* bwrap's set-up takes a few milliseconds: look once after two, then
  ** every half millisecond (each look is a pread of a /proc file) */
  struct timespec nap = { 0, 2000 * 1000L };
  for (;;) {
    int rc = ux_sb_ready(r);
    if (rc > 0) return 0;
    if (rc < 0) { ux_sb_start_error(r, err, errlen); return -1; }
    if (ux_now_ms() >= end) {
      snprintf(err, errlen, "the sandbox did not start within %d ms", UX_SB_NET_MS);
      return -1;
    }
    /* bwrap's exit or its info wakes this at once */
    struct pollfd pf[2];
    nfds_t n = 0;
    if (r->pidfd >= 0) pf[n++] = (struct pollfd){ r->pidfd, POLLIN, 0 };
    if (r->info_fd >= 0) pf[n++] = (struct pollfd){ r->info_fd, POLLIN, 0 };
    if (ppoll(pf, n, &nap, NULL) < 0 && errno != EINTR) {
      snprintf(err, errlen, "cannot wait for the sandbox: %s", strerror(errno));
      return -1;
    }
    nap.tv_nsec = 500 * 1000L;
  }
}
