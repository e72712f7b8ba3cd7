/*
** The shell of a PTY session: bash on a pseudo-terminal allocated inside
** the sandbox (posix_openpt / grantpt / unlockpt on its private devpts).
** bash reads its commands from a private pipe (stdin), writes to the
** terminal (stdout, stderr), and runs each command with the terminal as
** stdin, so `tty` names /dev/pts/N and interactive programs read what
** session_input types.
*/
#ifndef AG_SHELL_H
#define AG_SHELL_H

#include <sys/types.h>

#include "agent/buf.h"
#include "agent/err.h"
#include "agent/paths.h"

typedef struct {
  pid_t pid;          /* bash: session leader and process group */
  int master;         /* terminal master, non-blocking */
  int cmd;            /* write end of bash's command pipe */
  char pts[64];       /* /dev/pts/N */
} ag_shell;

/* Starts a shell in DIR. 0, or -1 with e set. */
int ag_shell_start(const ag_fs *fs, ag_shell *sh, ag_err *e);

/* SIGKILLs the shell's process group and closes our ends (does not reap). */
void ag_shell_kill(ag_shell *sh);

/* Makes a fresh marker (32 random hex digits after a fixed prefix) into
** marker[AG_MARKER_LEN + 1]. */
#define AG_MARKER_LEN 39
int ag_shell_marker(char *marker, ag_err *e);

/* Sends one command, wrapped so the shell reports its exit status as
** MARKER ":" status ";" on the terminal after the command's output. */
int ag_shell_send(ag_shell *sh, const char *command, size_t len, const char *marker, ag_err *e);

#endif
