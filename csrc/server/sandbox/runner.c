/*
** The sandbox runner: one program under bubblewrap, as an unprivileged
** per-slot uid, in a cgroup of its own, with a wall-clock ttl and capped
** output. This file: the spec checks, the arming and the start; the
** sandbox up to its release is setup.c, sandboxes prepared ahead pool.c,
** the choice of limits isolation.c, the waiter wait.c, the children
** spawn.c, slirp4netns net.c, the cgroups cgroup*.c, freeze and kill by
** work directory workgroup.c.
**
** Life of a run (ux_run_start, then ux_run_wait):
**   1. check the spec (language or argv, file names, env, fds, mount
**      points) before touching disk;
**   2. take a sandbox prepared ahead for the spec's shape from the pool
**      (pool.c), or prepare one now (setup.c): a private run directory
**      (a scratch volume, root 0700) whose code/ will hold the source and
**      whose work/ is the work directory unless the spec brings a
**      persistent one; a slot, uid/gid UX_SB_UID_BASE + slot (the run
**      that takes a slot chowns the work directory and its whole tree to
**      it); the run's cgroup (memory = vcpu x 1 GiB for all its
**      processes together, tmpfs pages included; pids), or rlimits
**      (RLIMIT_DATA, RLIMIT_NPROC) without a usable hierarchy; bwrap
**      started (the child joins the cgroup, becomes a session leader,
**      sets the fds and rlimits, drops to the slot uid and execs it),
**      which builds every namespace and mount and then waits on its
**      --block-fd; for a semitrusted run, slirp4netns attached to the
**      run's network namespace;
**   3. arm it: the source into code/, the input files into the work
**      directory, RLIMIT_CPU for a pooled sandbox (the ttl was not known
**      when it was started), then one byte on the block fd lets bwrap
**      fork and exec the program; the ttl counts from here;
**   4. the waiter polls stdout, stderr, bwrap's --info-fd, a pidfd of the
**      child, the cgroup's out-of-memory signal and a cancel eventfd until
**      the child is reaped. The info
**      names bwrap's inner process, the init of the run's own pid
**      namespace, which the waiter pins with a pidfd. The ttl or a cancel
**      SIGKILL that init: the kernel then kills every process of the
**      namespace, and the outer bwrap sees its child die and exits (137);
**   5. once the outer bwrap is reaped the inner init is killed as well (a
**      program that left background processes keeps its namespace alive
**      after its main process exited) and reaped, which proves every
**      process of the run gone; artifacts are collected, the run
**      directory removed and the slot given back. A slot some run of
**      which ended without that proof is swept (every process of its
**      uid SIGKILLed, found in /proc) before it is reused or unlocked.
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
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/run_object.h"
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

void ux_runner_tmpdir(char *out, size_t size) {
  pthread_mutex_lock(&ux_reg_lock);
  snprintf(out, size, "%s", reg.tmpdir[0] ? reg.tmpdir : "/tmp");
  pthread_mutex_unlock(&ux_reg_lock);
}

unsigned long long ux_reg_next_id(void) {
  pthread_mutex_lock(&ux_reg_lock);
  unsigned long long id = reg.next_id++;
  pthread_mutex_unlock(&ux_reg_lock);
  return id;
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

int ux_run_netns_id(unsigned long long id) {
  int fd = -1;
  pthread_mutex_lock(&ux_reg_lock);
  for (ux_run *r = reg.head; r; r = r->next) {
    if (r->id != id) continue;
    if (r->inner > 0 && r->inner_fd >= 0) {
      char path[64];
      snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)r->inner);
      fd = open(path, O_RDONLY | O_CLOEXEC);
      /* the pidfd still names a live process: the path was its namespace */
      if (fd >= 0 && syscall(SYS_pidfd_send_signal, r->inner_fd, 0, NULL, 0) != 0) ux_close_fd(&fd);
    }
    break;
  }
  pthread_mutex_unlock(&ux_reg_lock);
  return fd;
}

