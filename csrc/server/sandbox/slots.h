/*
** The runner's slots: each concurrent run (or group of runs sharing a
** persistent work directory) gets host uid/gid UX_SB_UID_BASE + slot, so
** RLIMIT_NPROC counts it alone and its processes can be found by uid.
** Slots are claimed across processes with an flock in /run/unsandboxd.
** Internal to the runner (runner.c, slots.c).
*/
#ifndef UX_SLOTS_H
#define UX_SLOTS_H

#include <sys/stat.h>
#include <sys/types.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define SWEEP_MS 2000   /* how long to wait for a slot's processes to go */

/* The start of /proc/PID/status as a string: 0, or -1 when gone. */
int ux_proc_status(long pid, char *buf, size_t size);

int ux_pidfd_kill(int fd);  /* SIGKILL through a pidfd */
int ux_pidfd_alive(int fd); /* 1 while the process has not exited */

/* SIGKILLs (and reaps) every live process of uid but spare; returns how
** many were seen. ux_sweep_uid repeats until none is left or SWEEP_MS
** passed: 0 when clean. */
int ux_kill_uid(uid_t uid, pid_t spare);
int ux_sweep_uid(uid_t uid);

/* Sends sig to every live process of uid (through a pidfd, checked
** again once held); returns how many. */
int ux_signal_uid(uid_t uid, int sig);

/* Makes this process a child subreaper (once): bwrap's orphaned inner
** processes are then reaped here rather than by the host's init. */
void ux_become_subreaper(void);

/* A slot for a run whose persistent work directory is wd (NULL: a
** temporary one): the slot held for that directory, else an idle one this
** process kept, else a fresh one (locked and swept); -1 when all are
** taken. *prepare: the caller must hand the tree to the slot uid, then
** call ux_slot_prepared. ux_slot_give drops a use, `clean` when the run
** proved every process of it gone (its pid namespace's init reaped, its
** slirp4netns stopped); the last use sweeps the uid unless every run was
** clean, then keeps or frees the slot. ux_slot_shared: another run uses
** it. None of them holds the table's mutex across a sweep. */
int ux_slot_take(const struct stat *wd, int *prepare);
void ux_slot_prepared(int slot, int ok);
void ux_slot_give(int slot, int clean);
int ux_slot_shared(int slot);

/* How many idle, clean slots this process may keep locked for the next
** runs: the sum of what the runner (ux_runner_keep_slots) and the pool
** ask for (default 0: a slot is unlocked when its last run ends, and
** swept when next locked). Lowering it unlocks the surplus. */
enum { UX_KEEP_RUNNER, UX_KEEP_POOL };
void ux_slots_keep(int who, int n);

#endif
