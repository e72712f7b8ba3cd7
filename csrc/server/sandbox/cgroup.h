/*
** Control groups of the runner: memory and process limits that count
** every process of a run together (shared mappings, tmpfs pages and
** threads included), an out-of-memory signal, a freezer and a kill that
** reaches every process of a run.
**
** Two halves, so each can be tested on its own:
**   cgroup.c      decides, once per process, which hierarchy is usable
**                 (cgroup v2, else the v1 memory + pids controllers, plus
**                 the v1 freezer when mounted) from /proc/self/cgroup and
**                 /proc/self/mountinfo, and makes this server's parent
**                 cgroup "unsandboxd-PID-START" next to its own (removing
**                 the parents of dead servers first). Detection reads its
**                 inputs from paths given by the caller, so the tests lay
**                 out fake trees in a temporary directory.
**   cgroup_run.c  one cgroup per run below that parent: made with its
**                 limits before the fork, joined by the child through fds
**                 opened here (writing "0" to cgroup.procs is an
**                 async-signal-safe write), frozen, killed, removed.
** Every file is opened relative to a directory fd of the cgroup. Internal
** to the runner (runner.c, wait.c, workgroup.c); nothing here knows runs.
*/
#ifndef UX_CGROUP_H
#define UX_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

enum { UX_CG_NONE = 0, UX_CG_V1 = 1, UX_CG_V2 = 2 };

/* Hierarchies in use: v2 uses only [UX_CG_MEM] (the unified one). */
enum { UX_CG_MEM, UX_CG_PIDS, UX_CG_FRZ, UX_CG_NDIR };

typedef struct ux_cg_layout {
  int version;                      /* UX_CG_* */
  char base[UX_CG_NDIR][PATH_MAX];  /* our own cgroup in each hierarchy */
  int memsw;                        /* v1: memory.memsw.* exists */
  int freezer;                      /* v2, or v1 with its freezer mounted */
  int kill;                         /* v2: cgroup.kill exists */
  int limits;                       /* write memory/pids limits (1 unless a
                                       test uses a hierarchy without them) */
  unsigned long long budget;        /* the parent's memory limit: what all
                                       runs together may use (0 = none) */
  char why[512];                    /* why v2 (or v1) was not chosen */
  /* set by ux_cg_setup */
  char name[64];                    /* "unsandboxd-PID-START" */
  int parent_fd[UX_CG_NDIR];        /* the parent cgroup per hierarchy */
  int moved;                        /* v2: this process moved to NAME-server */
} ux_cg_layout;

/* ---------------------------------------------------------------------
** cgroup.c: detection and the server's parent
** ------------------------------------------------------------------- */

/* Decides from a /proc/PID/cgroup and a /proc/PID/mountinfo (paths):
** v2 when its mount holds our cgroup with "memory" and "pids" among its
** cgroup.controllers and it is writable; else v1 when the memory and pids
** controllers are mounted and our cgroups in them are writable; else none.
** Always returns the version; layout->why tells what was missing. */
int ux_cg_detect(const char *self_cgroup, const char *mountinfo, ux_cg_layout *l);

/* Parses one /proc/PID/cgroup text: the path of the hierarchy that has
** `controller` (v1), or of the unified one when controller is NULL.
** 0, or -1 when no line names it. */
int ux_cg_self_path(const char *text, const char *controller, char *out, size_t size);

/* Parses /proc/PID/mountinfo text: the mount point and root of the first
** mount of `fstype` ("cgroup2", or "cgroup" with `option` among its
** super options, e.g. "memory"). Octal escapes (\040) are decoded.
** 0, or -1 when there is none. */
int ux_cg_find_mount(const char *text, const char *fstype, const char *option,
                     char *mnt, size_t mntlen, char *root, size_t rootlen);

/* 1 when a word of the space-separated `list` is `word`. */
int ux_cg_has_word(const char *list, const char *word);

/* Makes the parent "unsandboxd-PID-START" (`name`, or this process's when
** NULL) in every hierarchy of the layout, after removing the parents of
** servers that are gone (their processes killed), and gives it the
** layout's budget as its memory limit (v2 memory.max; v1
** memory.limit_in_bytes and memory.memsw.limit_in_bytes). On v2 it
** enables the memory and pids controllers below; when that needs our own
** cgroup to be empty of processes and this process is its only one, it
** moves itself into the sibling NAME-server first (not below NAME: the
** runs' limit is not the server's). 0, or -1 with err (the layout is then
** unusable and left with no parent). */
int ux_cg_setup(ux_cg_layout *l, const char *name, char *err, size_t errlen);