unsigned long long ux_run_id(const ux_run *run) { return run ? run->id : 0; }

int ux_runner_live(void) {
  int n = 0;
  pthread_mutex_lock(&ux_reg_lock);
  for (ux_run *r = reg.head; r; r = r->next) n++;
  pthread_mutex_unlock(&ux_reg_lock);
  return n;
}

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
** Checks, arming, start
** ------------------------------------------------------------------- */

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

void ux_sb_cpu_limit(int ttl_s, struct rlimit *l) {
  /* CPU time: a backstop behind the wall clock, so it must never fire
  ** first, even for a program that keeps every core busy */
  static long cpus;          /* read once: sysconf reads /sys on every call */
  if (!__atomic_load_n(&cpus, __ATOMIC_RELAXED))
    __atomic_store_n(&cpus, sysconf(_SC_NPROCESSORS_ONLN), __ATOMIC_RELAXED);
  rlim_t cpu = (rlim_t)ttl_s * (rlim_t)(cpus > 0 ? cpus : 1) + UX_SB_CPU_SLACK;
  l->rlim_cur = cpu;
  l->rlim_max = cpu + UX_SB_CPU_SLACK;
}

/* prlimit(2) on another process needs CAP_SYS_RESOURCE in its user
** namespace, which a container's root may lack, or a real uid and gid
** equal to the target's. So this thread alone (raw setresuid/setresgid
** change only the calling thread's credentials; glibc's would change
** every thread's) takes the sandbox's uid and gid as its real ids for the
** call, keeping its effective root, and gives them back at once. A
** process of any other uid that might have taken the pid meanwhile is
** then refused rather than limited. */
static int prlimit_as(uid_t uid, gid_t gid, pid_t pid, const struct rlimit *l) {
  uid_t ru = getuid();
  gid_t rg = getgid();
  int swap = ux_privileged() && uid != ru;
  if (swap && syscall(SYS_setresgid, gid, (gid_t)-1, (gid_t)-1) != 0) return -1;
  if (swap && syscall(SYS_setresuid, uid, (uid_t)-1, (uid_t)-1) != 0) {
    int e = errno;
    syscall(SYS_setresgid, rg, (gid_t)-1, (gid_t)-1);
    errno = e;
    return -1;
  }
  int rc = prlimit(pid, RLIMIT_CPU, l, NULL), e = errno;
  if (swap && (syscall(SYS_setresuid, ru, (uid_t)-1, (uid_t)-1) != 0 ||
               syscall(SYS_setresgid, rg, (gid_t)-1, (gid_t)-1) != 0)) {
    /* a thread that cannot be root again must not serve anything */
    fprintf(stderr, "unsandboxd: cannot restore the thread's credentials: %s\n", strerror(errno));
    abort();
  }
  errno = e;
  return rc;
}

/* A pooled sandbox's RLIMIT_CPU, on its inner process (the program is
** forked from it after the release and inherits it), as a fresh start
** would have set it. The pidfd, checked before, proves the pid still
** names that process: it cannot have been reaped (and its pid reused)
** while it waits on the block fd, unless killed in these microseconds. */
static int set_cpu_limit(ux_run *r, int ttl_s, char *err, size_t errlen) {
  if (ttl_s <= 0) return 0;
  struct rlimit l;
  ux_sb_cpu_limit(ttl_s, &l);
  if (r->inner_fd >= 0 && ux_pidfd_alive(r->inner_fd) &&
      prlimit_as(r->uid, r->gid, r->inner, &l) == 0) return 0;
  snprintf(err, errlen, "cannot set the CPU limit of the sandbox: %s", strerror(errno));
  return -1;
}

