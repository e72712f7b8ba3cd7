/*
** The execution API's living sandboxes: a session or a service is one
** long-lived sandbox (a runtime of server/runtime/, in a registry of this
** API's own), running `unsandboxd-agent runtime` on its volume mounted at
** /sandbox (its cwd and HOME, as before), with its network mode and vcpu.
** Commands, terminals, bootstraps and snapshots act inside it through the
** agent, so files anywhere writable (/tmp too), background processes and
** their state live from one command to the next, and every process stays
** in the sandbox's cgroup and pid namespace for its whole life.
**
** A runtime's id is fresh for every start ("lv-" and hex); the resource's
** id is its workspace id, so at most one runtime lives per session or
** service. A session's runtime lives until its ttl (counted from the
** session's creation: the runtime's hard TTL, then the session is
** removed), a DELETE or the server's stop; when it ended otherwise (its
** volume restored, out of memory, the server restarted) the next use
** starts a new one on the same volume. A service's runtime is svc.c's.
*/
#ifndef UX_EXEC_LIVING_H
#define UX_EXEC_LIVING_H

#include <jansson.h>

#include "server/runtime/runtime.h"
#include "server/server.h"

#define UX_LIVING_ROOT "/sandbox"          /* the volume, inside */
#define UX_LIVING_READY_MS 60000           /* a start waits this long at most */

/* The registry (srv->living): 0, or -1 with err. */
int ux_living_open(ux_server *srv, char *err, size_t errlen);
/* Removes the sessions whose ttl passed while they had no sandbox (the
** server was stopped): at start-up. */
void ux_living_expire_sessions(ux_server *srv);

/* Shutdown: ux_living_stop ends every runtime at once (calls in flight
** end); ux_living_close frees the registry. */
void ux_living_stop(ux_server *srv);
void ux_living_close(ux_server *srv);

/* Starts the runtime of kind ("session" or "service") id from its stored
** document (network_mode, vcpu; a session's ttl and created_at) and waits
** until its agent answers. 0; -1 with err; -2 when the memory budget or
** the registry has no room (err says why: 429); -3 a session past its
** ttl; -4 a session whose runtime stopped before it was ready. A runtime
** of id already alive is fine (0). */
int ux_living_start(ux_server *srv, const char *kind, const char *id, json_t *doc,
                    char *err, size_t errlen);

/* A handle on the live runtime of id (ux_rt_put it), or NULL. */
ux_rt *ux_living_get(ux_server *srv, const char *id);

/* The handle of a session's runtime, starting one first when it has none
** (the same results as ux_living_start); NULL with *rc and err. */
ux_rt *ux_living_session(ux_server *srv, const char *id, json_t *doc, int *rc,
                         char *err, size_t errlen);

/* Ends id's runtime and waits until its processes are gone (a DELETE, a
** redeploy). Nothing when it has none. */
void ux_living_end(ux_server *srv, const char *id);

/* Pauses (1) or resumes (0) the health checks of id's runtime while its
** sandbox is frozen (a freeze, a snapshot). */
void ux_living_pause(ux_server *srv, const char *id, int paused);

/* What id's runtime runs besides the agent, as its last health check saw
** it (-1: none yet, or no runtime). */
long ux_living_procs(ux_server *srv, const char *id);

/* A duplicate of the network namespace of id's sandbox (port forwarding),
** or -1. */
int ux_living_netns(ux_server *srv, const char *id);

#endif
