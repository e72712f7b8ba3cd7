/*
** One PTY session, private to sessions.c (the table, the requests, the
** clocks) and session_out.c (reading the terminal, finding markers). A
** session has at most one attached call: the request whose final frame
** is pending.
*/
#ifndef AG_SESSION_H
#define AG_SESSION_H

#include "agent/buf.h"
#include "agent/conn.h"
#include "agent/shell.h"

#define AG_SESSION_OUTPUT_MAX 64000   /* bytes of output per call */

enum { ACT_EXEC, ACT_WAIT, ACT_INPUT, ACT_KILL };

typedef struct {
  char id[65];
  ag_shell sh;
  int alive;              /* the shell has not been reaped */
  int dead;               /* reaped and drained: the next exec restarts it */
  double dying_until;     /* reaped: output is drained until then */
  int shell_status;
  int master_eof;
  double created, last_used;

  int running;            /* a command is in progress */
  char marker[AG_MARKER_LEN + 1];
  int has_exit, exit_code;/* the last finished command */

  ag_buf pend;            /* terminal bytes not yet scanned for the marker */
  ag_buf out;             /* output not yet handed to a call */
  size_t out_raw;         /* terminal bytes counted against the cap */
  int truncated;
  ag_utf8_state u;
  double last_output_at;

  ag_buf input;           /* bytes for the terminal not yet written */
  size_t input_off;
  double input_done_at;

  /* the attached call */
  ag_conn *conn;
  int action, streaming, restarted, async;
  size_t streamed;        /* bytes of out already sent as chunks */
  double deadline;
} ag_session;

/* Reads what the terminal has. Returns 1 when the running command finished
** (marker seen: has_exit, exit_code set), 0 otherwise. */
int ag_session_read(ag_session *s, double now);

/* Sends out[streamed..] as a chunk event to a streaming call. */
void ag_session_stream(ag_session *s);

/* Ends the output of a command: a partial character becomes U+FFFD. */
void ag_session_flush_text(ag_session *s);

/* Writes pending input to the terminal. */
void ag_session_write_input(ag_session *s, double now);

#endif
