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
** A claim is a value owned by whoever must answer for the run: a job from
** its submission to its end (queued jobs hold theirs, so a full queue is
** refused at once, not failed later), a service's bootstrap while it
** runs, a Control Plane runtime while it lives. The runner claims for the
** runs nobody else does (snapshots' archivers, restores). Claims are
** counted under one mutex; nothing here blocks.
*/
#ifndef UX_MEMBUDGET_H
#define UX_MEMBUDGET_H

#include <stddef.h>

typedef struct ux_memclaim {
  unsigned long long bytes;         /* claimed by its owner; 0 = none */
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

/* Gives back what *c holds (idempotent: *c is then empty). */
void ux_mem_release(ux_memclaim *c);

/* Moves what *from holds into *to (which must be empty): one owner hands
** its claim to the next without a moment where another could take it. */
void ux_mem_move(ux_memclaim *to, ux_memclaim *from);

/* Bytes claimed now and the budget, for GET /health. */
void ux_membudget_usage(unsigned long long *claimed, unsigned long long *budget);

#endif
