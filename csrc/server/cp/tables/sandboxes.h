/*
** cp_sandboxes: a record per sandbox (its id, workspace, template and
** whether it is live, released or failed); while it is live the registry
** of runtimes (cp/runtime/runtime.h) knows whether it is pending or
** running. A workspace has at most one live record, and a tenant at most
** its max_runtimes: both are checked by the insert itself.
*/
#ifndef UX_CP_TABLES_SANDBOXES_H
#define UX_CP_TABLES_SANDBOXES_H

#include <jansson.h>

#include "server/store/store.h"

int ux_sandboxes_create(ux_store *st);

/* Inserts a live record for sandbox id of workspace ws (whose tenant is
** tenant) if ws has no live one and tenant is under its max_runtimes: 1
** inserted, 0 refused (*ws_live says whether because ws has a live
** record), -1 store. One transaction. */
int ux_sandboxes_add_live(ux_store *st, const char *id, const char *ws, const char *template_id,
                          const char *tenant, long long now, long long expires_at, int *ws_live);

/* Ends a live record as "released" or "failed": rows changed, -1 store. */
int ux_sandboxes_end(ux_store *st, const char *id, const char *status, long long now);

/* Ends every live record as released (no runtime outlives the server):
** how many, -1 store. */
int ux_sandboxes_end_all(ux_store *st, long long now);

/* Deletes a record (a sandbox that never started). Rows removed, -1. */
int ux_sandboxes_remove(ux_store *st, const char *id);

/* Deletes every record of workspace ws. Rows removed, -1. */
int ux_sandboxes_forget_workspace(ux_store *st, const char *ws);

/* Every column of a record (SELECT *). NULL: none, or the store failed. */
json_t *ux_sandboxes_get(ux_store *st, const char *id);

/* The live records, oldest first, each with its workspace: id, wid (the
** workspace's id), tenant, subject. NULL: the store failed. */
json_t *ux_sandboxes_live(ux_store *st);

/* How many records are live (0 when the store failed). */
long long ux_sandboxes_live_count(ux_store *st);

#endif