/* Removes this server's parents (what is left of them) and closes them. */
void ux_cg_teardown(ux_cg_layout *l);

/* The parent names of servers that are gone: "unsandboxd-PID-START" (or
** the "-server" cgroup of a moved one) whose PID is dead or started at
** another time. 1 stale, 0 alive or not ours. */
int ux_cg_name_stale(const char *name);

/* "unsandboxd-PID-START" for this process. 0 or -1. */
int ux_cg_own_name(char *out, size_t size);

/* Small file helpers, relative to a cgroup directory fd: whole-file write
** (0 or -1 with errno) and read into a NUL-terminated buffer (length or
** -1). */
int ux_cg_write(int dirfd, const char *file, const char *text);
long ux_cg_read(int dirfd, const char *file, char *buf, size_t size);

/* The number after "key " in a "key value" file such as memory.events or
** cgroup.events; -1 when the key is not there. */
long long ux_cg_key(const char *text, const char *key);

/* Kills every process listed in dirfd's cgroup.procs whose
** /proc/PID/cgroup still ends with `tail` once a pidfd holds it (so a
** reused pid is never hit). Returns how many were signalled. */
int ux_cg_kill_procs(int dirfd, const char *tail);

/* Removes the cgroup `name` below parentfd and whatever cgroups it holds,
** killing their processes (`tail`: the cgroup's path ending, as in
** ux_cg_kill_procs), retrying for up to timeout_ms. 0 or -1. */
int ux_cg_remove_tree(int parentfd, const char *name, const char *tail, int timeout_ms);

/* ---------------------------------------------------------------------
** cgroup_run.c: one run's cgroup
** ------------------------------------------------------------------- */

typedef struct ux_cg_run {
  int version;
  int freezer, kill;                /* copied from the layout */
  char name[40];                    /* "run-ID" */
  char tail[128];                   /* "/PARENT/run-ID", for /proc/PID/cgroup */
  int parent_fd[UX_CG_NDIR];        /* borrowed from the layout */
  int dir_fd[UX_CG_NDIR];           /* -1 when absent */
  int procs_fd[UX_CG_NDIR];         /* cgroup.procs, O_WRONLY, for the child */
  int oom_fd;                       /* v1 eventfd (POLLIN) / v2 memory.events
                                       (POLLPRI); -1 when not watched */
  short oom_events;
} ux_cg_run;

typedef struct ux_cg_limits {
  unsigned long long memory;        /* bytes, 0 = not set */
  long pids;                        /* 0 = not set */
} ux_cg_limits;

/* Makes the cgroup "run-ID" below the layout's parents and writes its
** limits (v2: memory.max, memory.swap.max 0, memory.oom.group 1, pids.max;
** v1: memory.limit_in_bytes, memory.memsw.limit_in_bytes, pids.max).
** 0, or -1 with err and nothing left behind. */
int ux_cg_run_create(const ux_cg_layout *l, unsigned long long id,
                     const ux_cg_limits *lim, ux_cg_run *c, char *err, size_t errlen);

/* The cgroup.procs fds a child writes "0" to (before exec, as root) to
** join every hierarchy of the run; returns how many (<= UX_CG_NDIR). */
int ux_cg_run_join_fds(const ux_cg_run *c, int fds[UX_CG_NDIR]);

/* Joins the calling process (async-signal-safe: write(2) only). 0/-1. */
int ux_cg_join(const int *fds, int n);

/* Out-of-memory kills counted in the run's cgroup so far (v2
** memory.events oom_kill, v1 memory.oom_control oom_kill); resets the
** v1 eventfd. 0 when none or unknown. */
long ux_cg_run_oom_kills(const ux_cg_run *c);

/* Freezes (1) or thaws (0) the run and waits until the kernel reports it
** done or timeout_ms passed. 0, or -1 (errno ENOTSUP without a freezer,
** ETIMEDOUT). */
int ux_cg_run_freeze(const ux_cg_run *c, int frozen, int timeout_ms);

/* SIGKILLs every process of the run (v2 cgroup.kill, else through
** cgroup.procs, thawing a frozen v1 run so the kill can land). 0/-1. */
int ux_cg_run_kill(const ux_cg_run *c);

/* 1 while a process is in the run's cgroup, 0 when empty, -1 unknown. */
int ux_cg_run_populated(const ux_cg_run *c);

/* Removes the run's cgroup (killing stragglers, for up to timeout_ms) and
** closes its fds. Safe on a zeroed or half-made run. */
void ux_cg_run_destroy(ux_cg_run *c, int timeout_ms);

/* A ux_cg_run with every fd -1. */
void ux_cg_run_init(ux_cg_run *c);

#endif
