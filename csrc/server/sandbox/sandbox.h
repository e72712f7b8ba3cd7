/*
** Internals of the sandbox runner (runner.c), shared only by its
** companion files: languages.c (what runs a language) and sandbox_argv.c
** (the bubblewrap command line). Nothing outside the runner includes
** this header; the public interface is runner.h. File work on the trees
** a sandbox writes is tree.c's alone (tree.h).
*/
#ifndef UX_SANDBOX_H
#define UX_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include "server/sandbox/runner.h"

/* ---------------------------------------------------------------------
** Limits (one place, so the report and the code agree)
** ------------------------------------------------------------------- */

#ifndef UX_SB_UID_BASE
#define UX_SB_UID_BASE      200000u  /* slot N runs as uid/gid BASE+N */
#endif
#define UX_SB_SLOTS         256      /* concurrent runs at most */
#define UX_SB_INNER_ID      1000u    /* uid/gid the program sees */
#define UX_SB_NPROC         128      /* processes+threads per run */
#define UX_SB_MEM_PER_VCPU  (1024ul << 20)  /* RLIMIT_DATA per vcpu */
#define UX_SB_FSIZE         (64ul << 20)    /* largest file written */
#define UX_SB_NOFILE        256
#define UX_SB_CPU_SLACK     5        /* RLIMIT_CPU = ttl x cpus + this, s */
#define UX_SB_TMP_SIZE      (256ul << 20)   /* /tmp tmpfs (memory) */
#define UX_SB_SHM_SIZE      (64ul << 20)    /* /dev/shm tmpfs (memory) */
#define UX_SB_OUTPUT_CAP    (1ul << 20)     /* default per stream */
#define UX_SB_ART_FILES     100      /* artifacts returned at most */
#define UX_SB_ART_BYTES     (16ul << 20)    /* their total size */
#define UX_SB_ENV_BYTES     (256ul << 10)   /* all env strings together */
#define UX_SB_CODE_DIR      "/code"  /* read-only, holds the source */
#define UX_SB_WORK_DIR      "/sandbox"

/* ---------------------------------------------------------------------
** languages.c
** ------------------------------------------------------------------- */

typedef struct ux_lang {
  const char *name;
  const char *probe;    /* absolute path that must resolve under /usr */
  const char *file;     /* source file name, placed in UX_SB_CODE_DIR */
  const char *script;   /* /bin/sh script; {MEM} = heap hint in MiB */
} ux_lang;

/* The entry for an installed language, or NULL. */
const ux_lang *ux_sb_lang(const char *name);

/* Extra read-only /etc entries some interpreter needs (/etc/java-17-openjdk
** ...), found once; NULL-terminated. */
const char *const *ux_sb_extra_etc(void);

/* ---------------------------------------------------------------------
** sandbox_argv.c
** ------------------------------------------------------------------- */

/* Fixed fd numbers inside the child, right before exec'ing bwrap. */
enum {
  UX_FD_STARTED = 3,    /* the sandbox writes one byte when it is up */
  UX_FD_WORK    = 4,    /* the work directory (closed before exec when
                           mounted at UX_SB_MNT_WORK) */
  UX_FD_CODE    = 5,    /* the code directory (likewise) */
  UX_FD_PASSWD  = 6,    /* pipe holding /etc/passwd */
  UX_FD_GROUP   = 7,    /* pipe holding /etc/group */
  UX_FD_EXECERR = 8,    /* close-on-exec; errno if execve failed */
  UX_FD_INFO    = 9,    /* bwrap --info-fd: {"child-pid": N}, the pid of
                           its inner process (the pid namespace's init) */
  UX_FD_COUNT   = 10
};

typedef struct ux_argv {
  char **v; size_t n, cap;
  int oom;
} ux_argv;

/* As root, the child mounts the work and code directories here in a
** private mount namespace (a tmpfs over /tmp), because bwrap 0.8 resolves
** the source of --bind-fd back to a path it must be able to traverse. */
#define UX_SB_MNT_ROOT "/tmp"
#define UX_SB_MNT_DIR  "/tmp/ux"
#define UX_SB_MNT_WORK "/tmp/ux/work"
#define UX_SB_MNT_CODE "/tmp/ux/code"

/* Builds the bwrap command line for `spec` running `script`; `mounted`:
** the directories are at UX_SB_MNT_*, else passed as fds. The arguments
** are copies (free with ux_sb_argv_free). 0 or -1 with err. */
int ux_sb_build_argv(ux_argv *a, const ux_run_spec *spec, int mounted,
                     const char *script, char *err, size_t errlen);
void ux_sb_argv_free(ux_argv *a);

/* The script a language runs, with {MEM} expanded for this spec. */
char *ux_sb_script(const ux_lang *lang, const ux_run_spec *spec);

/* 1 if an env entry "KEY=VALUE" has a valid key. */
int ux_sb_env_ok(const char *kv);

#endif
