/*
** Op `terminal`: an interactive program (a shell, a REPL, a multiplexer's
** client) on a pseudo-terminal of the sandbox's own devpts, for the
** execution API's WebSocket terminal. The request carries a data fd, a
** unix socket: the PTY's master end goes back to the server over it
** (SCM_RIGHTS), so the server relays the terminal while the terminal
** itself, and everything started from it, lives inside the sandbox (its
** namespaces, its cgroup, its limit of 64 terminals).
**
** The answer comes when the program exits: {exit_code} (-N for a signal).
** EOF on the request socket first (the server's client detached) hangs
** the terminal up: SIGHUP to every process of its session (the jobs of a
** shell), and SIGKILL to the program's process group a second later if it
** is still there; processes that ignore the hangup (nohup) or left the
** session (setsid, a daemon, a tmux server) go on living in the sandbox.
*/
#ifndef AG_TERMINAL_H
#define AG_TERMINAL_H

#include <jansson.h>

#include "agent/conn.h"
#include "agent/paths.h"

void ag_terminal_serve(const ag_fs *fs, json_t *req, int datafd, ag_conn *c);

#endif
