/*
** Running services. A service is one long-lived sandbox (living.h) whose
** first process is its bootstrap: the script is placed at
** /tmp/bootstrap.sh inside and run by bash from the service's home, its
** stdout and stderr merged, and everything its processes write there
** (daemons it left behind included) kept in memory as it arrives, the
** last UX_SVC_LOG_CAP bytes, so logs can be read while it runs and
** nothing of the log lives in the tree the service controls. A service
** is "running" while any of its processes run (always, while it has no
** bootstrap), and "stopped" once every one has ended: its sandbox is
** then ended too. Its declared ports are forwarded from 127.0.0.1
** (forward.h) while it runs.
*/
#ifndef UX_SVC_H
#define UX_SVC_H

#include <stddef.h>
#include <jansson.h>

#include "server/server.h"

typedef struct ux_svcs ux_svcs;

#define UX_SVC_LOG_CAP (64 * 1024)
#define UX_SVC_BOOTSTRAP "/tmp/bootstrap.sh"

ux_svcs *ux_svcs_new(ux_server *srv);

/* Starts the stored service doc: its sandbox (waiting until it is ready),
** its bootstrap, its forwarded ports; a service of the same id running
** already is stopped first (a restart). env: n "NAME=value" strings its
** processes get (its env vault), taken over and freed here in every
** case. 0; UX_SVCS_NOMEM when the memory budget has no room for its
** sandbox (err says why, and so does the service's log: it is stopped);
** -1 with err. */
#define UX_SVCS_NOMEM (-2)
int ux_svcs_start(ux_svcs *s, json_t *doc, char **env, size_t n_env, char *err, size_t errlen);
/* 1 running, 0 stopped or unknown. */
int ux_svcs_running(ux_svcs *s, const char *id);
/* The bootstrap's output so far (the last UX_SVC_LOG_CAP bytes): malloc'd. */
char *ux_svcs_log(ux_svcs *s, const char *id, size_t *len);
/* [{port, url}] of the forwarded ports while it runs, else []. */
json_t *ux_svcs_urls(ux_svcs *s, const char *id);
/* Ends the service's sandbox and forgets the service. */
void ux_svcs_stop(ux_svcs *s, const char *id);
/* Its sandbox (runtime sb_id) ended by itself: why goes to the log. */
void ux_svcs_ended(ux_svcs *s, const char *id, const char *sb_id, const char *why);
/* Stops every service (shutdown). */
void ux_svcs_stop_all(ux_svcs *s);
void ux_svcs_free(ux_svcs *s);

#endif
