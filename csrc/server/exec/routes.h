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
int ux_h_metrics(ux_req *r, const char *id);    /* exec/metrics.c */
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

/* Stores a new session whose volume exists (create, clone) and answers
** 201; a failure removes the volume and answers 500. */
int ux_session_store(ux_req *r, const char *id, const char *shell, const char *mux, int net,
                     long vcpu, long ttl);
/* 0 when the shell (and the multiplexer, NULL: none) is available here
** (shells.h), else -1 after a 400 that lists what is. */
int ux_check_shell(ux_req *r, const char *shell, const char *mux);

/* sessions_power.c */
int ux_h_session_freeze(ux_req *r, const char *id);
int ux_h_session_unfreeze(ux_req *r, const char *id);
int ux_h_session_boost(ux_req *r, const char *id);
int ux_h_session_unboost(ux_req *r, const char *id);
/* Freezes (1) or thaws (0) every run in the volume of kind/id (runner.h):
** how many runs, or -1 (the volume is gone, or the freezer failed; a
** failed freeze is thawed again). */
int ux_workdir_freeze(ux_server *srv, const char *kind, const char *id, int frozen);

/* routes_services.c */
int ux_h_services_list(ux_req *r, const char *id);
int ux_h_service_create(ux_req *r, const char *id);
int ux_h_service_get(ux_req *r, const char *id);
int ux_h_service_delete(ux_req *r, const char *id);
int ux_h_service_execute(ux_req *r, const char *id);
int ux_h_service_logs(ux_req *r, const char *id);
int ux_h_service_snapshot(ux_req *r, const char *id);
/* Starts the bootstrap of the stored service doc; ux_services_resume
** starts every stored service's (start-up). 0; UX_SVCS_NOMEM (svc.h) when
** the memory budget has no room for it (err says why); -1. */
int ux_services_start(ux_server *srv, json_t *doc, char *err, size_t errlen);
/* ux_services_start for a service that may be deleted meanwhile (after a
** restore): the bootstrap does not outlive the row. Same results. */
int ux_services_restart(ux_server *srv, json_t *doc, const char *owner, char *err, size_t errlen);
void ux_services_resume(ux_server *srv);

/* A new service's settings, validated (create, clone, image spawn). */
typedef struct ux_service_fields {
  const char *name, *script;  /* NULL: the id; no bootstrap */
  int net;
  long vcpu;
  int unfreeze_on_demand;
  json_t *ports, *domains;    /* validated arrays, or NULL */
} ux_service_fields;
/* Stores and starts a new service whose volume exists, answering 201; a
** failure undoes the row and the volume and answers 500. */
int ux_service_store(ux_req *r, const char *id, const ux_service_fields *f);

/* An optional array (NULL or null is fine) whose items are all ports
** 1-65535 (ints) or all strings: 0, or -1 after a 400. */
int ux_check_array(ux_req *r, json_t *v, const char *key, int ints);

/* services_admin.c */
int ux_h_service_freeze(ux_req *r, const char *id);
int ux_h_service_unfreeze(ux_req *r, const char *id);
int ux_h_service_lock(ux_req *r, const char *id);
int ux_h_service_unlock(ux_req *r, const char *id);
int ux_h_service_patch(ux_req *r, const char *id);
int ux_h_service_domains(ux_req *r, const char *id);
int ux_h_service_redeploy(ux_req *r, const char *id);
/* Unfreezes service id of owner (unfreeze_on_demand): 0, or -1. */
int ux_service_thaw(ux_server *srv, const char *id, const char *owner);

/* envvault.c */
int ux_h_service_env_get(ux_req *r, const char *id);
int ux_h_service_env_put(ux_req *r, const char *id);
int ux_h_service_env_post(ux_req *r, const char *id);
int ux_h_service_env_export(ux_req *r, const char *id);
int ux_h_service_env_delete(ux_req *r, const char *id);
/* The variables of the service doc's env vault: 0 with *env NULL when it
** has none, 0 with n malloc'd strings, or -1 (it does not open; logged). */
int ux_vault_service_env(ux_server *srv, json_t *doc, char ***env, size_t *n);

