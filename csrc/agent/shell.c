/*
** Shells on pseudo-terminals.
**
** The terminal has ECHO and ONLCR off: what session_input types is not
** repeated in the output, and output keeps its "\n" line ends. bash runs
** non-interactive (no prompts, no history, no job control: every command
** stays in bash's process group, so one SIGKILL to the group stops all of
** it), reading commands from a pipe only the agent writes. Each command is
** sent as
**
**   eval 'COMMAND' </dev/pts/N; builtin printf '%s:%d;' 'MARKER' "$?" >/dev/pts/N
**
** COMMAND single-quoted (a syntax error in it is eval's status 2, the
** wrapper still reports). MARKER is "__unsb_" and 32 hex digits from
** getrandom, new for every command, so output that imitates a marker (an
** old one, a guess) cannot end a command or fake its status.
*/
#include "agent/shell.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>

#include "agent/exec.h"

static void child(const ag_fs *fs, const char *pts, int cmd_r) {
  struct termios t;
  struct winsize ws = { 24, 200, 0, 0 };
  int s;
  setsid();
  if ((s = open(pts, O_RDWR)) < 0 || ioctl(s, TIOCSCTTY, 0) < 0) _exit(126);
  if (tcgetattr(s, &t) == 0) {
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    t.c_oflag &= ~(tcflag_t)ONLCR;
    tcsetattr(s, TCSANOW, &t);
  }
  ioctl(s, TIOCSWINSZ, &ws);
  if (dup2(cmd_r, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0 || fchdir(fs->root) < 0) _exit(126);
  if (s > 2) close(s);
  ag_exec_child_signals();
  if (!getenv("TERM")) setenv("TERM", "dumb", 1);
  execlp("bash", "bash", "--noprofile", "--norc", "-o", "pipefail", (char *)NULL);
  _exit(127);
}

int ag_shell_start(const ag_fs *fs, ag_shell *sh, ag_err *e) {
  int p[2];
  memset(sh, 0, sizeof *sh);
  sh->master = sh->cmd = -1;
  if ((sh->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) return ag_sysfail(e, "posix_openpt");
  if (grantpt(sh->master) < 0 || unlockpt(sh->master) < 0 ||
      ptsname_r(sh->master, sh->pts, sizeof sh->pts) != 0) {
    ag_sysfail(e, "pseudo-terminal");
    close(sh->master);
    return -1;
  }
  if (pipe2(p, O_CLOEXEC) < 0) { ag_sysfail(e, "pipe"); close(sh->master); return -1; }
  if ((sh->pid = fork()) < 0) {
    ag_sysfail(e, "fork");
    close(p[0]); close(p[1]); close(sh->master);
    return -1;
  }
  if (sh->pid == 0) child(fs, sh->pts, p[0]);
  close(p[0]);
  sh->cmd = p[1];
  fcntl(sh->master, F_SETFL, O_NONBLOCK);
  fcntl(sh->cmd, F_SETFL, O_NONBLOCK);
  return 0;
}

void ag_shell_kill(ag_shell *sh) {
  if (sh->pid > 0) kill(-sh->pid, SIGKILL);
  if (sh->master >= 0) close(sh->master);
  if (sh->cmd >= 0) close(sh->cmd);
  sh->master = sh->cmd = -1;
}

int ag_shell_marker(char *marker, ag_err *e) {
  unsigned char r[16];
  if (getrandom(r, sizeof r, 0) != sizeof r) return ag_sysfail(e, "getrandom");
  strcpy(marker, "__unsb_");
  for (int i = 0; i < 16; i++) sprintf(marker + 7 + 2 * i, "%02x", r[i]);
  return 0;
}

int ag_shell_send(ag_shell *sh, const char *command, size_t len, const char *marker, ag_err *e) {
  ag_buf b = { 0 };
  ag_buf_add(&b, "eval '", 6);
  for (size_t i = 0; i < len; i++) {
    if (command[i] == '\'') ag_buf_add(&b, "'\\''", 4);
    else ag_buf_add(&b, command + i, 1);
  }
  ag_buf_add(&b, "' <", 3);
  ag_buf_add(&b, sh->pts, strlen(sh->pts));
  ag_buf_add(&b, "; builtin printf '%s:%d;' '", 27);
  ag_buf_add(&b, marker, strlen(marker));
  ag_buf_add(&b, "' \"$?\" >", 8);
  ag_buf_add(&b, sh->pts, strlen(sh->pts));
  ag_buf_add(&b, "\n", 1);
  if (b.oom) { ag_buf_free(&b); return ag_fail(e, AG_INTERNAL, "out of memory"); }
  /* the pipe is empty between commands (bash read the last one whole) and
  ** holds 64 KiB; a command is at most 4 x 8192 bytes once quoted */
  ssize_t n = write(sh->cmd, b.p, b.len);
  int ok = n == (ssize_t)b.len;
  ag_buf_free(&b);
  if (!ok) return n < 0 ? ag_sysfail(e, "writing to the shell") : ag_fail(e, AG_INTERNAL, "the shell did not take the whole command");
  return 0;
}
