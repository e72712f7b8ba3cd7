/*
** Running services: each service's bootstrap is one long sandbox run
** (no ttl) on a background thread. A service is "running" while its
** bootstrap runs, or always when it has none; "stopped" once the
** bootstrap has exited. The bootstrap's output (stdout and stderr, in
** order) is kept in memory as it arrives, its last UX_SVC_LOG_CAP bytes,
** so logs can be read while it runs and nothing of the log lives in the
** tree the service controls (a log file there could become a FIFO or a
** symlink under the reader).
*/
#ifndef UX_SVC_H
#define UX_SVC_H

#include <stddef.h>

typedef struct ux_svcs ux_svcs;

#define UX_SVC_LOG_CAP (64 * 1024)

ux_svcs *ux_svcs_new(void);

/* Starts service id (bootstrap NULL or "" = none) in the volume dir,
** whose use the bootstrap holds while it runs; a bootstrap already
** running for id is stopped (a restart). env: n "NAME=value" strings the
** bootstrap gets (its env vault), taken over and freed here in every
** case. The bootstrap's memory is claimed from the budget (membudget.h)
** while it runs, taking over the claim of the bootstrap it replaces. 0;
** UX_SVCS_NOMEM when the budget has no room (err says why, and so does the
** service's log: it is stopped); -1. */
#define UX_SVCS_NOMEM (-2)
int ux_svcs_start(ux_svcs *s, const char *id, const char *bootstrap,
                  const char *dir, int network, int vcpu, char **env, size_t n_env,
                  char *err, size_t errlen);
/* 1 running, 0 stopped or unknown. */
int ux_svcs_running(ux_svcs *s, const char *id);
/* The bootstrap's output so far (the last UX_SVC_LOG_CAP bytes): malloc'd. */
char *ux_svcs_log(ux_svcs *s, const char *id, size_t *len);
/* Kills the bootstrap and forgets the service. */
void ux_svcs_stop(ux_svcs *s, const char *id);
/* Kills every bootstrap and joins every thread (shutdown). */
void ux_svcs_stop_all(ux_svcs *s);
void ux_svcs_free(ux_svcs *s);

#endif