/* A pooled sandbox was prepared with the filler's background scheduling
** (pool.c: SCHED_BATCH at a higher nice): its outer bwrap, whose exit
** ends the run, its inner process, which forks the program after the
** release, and its slirp4netns get the server's policy and nice back, as
** a cold start has them. That needs CAP_SYS_NICE; without it the run goes
** on, slower, and that is said once. The pidfds, checked just before,
** prove the pids. */
static int reschedule(pid_t pid, int pidfd, int prio) {
  struct sched_param sp = { 0 };
  if (pid <= 0 || pidfd < 0 || !ux_pidfd_alive(pidfd)) return 0;
  return sched_setscheduler(pid, SCHED_OTHER, &sp) != 0 ||
         setpriority(PRIO_PROCESS, (id_t)pid, prio) != 0 ? -1 : 0;
}

static void unnice(ux_run *r) {
  static int said;
  int prio = getpriority(PRIO_PROCESS, 0);
  int bad = reschedule(r->inner, r->inner_fd, prio) | reschedule(r->pid, r->pidfd, prio) |
            reschedule(r->net.pid, r->net.pidfd, prio);
  if (bad && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "unsandboxd: pooled sandboxes run at a lower priority: %s\n", strerror(errno));
}

/* The source and input files, then the release. 0; -1 with err for what
** the spec brought (a file that cannot be placed), -2 for the sandbox's
** own failure; the caller then abandons the sandbox. */
void ux_run_result_caps(const ux_run_spec *spec, size_t *per_stream, size_t *artifacts) {
  if (per_stream) *per_stream = spec->output_cap ? spec->output_cap : UX_SB_OUTPUT_CAP;
  if (artifacts) *artifacts = spec->want_artifacts ? UX_SB_ART_BYTES : 0;
}

static int arm(ux_run *r, const ux_run_spec *spec, char *err, size_t errlen) {
  if (r->lang && ux_tree_place_file(r->code_fd, r->lang->file, spec->code ? spec->code : "",
                                    spec->code ? spec->code_len : 0, 0, (uid_t)-1, (gid_t)-1,
                                    err, errlen) != 0) return -1;
  if (spec->n_files) r->inputs = ux_xcalloc(spec->n_files, sizeof *r->inputs);
  for (; r->n_inputs < spec->n_files; r->n_inputs++)
    r->inputs[r->n_inputs] = ux_xstrdup(spec->files[r->n_inputs].name);
  for (size_t i = 0; i < spec->n_files; i++)
    if (ux_tree_place_file(r->work_fd, spec->files[i].name, spec->files[i].data,
                           spec->files[i].len, spec->files[i].mode, r->uid, r->gid, err, errlen) != 0) return -1;
  r->want_artifacts = spec->want_artifacts;
  if (r->want_artifacts) ux_tree_list_files(r->work_fd, &r->before);
  if (r->pooled && set_cpu_limit(r, spec->ttl_s, err, errlen) != 0) return -2;
  if (r->pooled) unnice(r);
  r->ttl_s = spec->ttl_s;
  ux_run_result_caps(spec, &r->cap, NULL);
  r->on_output = spec->on_output;
  r->output_ctx = spec->output_ctx;
  /* the ttl counts from the release */
  r->t0_ms = ux_now_ms();
  /* registered before it is released: a freeze or kill of its work
  ** directory (a snapshot's, a delete's) that comes once the program runs
  ** must find it */
  reg_add(r);
  if (write(r->block_fd, "x", 1) != 1) {
    reg_remove(r);
    snprintf(err, errlen, "cannot release the sandbox: %s", strerror(errno));
    return -2;
  }
  ux_close_fd(&r->block_fd);
  return 0;
}

/* A pooled sandbox for the spec, armed; NULL when there is none (or the
** one taken turned out dead: it is discarded and the run starts cold). */
static ux_run *start_pooled(const ux_run_spec *spec, char *err, size_t errlen, int *failed) {
  ux_run *r;
  while ((r = ux_pool_take(spec))) {
    int rc = arm(r, spec, err, errlen);
    if (rc == 0) return r;
    ux_sb_abandon(r);
    /* the spec's own fault (an input file that cannot be placed) would
    ** fail a cold start too: report it; the sandbox's: try another */
    if (rc == -1) { *failed = 1; return NULL; }
    err[0] = '\0';
  }
  return NULL;
}