/* routes_snapshots.c */
int ux_h_snapshots_list(ux_req *r, const char *id);
int ux_h_snapshot_get(ux_req *r, const char *id);
int ux_h_snapshot_delete(ux_req *r, const char *id);
int ux_h_snapshot_restore(ux_req *r, const char *id);
int ux_h_snapshot_lock(ux_req *r, const char *id);
int ux_h_snapshot_unlock(ux_req *r, const char *id);
/* snapshots_clone.c */
int ux_h_snapshot_create(ux_req *r, const char *id);
int ux_h_snapshot_clone(ux_req *r, const char *id);
/* (archives of volumes and restores from them: exec/archives.h) */
/* 1 when a session's or service's document says it is frozen. */
int ux_resource_frozen(const json_t *doc);
/* DATA/snapshots/<id>.tar.gz. */
int ux_snapshot_archive_path(ux_req *r, const char *id, char *out, size_t len);
/* Archives a session's or service's work directory (shared by both). */
int ux_snapshot_take(ux_req *r, const char *source_type, const char *source_id);

/* 429 memory_limit_reached with Retry-After: 1 for a run whose memory
** the budget cannot hold now (why: ux_mem_claim's text); returns -1. */
int ux_reply_no_memory(ux_req *r, const char *why);

/* 200 {"count":N,"<name>":[...]}: the array is the text of w (jsonw.h,
** an array of n values the handler wrote as the store read them), taken. */
struct ux_jw;
int ux_reply_list(ux_req *r, const char *name, struct ux_jw *w, int n);

/* 200 with the document of finished job (which the caller still holds):
** the bytes it was written as, pulled as the client reads them (a slow
** reader of a large one holds a small buffer, not the document). */
int ux_reply_finished_job(ux_req *r, ux_job *job);

/* Submits a job for r->owner, answering 429/503/507 itself when refused (also
** when the lasting claims leave its run's memory no room: ux_mem_fits). */
ux_job *ux_submit(ux_req *r, ux_exec_spec *spec, int defer_row);

/* Answers the 507 insufficient_storage of a refused ledger reservation
** (ledger.h) of bytes for r's key; 500 for UX_LEDGER_ERROR. */
int ux_reply_storage(ux_req *r, int refusal, unsigned long long bytes);
/* What party (NULL: everyone, with the budget and quotas) stores, by kind. */
json_t *ux_storage_json(ux_server *srv, const char *party);

/* Creates the resource's volume DATA/<kind>s/<id> (volume.h), charged to
** r's key in the ledger (a service's log too), and places the request's
** input_files in it. 0, or -1 after setting a 400, 500 or 507 (the key's
** quota or the server's budget has no room) reply. */
int ux_make_volume(ux_req *r, const char *kind, const char *id, json_t *input_files);

/* One command run inside a session's or service's living sandbox
** (inside.h): `command` and `timeout` (ms, default_ms) from the body; a
** session's stored document lets its sandbox be started again when it has
** none. NULL after setting a 400 reply. */
ux_exec_spec *ux_command_spec(ux_req *r, const char *kind, const char *id,
                              json_t *doc, json_t *body, long default_ms);


/* GET /sessions/{id}/shell: the WebSocket terminal (exec/terminal.c). */
int ux_h_session_terminal(ux_req *r, const char *id);

/* Removes a deleted session's or service's volume once every run in it
** is gone (ux_volume_destroy), and the volume's ledger items when its row
** was never stored (a stored row's deletion drops them itself). */
void ux_remove_volume(const ux_server *srv, const char *kind, const char *id);

/* DATA/<kind>s/<id>: the resource's volume. */
int ux_resource_dir(const ux_server *srv, const char *kind, const char *id, char *out, size_t outlen);

#endif

