/*
** Op `exec`: one bash command in DIR, its output captured (and streamed as
** chunk events when asked), bounded in time and size.
*/
#ifndef AG_EXEC_H
#define AG_EXEC_H

#include <jansson.h>

#include "agent/conn.h"
#include "agent/paths.h"

#define AG_EXEC_OUTPUT_MAX 64000      /* bytes kept per stream */
#define AG_EXEC_COMMAND_MAX 8192
#define AG_EXEC_BACKGROUND_COMMAND_MAX 131071   /* one exec argument (MAX_ARG_STRLEN) */

/* Runs in a handler process: checks the request, runs the command, writes
** the events and the final frame to c. Returns when the final frame is
** flushed or the server has gone (then the command is killed, no frame). */
void ag_exec_serve(const ag_fs *fs, json_t *req, ag_conn *c);

/* The child side shared with PTY sessions: default signal dispositions
** (the agent ignores SIGPIPE; ignored signals survive exec) and an empty
** signal mask. */
void ag_exec_child_signals(void);

/* SIGKILL to a child that leads its own process group (setsid or
** setpgid in the child) and to that group. The child by its pid first: a
** kill sent before the child has made its group would find no group of
** that id, and the child, left alive, would be waited for for ever; once
** killed it starts nothing more. Then the group, which holds what it had
** started. */
void ag_exec_kill_leader(pid_t pid);

/* A wait status as the results report it: the exit status, or -N for a
** death by signal N. */
int ag_exit_code(int status);

#endif
