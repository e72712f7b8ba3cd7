/*
** The limits of every sandbox, in one place, so the report (GET /health,
** the docs) and the code agree: ids, processes, memory, files, terminals,
** output, artifacts, and the fixed paths inside a sandbox.
*/
#ifndef UX_SB_LIMITS_H
#define UX_SB_LIMITS_H

#include "core/validate.h"

#ifndef UX_SB_UID_BASE
#define UX_SB_UID_BASE      200000u  /* slot N runs as uid/gid BASE+N */
#endif
#define UX_SB_SLOTS         256      /* concurrent runs at most */
#define UX_SB_INNER_ID      1000u    /* uid/gid the program sees */
/* processes+threads per run: pids.max of its cgroup (RLIMIT_NPROC of its
** slot uid without cgroups). 128 was too few: a loop that starts a
** short-lived background process every iteration (`while :; do sleep 0.1 &
** done`) keeps ~100 alive and bash exits when a fork finally fails */
#define UX_SB_NPROC         512
#define UX_SB_MEM_PER_VCPU  (1024ul << 20)  /* memory per vcpu: the cgroup's
                                               limit (RLIMIT_DATA without) */
#define UX_SB_FSIZE         (64ul << 20)    /* largest file written */
#define UX_SB_NOFILE        256
/* terminals per run: max= of its own devpts. The host's pool
** (kernel.pty.max, 4096 by default, 1024 of it kept for the host's own
** devpts) is shared by every sandbox; a shell, a terminal session and a
** multiplexer's panes use a few */
#define UX_SB_PTY_MAX       64
#define UX_SB_CPU_SLACK     5        /* RLIMIT_CPU = ttl x cpus + this, s */
/* /tmp and /dev/shm are tmpfs: memory. With a memory cgroup their pages
** count against the run's limit and each may grow to it; without one
** (rlimits) they are capped at these sizes, uncounted */
#define UX_SB_TMP_SIZE      (256ul << 20)
#define UX_SB_SHM_SIZE      (64ul << 20)
#define UX_SB_OUTPUT_CAP    (1ul << 20)     /* default per stream */
#define UX_SB_ART_FILES     100      /* artifacts returned at most */
#define UX_SB_ART_BYTES     (16ul << 20)    /* their total size */
#define UX_SB_ENV_BYTES     ((unsigned long)UNSB_ENV_MAX_BYTES)   /* all env strings together */
#define UX_SB_BWRAP         "/usr/bin/bwrap"
#define UX_SB_CODE_DIR      "/code"  /* read-only, holds the source */
#define UX_SB_WORK_DIR      "/sandbox"  /* default ux_run_spec.work_mount */
#define UX_SB_RO_BINDS      8        /* ux_run_spec.ro_binds at most */
#define UX_SB_ETC_FILES     9        /* host /etc files copied in (bwrap_argv.c) */
#define UX_SB_ARGV_MAX      1024     /* ux_run_spec.argv entries at most */
#define UX_SB_NET_MS        5000     /* semitrusted: network up within */

#endif
