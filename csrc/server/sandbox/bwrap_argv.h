/*
** What runs a language (languages.c) and the bubblewrap command line of a
** run (bwrap_argv.c): internals of the sandbox runner. The run object is
** in run_object.h; the public interface is runner.h; the limits are
** limits.h. File work on the trees a sandbox writes is tree.c's alone
** (tree.h).
*/
#ifndef UX_SB_BWRAP_ARGV_H
#define UX_SB_BWRAP_ARGV_H

#include <stddef.h>
#include <sys/types.h>

#include "server/sandbox/limits.h"
#include "server/sandbox/runner.h"

/* ---------------------------------------------------------------------
** languages.c
** ------------------------------------------------------------------- */

typedef struct ux_lang {
  const char *name;
  const char *probe;    /* absolute path that must resolve under /usr */
  const char *file;     /* source file name, placed in UX_SB_CODE_DIR */
  const char *script;   /* /bin/sh script; {MEM} = heap hint in MiB */
  const char *etc;      /* glob of /etc entries it reads, or NULL */
} ux_lang;

/* The entry for an installed language, or NULL. */
const ux_lang *ux_sb_lang(const char *name);
/* 1 when lang builds a program (its script keeps it as an artifact when
** the run wants them, so a sandbox prepared without that cannot serve). */
int ux_sb_lang_builds(const ux_lang *lang);

/* The /etc entries (read-only binds) a language needs, found once when
** the table is probed (OpenJDK's /etc/java-17-openjdk, GnuCOBOL's
** /etc/gnucobol); NULL-terminated, never NULL. */
const char *const *ux_sb_lang_etc(const ux_lang *lang);

/* ---------------------------------------------------------------------
** bwrap_argv.c
** ------------------------------------------------------------------- */

/* Fixed fd numbers inside the child, right before exec'ing bwrap (3 is
** closed). */
enum {
  UX_FD_WORK    = 4,    /* the work directory (closed before exec when
                           mounted at UX_SB_MNT_WORK) */
  UX_FD_CODE    = 5,    /* the code directory (likewise) */
  UX_FD_PASSWD  = 6,    /* pipe holding /etc/passwd */
  UX_FD_GROUP   = 7,    /* pipe holding /etc/group */
  UX_FD_EXECERR = 8,    /* close-on-exec; errno if execve failed */
  UX_FD_INFO    = 9,    /* bwrap --info-fd: {"child-pid": N}, the pid of
                           its inner process (the pid namespace's init) */
  UX_FD_PASS    = 10,   /* ux_run_spec.pass_fd: stays open in the program */
  UX_FD_BLOCK   = 11,   /* bwrap --block-fd: the program waits on it
                           until the runner releases it (its network up,
                           its source placed) */
  UX_FD_RESOLV  = 12,   /* pipe holding /etc/resolv.conf (semitrusted) */
  UX_FD_RO      = 13,   /* ro_binds[0..UX_SB_RO_BINDS-1] (closed before
                           exec when mounted at UX_SB_MNT_RO) */
  UX_FD_ETC     = UX_FD_RO + UX_SB_RO_BINDS,  /* the host's /etc files copied
                           in, one per entry of ux_sb_etc_open's table */
  UX_FD_COUNT   = UX_FD_ETC + UX_SB_ETC_FILES
};

/* Opens the host's /etc files a run of `spec` gets a copy of (the table
** in bwrap_argv.c): fds[i] for entry i, -1 when the entry is not for
** this run, missing, or not a world-readable regular file. */
void ux_sb_etc_open(const ux_run_spec *spec, int fds[UX_SB_ETC_FILES]);

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
#define UX_SB_MNT_RO   "/tmp/ux/ro"   /* ro binds at /tmp/ux/ro/0 ... /7 */
/* The sandboxes' /dev, made once in their mount namespace (mounts.c),
** on a tmpfs over /run there (the host's /run is not in it) */
#define UX_SB_DEV_ROOT "/run"
#define UX_SB_DEV      "/run/unsandbox-dev"

typedef struct ux_sb_plan {
  int mounted;                /* dirs at UX_SB_MNT_*, else passed as fds */
  const ux_lang *lang;        /* NULL when the spec brings argv */
  const char *script;         /* the language's script (expanded) */
  unsigned long tmp_size, shm_size;
  int broken;                 /* tests: a bind of a missing source, so the
                                 set-up fails inside bwrap (ux_pool_break_next) */
  const int *etc_fd;          /* ux_sb_etc_open's fds, or NULL for none */
  const char *dev;            /* ux_child_dev(), or NULL: bwrap's --dev */
} ux_sb_plan;

/* Builds the bwrap command line for `spec`. The arguments are copies
** (free with ux_sb_argv_free). 0 or -1 with err. */
int ux_sb_build_argv(ux_argv *a, const ux_run_spec *spec, const ux_sb_plan *plan,
                     char *err, size_t errlen);
void ux_sb_argv_free(ux_argv *a);

/* The script a language runs, with {MEM} expanded for this spec. */
char *ux_sb_script(const ux_lang *lang, const ux_run_spec *spec);

/* 1 if an env entry "KEY=VALUE" has a valid key. */
int ux_sb_env_ok(const char *kv);

/* The work directory inside: spec->work_mount or UX_SB_WORK_DIR. */
const char *ux_sb_work_mount(const ux_run_spec *spec);

/* 0 when `path` is a place the runner may mount something at inside the
** sandbox: absolute, clean (no '.', '..' or empty component), not "/",
** and not in or over what the runner mounts itself (/usr, /proc, /dev,
** /tmp, /code, /etc, the merged-usr links, ...). -1 with a message. */
int ux_sb_check_mount_point(const char *what, const char *path, char *err, size_t errlen);

/* Checks the spec's fields that concern the command line and the fds
** (argv, work_mount, ro_binds, in/out/pass fds). 0 or -1 with err. */
int ux_sb_check_spec_io(const ux_run_spec *spec, char *err, size_t errlen);

#endif
