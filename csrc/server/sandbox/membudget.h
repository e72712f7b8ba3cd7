/*
** The memory budget of all runs together. Every run's memory limit (its
** cgroup's memory.max, vcpu x 1 GiB) is claimed from one budget before
** the run may exist, and given back when it is over, so the limits the
** server hands out never add up to more than the machine has: a create
** or a run whose limit does not fit what remains is refused (429) instead
** of set on a cgroup that the kernel could never honour. The kernel
** enforces the same number too: the runs' parent cgroup gets the budget
** as its limit (cgroup.c), so what the runs really use together stays
** below it even where a run's own limit is larger than its share.
**
** A claim is a value owned by whoever must answer for the run: a service's
** bootstrap while it runs, a terminal's shell, a Control Plane runtime
** while it lives; the runner claims for every other run when it starts it
** (jobs, archivers, restores): a passing claim, given back a moment after
** the run's answer (once its scratch tmpfs is gone). A job is checked
** when it is submitted against the lasting claims only (ux_mem_fits: 429
** when the sessions, services and runtimes leave it no room) and claims
** when a worker starts it, waiting for passing claims to come back:
** queued jobs use no memory, the job pool's workers bound how many run at
** once, and a burst is never refused for runs that are just ending.
** Claims are counted under one mutex; only ux_mem_claim_wait blocks, and
** only its caller.
*/
#ifndef UX_MEMBUDGET_H
#define UX_MEMBUDGET_H

#include <stddef.h>

typedef struct ux_memclaim {
  unsigned long long bytes;         /* claimed by its owner; 0 = none */
  int passing;                      /* 1: the runner's claim for one run */
} ux_memclaim;

/* The default budget when --memory-budget-mb is not given: this share of
** the machine's memory (MemTotal), in percent. The rest is left to the
** host, the server itself and the page cache. */
#define UX_MEM_DEFAULT_SHARE 75u
/* The smallest budget accepted: one run of one vcpu. */
#define UX_MEM_BUDGET_MIN_MB 1024ul

/* The memory limit of a run of vcpu CPUs (clamped to 1..8): the one place
** that says how big a run is, for its cgroup, its tmpfs mounts, its
** language's heap flag and its claim. */
unsigned long long ux_run_memory_bytes(int vcpu);

/* The default budget: UX_MEM_DEFAULT_SHARE percent of `meminfo_text`'s
** MemTotal (a /proc/meminfo text), at least UX_MEM_BUDGET_MIN_MB; 0 when
** the text names no MemTotal. Pure, for the unit test. */
unsigned long long ux_membudget_default_from(const char *meminfo_text);

/* Sets the budget (bytes; 0 = the default from /proc/meminfo). Call
** before the first claim (ux_runner_set_memory_budget does, at start). */
void ux_membudget_set(unsigned long long bytes);

/* Makes *c hold exactly `bytes`: grows it when the budget has room for
** the difference, shrinks it otherwise freely. 0, or -1 with err (and *c
** unchanged) when the budget cannot hold it. */
int ux_mem_claim(ux_memclaim *c, unsigned long long bytes, char *err, size_t errlen);

/* ux_mem_claim, waiting up to timeout_ms for claims to be given back when
** the budget has no room now: for a run that may wait (a job a worker is
** starting while earlier runs are still being released). */
int ux_mem_claim_wait(ux_memclaim *c, unsigned long long bytes, long timeout_ms,
                      char *err, size_t errlen);
/* How long the runner waits so (a job's run whose memory is still held by
** runs that are ending: their release follows their end by a moment). */
#define UX_MEM_RUN_WAIT_MS 30000L

/* 0 when a run of `bytes` fits the budget beside the lasting claims (all
** but the passing ones), else -1 with err: a check that claims nothing
** (a job's submission, whose run claims when it starts). */
int ux_mem_fits(unsigned long long bytes, char *err, size_t errlen);

/* Gives back what *c holds (idempotent: *c is then empty). */
void ux_mem_release(ux_memclaim *c);

/* Moves what *from holds into *to (which must be empty): one owner hands
** its claim to the next without a moment where another could take it. */
void ux_mem_move(ux_memclaim *to, ux_memclaim *from);

/* Bytes claimed now and the budget, for GET /health. */
void ux_membudget_usage(unsigned long long *claimed, unsigned long long *budget);

#endif
