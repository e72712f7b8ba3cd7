/*
** `unlua --local`: a private unsandboxd for the length of one run.
**
** local_start() finds bwrap and unsandboxd, starts the server on an
** ephemeral loopback port with a throw-away data directory and dev keys,
** and exports UNSANDBOX_URL, UNSANDBOX_PUBLIC_KEY, UNSANDBOX_SECRET_KEY,
** UNSANDBOX_LOCAL=1 and UNSANDBOXD_PID, so the library's ordinary
** configuration talks to it. local_stop() stops it and removes its data;
** it is registered with atexit(), so os.exit() in a script stops it too.
** When the user's lasting server runs (`un local start`, local_server.h),
** local_start() uses that one instead, and says so on stderr.
*/
#ifndef UNLUA_LOCAL_BACKEND_H
#define UNLUA_LOCAL_BACKEND_H

#include <stddef.h>

/* Seconds to wait for the server's announcement lines. */
#define LOCAL_START_TIMEOUT_S 15
/* Milliseconds between SIGTERM and SIGKILL when stopping it. */
#define LOCAL_STOP_GRACE_MS 5000

/* exedir: the directory of the running unlua ("" if unknown), where a
** build tree keeps unsandboxd next to it. Returns 0, or -1 after printing
** "progname: why" (and what to install or build) to stderr. From the
** call on, SIGINT, SIGTERM and SIGHUP are handled by local_fatal_signal. */
int local_start(const char *progname, const char *exedir);

/* Stops the server (SIGTERM, bounded wait, SIGKILL) and removes the data
** directory. Idempotent; does nothing in a forked child. */
void local_stop(void);

/* Signal handler for a fatal signal while a backend runs: stops it with
** async-signal-safe calls only, then dies of the same signal. The host
** installs it wherever stock lua would have SIG_DFL. */
void local_fatal_signal(int sig);

/* Finds unsandboxd: $UNSANDBOXD, then next to unlua (exedir), then $PATH.
** 1 with its path in out, or 0 after printing where it looked and how to
** get it. */
int local_find_server(const char *progname, const char *exedir, char *out, size_t outlen);

/* What a server announces (its stdout, or its --env-file): the execution
** API's URL and dev keys, the Control Plane's URL and this start's
** break-glass token, and (the env file) its pid. */
typedef struct {
  char url[512], pub[512], sec[512], cp_url[512], cp_token[1024], pid[32];
} local_announcement;

/* Stores the value of one "KEY=value" line in a if KEY is one of those. */
void local_take_line(const char *line, local_announcement *a);

/* Exports a's settings to the environment the library reads, with
** UNSANDBOX_LOCAL=1 and UNSANDBOXD_PID=pid. */
void local_export_config(const local_announcement *a, long pid);

/* Prints the last lines of the log at path, indented, to stderr. */
void local_print_log_tail(const char *path);

#endif
