/*
** PTY sessions of the runtime (ops session_exec, session_wait,
** session_input, session_kill). They live in the runtime's event loop,
** because a session outlives the requests that use it; these functions
** are the loop's hooks.
*/
#ifndef AG_SESSIONS_H
#define AG_SESSIONS_H

#include <poll.h>
#include <sys/types.h>
#include <jansson.h>

#include "agent/conn.h"
#include "agent/paths.h"

#define AG_SESSIONS_MAX 16
#define AG_SESSIONS_DRAINING 32       /* finished calls still flushing */
#define AG_SESSIONS_POLLFDS (2 * AG_SESSIONS_MAX + AG_SESSIONS_DRAINING)

/* Reads UNSANDBOXD_AGENT_SESSION_IDLE_SECONDS (1800) and
** UNSANDBOXD_AGENT_SESSION_WALL_SECONDS (3600). 0 or -1. */
int ag_sessions_init(const ag_fs *fs);

int ag_sessions_is_op(const char *op);

/* Takes the connection (its fields are moved) and the request. */
void ag_sessions_request(ag_conn *c, json_t *req);

size_t ag_sessions_fill(struct pollfd *pf, size_t max);
void ag_sessions_after_poll(struct pollfd *pf, size_t n, double now);

/* The next time a session needs the loop, at most now + 3600. */
double ag_sessions_next_deadline(double now);

/* A child was reaped; ignored if it is not a session's shell. */
void ag_sessions_child(pid_t pid, int status);

/* In a forked handler: close every session fd. */
void ag_sessions_close_fds(void);

/* Kills every shell; for the runtime's exit. */
void ag_sessions_shutdown(void);

#endif
