/*
** A job that runs inside a living sandbox (living.h): a session's command
** or a service's execute, through the agent's background exec. The job
** pool (jobs.c) queues, counts, cancels and stores it like any job; only
** the run differs: no sandbox is started, the command joins the processes
** the session or service already runs, and what it starts in the
** background stays when it ends. Its output is streamed by the agent and
** kept here up to the job's caps (ux_run_result_caps); its deadline kills
** the command's process group, not the sandbox.
*/
#ifndef UX_EXEC_INSIDE_H
#define UX_EXEC_INSIDE_H

#include <jansson.h>

#include "server/exec/exec_spec.h"
#include "server/server.h"

/* A command's bytes at most: one argument of exec (MAX_ARG_STRLEN, the
** agent's bound) less what a service execute's `cd` adds. */
#define UX_INSIDE_COMMAND_MAX 131000

struct ux_inside {
  ux_server *srv;
  char kind[16], id[64];      /* "session" or "service", and its id */
  json_t *doc;                /* a session's document: its sandbox may
                                 have to be started first */
  json_t *files;              /* the agent's `files` (NULL: none) */
  int in_input;               /* run in /tmp/input, where the files are */
};

/* Makes spec (a command spec, exec_spec.h) run inside kind/id's sandbox;
** doc (a session's, kept) allows its sandbox to be started when it has
** none. */
void ux_inside_attach(ux_exec_spec *spec, ux_server *srv, const char *kind, const char *id,
                      json_t *doc);

/* Places spec's input files in /tmp/input/ of the sandbox for the
** command, which then runs there (the reference CLI's place for a
** service execute's files). */
void ux_inside_input_files(ux_exec_spec *spec);

/* Runs it; res as a runner run would fill it (the caller frees it).
** stop(ctx) is asked at least every 250 ms: non-zero cancels the command
** (res.cancelled). */
void ux_inside_run(ux_exec_spec *spec, int (*stop)(void *ctx), void *ctx, ux_run_result *res);

void ux_inside_free(struct ux_inside *in);

#endif
