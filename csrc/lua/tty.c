/*
** The terminal side of `un session attach` (lua/unsandbox/cli_attach.lua):
** raw mode and its restore, the window size, unbuffered reads of stdin,
** and the signals an interactive terminal must act on. SIGWINCH, SIGTERM
** and SIGHUP only set a flag here (a signal is process-wide, so the flags
** are too, like core/interrupt.c's); their arrival also interrupts the
** poll() of the terminal's service step (EINTR), so the Lua loop sees the
** flag at once, sends the new size, or restores the terminal and exits.
** SIGPIPE is ignored meanwhile, so a closed standard output (`un ... |
** head -1`) is a write error the Lua loop handles, restoring the terminal,
** not a death in raw mode. The saved terminal state is a Lua string (the struct termios bytes), so
** restoring needs nothing but that string, from a to-be-closed variable.
*/
#include "lua/binding.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static volatile sig_atomic_t got_winch, got_term, got_hup;
static struct sigaction old_winch, old_term, old_hup, old_pipe;
static int installed;

static void on_signal(int sig) {
  if (sig == SIGWINCH) got_winch = 1;
  else if (sig == SIGTERM) got_term = 1;
  else if (sig == SIGHUP) got_hup = 1;
}

static int check_fd(lua_State *L, int arg) {
  lua_Integer fd = luaL_checkinteger(L, arg);
  luaL_argcheck(L, fd >= 0 && fd <= 1 << 20, arg, "bad file descriptor");
  return (int)fd;
}

static int push_errno(lua_State *L, const char *what) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", what, strerror(errno));
  return 2;
}

/* core.tty_size(fd) -> cols, rows | nil, message */
static int l_size(lua_State *L) {
  struct winsize w;
  if (ioctl(check_fd(L, 1), TIOCGWINSZ, &w) != 0) return push_errno(L, "window size");
  lua_pushinteger(L, w.ws_col);
  lua_pushinteger(L, w.ws_row);
  return 2;
}

/* core.tty_raw(fd) -> saved state (string) | nil, message. cfmakeraw:
** no echo, no line editing, no signals from keys (Ctrl-C goes to the
** remote shell as a byte), no output processing. TCSADRAIN, not
** TCSAFLUSH: keys typed while the terminal was connecting are kept. */
static int l_raw(lua_State *L) {
  int fd = check_fd(L, 1);
  struct termios saved, raw;
  if (tcgetattr(fd, &saved) != 0) return push_errno(L, "terminal state");
  raw = saved;
  cfmakeraw(&raw);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(fd, TCSADRAIN, &raw) != 0) return push_errno(L, "raw mode");
  lua_pushlstring(L, (const char *)&saved, sizeof saved);
  return 1;
}

/* core.tty_restore(fd, saved) -> true | nil, message */
static int l_restore(lua_State *L) {
  int fd = check_fd(L, 1);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  struct termios t;
  luaL_argcheck(L, len == sizeof t, 2, "not a saved terminal state");
  memcpy(&t, s, sizeof t);
  if (tcsetattr(fd, TCSADRAIN, &t) != 0) return push_errno(L, "restoring the terminal");
  lua_pushboolean(L, 1);
  return 1;
}

/* core.fd_read(fd, max) -> bytes ("" at end of file) | nil, message. One
** read(2), no stdio buffer in between (the terminal's poll watches the fd). */
static int l_read(lua_State *L) {
  int fd = check_fd(L, 1);
  lua_Integer max = luaL_checkinteger(L, 2);
  luaL_Buffer b;
  ssize_t n;
  luaL_argcheck(L, max > 0 && max <= 1 << 20, 2, "1..1048576 bytes");
  char *p = luaL_buffinitsize(L, &b, (size_t)max);
  do n = read(fd, p, (size_t)max); while (n < 0 && errno == EINTR);
  if (n < 0) return push_errno(L, "read");
  luaL_pushresultsize(&b, (size_t)n);
  return 1;
}

/* core.fd_write(fd, bytes) -> true | false | nil, message. All of bytes
** with write(2), no stdio in between: stdio turns a write that a signal
** interrupted into an error and loses what it held, and the handlers here
** have no SA_RESTART. A resize (SIGWINCH) only interrupts the write, which
** goes on; SIGTERM or SIGHUP end it: false, for the caller to act on the
** signal. A full non-blocking fd is waited for. */
static int l_write(lua_State *L) {
  int fd = check_fd(L, 1);
  size_t len, off = 0;
  const char *p = luaL_checklstring(L, 2, &len);
  while (off < len) {
    if (got_term || got_hup) { lua_pushboolean(L, 0); return 1; }
    ssize_t n = write(fd, p + off, len - off);
    if (n > 0) { off += (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pf = { fd, POLLOUT, 0 };   /* a signal ends the wait too */
      if (poll(&pf, 1, -1) < 0 && errno != EINTR) return push_errno(L, "write");
      continue;
    }
    if (n == 0) errno = EIO;
    return push_errno(L, "write");
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.tty_signals(on): installs (true) or removes (false) the flag
** handlers of SIGWINCH, SIGTERM and SIGHUP, without SA_RESTART, so a
** blocking poll() returns; and ignores SIGPIPE meanwhile. */
static int l_signals(lua_State *L) {
  int on = lua_toboolean(L, 1);
  if (on && !installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGWINCH, &sa, &old_winch) != 0 || sigaction(SIGTERM, &sa, &old_term) != 0 ||
        sigaction(SIGHUP, &sa, &old_hup) != 0 || sigaction(SIGPIPE, &ign, &old_pipe) != 0)
      return push_errno(L, "sigaction");
    installed = 1;
    got_winch = got_term = got_hup = 0;
  } else if (!on && installed) {
    sigaction(SIGWINCH, &old_winch, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    installed = 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.tty_signal_take() -> "term" | "hup" | "winch" | nil (test and clear,
** the ending ones first). */
static int l_take(lua_State *L) {
  if (got_term) { got_term = 0; lua_pushliteral(L, "term"); }
  else if (got_hup) { got_hup = 0; lua_pushliteral(L, "hup"); }
  else if (got_winch) { got_winch = 0; lua_pushliteral(L, "winch"); }
  else lua_pushnil(L);
  return 1;
}

static const luaL_Reg FUNCS[] = {
  {"tty_size", l_size}, {"tty_raw", l_raw},
  {"tty_restore", l_restore}, {"tty_signals", l_signals}, {"tty_signal_take", l_take},
  {"fd_read", l_read}, {"fd_write", l_write}, {NULL, NULL},
};

void ub_open_tty(lua_State *L) {
  luaL_setfuncs(L, FUNCS, 0);
}
