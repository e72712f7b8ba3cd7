/*
** The user's lasting local server: one unsandboxd per user that outlives
** the command that started it (`un local start|stop|status`), so that a
** session made by one `un --local` command is still there for the next.
**
** Its state is under ~/.unsandbox/local/ (0700): data/ (the server's
** --data: keys, sessions, workspaces survive a restart), unsandboxd.log,
** and env, the server's own --env-file (0600: it holds keys), written once
** it listens and removed when it stops. The server listens on loopback
** only (127.0.0.1, ephemeral ports). A server is "running" when env names
** a live process whose command line has that env file: a stale file (a
** killed server) or a pid taken by another process is not mistaken for it.
** `unlua --local` and `un --local` use it when it runs (local_server_reuse).
*/
#ifndef UNLUA_LOCAL_SERVER_H
#define UNLUA_LOCAL_SERVER_H

#include <limits.h>
#include <stddef.h>

#include "host/local_backend.h"

/* Seconds `start` waits for the server's env file (a first start makes
** its data directory and checks the sandbox). */
#define LOCAL_SERVER_START_TIMEOUT_S 60
/* Seconds `stop` waits after SIGTERM before SIGKILL. */
#define LOCAL_SERVER_STOP_GRACE_S 10

typedef struct {
  char dir[PATH_MAX - 64];    /* ~/.unsandbox/local */
  char env[PATH_MAX], data[PATH_MAX], log[PATH_MAX];
  long pid;                   /* 0 when it does not run */
  local_announcement a;       /* its settings (keys included) when it runs */
} local_server;

/* Fills s's paths and, when the server runs, its pid and settings.
** Returns 1 (runs), 0 (does not), or -1 with a reason in err (no HOME, an
** env file that others may read or that another user owns). */
int local_server_probe(local_server *s, char *err, size_t errlen);

/* Starts the server in the background unless it runs. exedir: where unlua
** lives (unsandboxd is looked for as --local does). Returns 1 (started),
** 0 (it was running), -1 (err says why; the log's tail is printed). */
int local_server_start(local_server *s, const char *progname, const char *exedir,
                       char *err, size_t errlen);

/* Stops it (SIGTERM, a bounded wait, SIGKILL). Returns 1 (stopped), 0 (it
** was not running), -1 (err). */
int local_server_stop(local_server *s, char *err, size_t errlen);

/* For --local: when the lasting server runs, exports its settings (as
** local_export_config) and says so on stderr; returns 1. Returns 0 when it
** does not run (the caller starts a private one). */
int local_server_reuse(const char *progname);

/* Wipes the keys of s. */
void local_server_wipe(local_server *s);

#endif