/* Starts `spec`: `lang` and `script` for a language, or NULL for argv;
** from the pool when `pool` and it has one. */
static ux_run *start(const ux_run_spec *spec, const ux_lang *lang, const char *script,
                     int pool, char *err, size_t errlen) {
  int failed = 0;
  ux_run *r = pool ? start_pooled(spec, err, errlen, &failed) : NULL;
  if (r || failed) return r;
  /* released only once its set-up is seen complete: a failure after
  ** that is the program's, before it bwrap's. Nothing of the program has
  ** run then, so a second sandbox is tried once (bwrap's set-up can fail
  ** for a passing reason: a new network namespace's loopback was seen to
  ** refuse its address under load); the second failure is the run's */
  for (int attempt = 0; attempt < 2; attempt++) {
    if (!(r = ux_sb_prepare(spec, lang, script, 0, err, errlen))) return NULL;
    int ready = ux_sb_await_ready(r, err, errlen) == 0;
    if (ready && arm(r, spec, err, errlen) == 0) return r;
    ux_sb_abandon(r);
    if (ready) return NULL;                  /* arming failed: not bwrap's */
  }
  return NULL;
}

ux_run *ux_run_start(const ux_run_spec *spec, char *err, size_t errlen) {
  const ux_lang *lang;
  if (check_spec(spec, &lang, err, errlen) != 0) return NULL;
  /* the run's limit is admitted against the budget unless its caller
  ** holds a claim for it (membudget.h); a run that finds no room waits a
  ** little for runs that are ending to give theirs back */
  unsigned long long need = ux_run_memory_bytes(spec->vcpu);
  ux_memclaim own = { 0, 1 };
  if ((!spec->mem || spec->mem->bytes < need) &&
      ux_mem_claim_wait(&own, need, UX_MEM_RUN_WAIT_MS, err, errlen) != 0)
    return NULL;
  char *script = NULL;
  if (lang && !(script = ux_sb_script(lang, spec))) {
    snprintf(err, errlen, "out of memory");
    ux_mem_release(&own);
    return NULL;
  }
  ux_run *r = start(spec, lang, script, 1, err, errlen);
  free(script);
  if (r) ux_mem_move(&r->mem, &own);
  else ux_mem_release(&own);
  return r;
}

/* ---------------------------------------------------------------------
** Start-up check
** ------------------------------------------------------------------- */

/* The hint for a sandbox that cannot start because of the host. */
static void userns_hint(char *err, size_t errlen) {
  if (!strstr(err, "namespace") && !strstr(err, "uid map")) return;
  size_t len = strlen(err);
  snprintf(err + len, errlen - len, " (user namespaces seem disabled: enable them with sysctl "
           "kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0)");
}

int ux_runner_check(char *err, size_t errlen) {
  if (access(UX_SB_BWRAP, X_OK) != 0) {
    snprintf(err, errlen, "bubblewrap not found at " UX_SB_BWRAP
             " (apt-get install bubblewrap)");
    return -1;
  }
  static const ux_lang probe = { "check", "/usr/bin/true", "check.sh", "", NULL };
  ux_run_spec spec = { .language = "check", .ttl_s = 10, .vcpu = 1 };
  ux_run *r = start(&spec, &probe, "echo ok", 0, err, errlen);
  if (!r) { userns_hint(err, errlen); return -1; }
  ux_run_result res;
  ux_run_wait(r, &res);
  int good = !res.error[0] && res.exit_code == 0 && res.out_len >= 2 &&
             memcmp(res.out, "ok", 2) == 0;
  if (!good) {
    snprintf(err, errlen, "%s", res.error[0] ? res.error : "the trivial sandbox did not print ok");
    if (res.err && res.err_len) {
      size_t len = strlen(err);
      snprintf(err + len, errlen - len, ": %.200s", res.err);
    }
    userns_hint(err, errlen);
  }
  ux_run_result_free(&res);
  return good ? 0 : -1;
}
