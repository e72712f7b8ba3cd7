/*
** `unlua --local`: a private unsandboxd for the length of one run.
**
** local_start() finds bwrap and unsandboxd, starts the server on an
** ephemeral loopback port with a throw-away data directory and dev keys,
** and exports UNSANDBOX_URL, UNSANDBOX_PUBLIC_KEY, UNSANDBOX_SECRET_KEY,
** UNSANDBOX_LOCAL=1 and UNSANDBOXD_PID, so the library's ordinary
** configuration talks to it. local_stop() stops it and removes its data;
** it is registered with atexit(), so os.exit() in a script stops it too.
*/
#ifndef UNLUA_LOCAL_BACKEND_H
#define UNLUA_LOCAL_BACKEND_H

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

#endif
