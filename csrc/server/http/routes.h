/*
** Routing: a table of (method, pattern, handler). A "*" segment in a
** pattern captures an id, which must be a valid id (else 404). Handlers
** fill r->reply; the return value is unused (0 or -1 for readability).
*/
#ifndef UX_ROUTES_H
#define UX_ROUTES_H

#include "server/exec/exec_spec.h"
#include "server/exec/jobs.h"
#include "server/http/http.h"
#include "server/http/reply.h"

typedef int (*ux_handler)(ux_req *r, const char *id);

/* The execution API as a listener's router (http.h), serving srv: it
** fills r->srv, the body policy (--max-body; 413 payload_too_large for a
** larger body, before reading a declared one) and the auth headers. */
void ux_exec_router(ux_server *srv, ux_http_router *out);

/* Authenticates (except /health), applies faults, then runs the route's
** handler or answers 404/405. Always leaves a reply in r->reply. */
void ux_route(ux_req *r, const char *authorization, const char *timestamp,
              const char *signature);

/* routes_exec.c */
int ux_h_health(ux_req *r, const char *id);
int ux_h_keys_validate(ux_req *r, const char *id);
int ux_h_execute(ux_req *r, const char *id);
int ux_h_execute_async(ux_req *r, const char *id);
int ux_h_jobs_list(ux_req *r, const char *id);
int ux_h_job_get(ux_req *r, const char *id);
int ux_h_job_cancel(ux_req *r, const char *id);
int ux_h_languages(ux_req *r, const char *id);

/* routes_sessions.c */
int ux_h_sessions_list(ux_req *r, const char *id);
int ux_h_session_create(ux_req *r, const char *id);
int ux_h_session_get(ux_req *r, const char *id);
int ux_h_session_delete(ux_req *r, const char *id);
int ux_h_session_shell(ux_req *r, const char *id);
int ux_h_session_snapshot(ux_req *r, const char *id);

/* routes_services.c */
int ux_h_services_list(ux_req *r, const char *id);
int ux_h_service_create(ux_req *r, const char *id);
int ux_h_service_get(ux_req *r, const char *id);
int ux_h_service_delete(ux_req *r, const char *id);
int ux_h_service_execute(ux_req *r, const char *id);
int ux_h_service_logs(ux_req *r, const char *id);
int ux_h_service_snapshot(ux_req *r, const char *id);
/* Starts the bootstrap of the stored service doc; ux_services_resume
** starts every stored service's (start-up). */
void ux_services_start(ux_server *srv, json_t *doc);
/* ux_services_start for a service that may be deleted meanwhile (after a
** restore): the bootstrap does not outlive the row. */
void ux_services_restart(ux_server *srv, json_t *doc, const char *owner);
void ux_services_resume(ux_server *srv);

/* routes_snapshots.c */
int ux_h_snapshots_list(ux_req *r, const char *id);
int ux_h_snapshot_get(ux_req *r, const char *id);
int ux_h_snapshot_delete(ux_req *r, const char *id);
int ux_h_snapshot_restore(ux_req *r, const char *id);
int ux_h_snapshot_lock(ux_req *r, const char *id);
int ux_h_snapshot_unlock(ux_req *r, const char *id);
/* Archives a session's or service's work directory (shared by both). */
int ux_snapshot_take(ux_req *r, const char *source_type, const char *source_id);

/* Submits a job for r->owner, answering 429/503 itself when refused. */
ux_job *ux_submit(ux_req *r, ux_exec_spec *spec);

/* Creates the resource's volume DATA/<kind>s/<id> (volume.h) and places
** the request's input_files in it. 0, or -1 after setting a 400, 500 or
** 507 (disk budget used up) reply. */
int ux_make_volume(ux_req *r, const char *kind, const char *id, json_t *input_files);

/* One command run in a session's or service's directory: `command` and
** `timeout` (ms, default_ms) from the body, the network mode and vcpu from
** the resource's stored document. NULL after setting a 400/500 reply. */
ux_exec_spec *ux_command_spec(ux_req *r, const char *kind, const char *id,
                              json_t *doc, json_t *body, long default_ms);

/* Removes a deleted session's or service's volume once every run in it
** is gone (ux_volume_destroy). */
void ux_remove_volume(const ux_server *srv, const char *kind, const char *id);

/* DATA/<kind>s/<id>: the resource's volume. */
int ux_resource_dir(const ux_server *srv, const char *kind, const char *id, char *out, size_t outlen);

#endif

