/*
** What the Control Plane's object handlers share (cp/objects/routes.c: the
** /v1/storage/objects routes; cp/objects/ticket_routes.c: tickets and content;
** cp/objects/workspace_moves.c: workspace import/export): reading a storage request's owner
** and locator with the spec's replies, the transfer gate's 503, the
** replies for object store results, and the views of the spec's schemas.
*/
#ifndef UX_CP_OBJECTS_H
#define UX_CP_OBJECTS_H

#include "server/cp/cp.h"
#include "server/cp/objects/locator.h"
#include "server/cp/objects/store.h"

/* A storage request of a control-plane credential: the owner its
** identity allows (cp/objects/request.h; a refused owner is audited `object.owner`)
** and the locator from the query (from_query) or the JSON body, with its
** bucket and key. 0, or -1 with the reply set. */
int ux_cp_obj_target(ux_cp_call *c, int from_query, int for_list, ux_objloc *l,
                     char key[UX_OBJ_KEY_MAX + 1]);

/* Takes a slot of the transfer gate for the tenant c acts for
** (ux_cp_home_tenant): 0 (give it back with ux_cp_obj_gate_end), or -1
** after a 429 when that tenant holds its share, or the spec's 503 with
** retry_after_seconds 2 when the gate is full. */
int ux_cp_obj_gate(ux_cp_call *c);
void ux_cp_obj_gate_end(ux_cp_call *c);

/* The reply for an object store result other than UX_OBJ_OK: 404 "object
** not found", 503 store unavailable, 500. Returns -1. */
int ux_cp_obj_fail(ux_cp_call *c, int rc);

/* The ledger party (store/ledger.h) that stores an owner's objects, its
** tenant's ("<tenant>/<subject>"), and that tenant (tlen at least
** UX_OBJ_OWNER_MAX + 1). */
void ux_cp_obj_party(const char *owner, char *party, size_t len, char *tenant, size_t tlen);

/* ux_cp_obj_fail for a write: UX_OBJ_EQUOTA and UX_OBJ_EBUDGET become the
** platform's 429 (ux_cp_storage_refused) for tenant. Returns -1. */
int ux_cp_obj_put_fail(ux_cp_call *c, int rc, const char *tenant);

/* {scope, bucket, key} of a locator and key: the head of most replies. */
json_t *ux_cp_obj_head(const ux_objloc *l, const char *key);

/* The routes (routes.c, ticket_routes.c, workspace_moves.c) */
int ux_cp_obj_get(ux_cp_call *c);
int ux_cp_obj_post(ux_cp_call *c);
int ux_cp_obj_delete(ux_cp_call *c);
int ux_cp_obj_list(ux_cp_call *c);
int ux_cp_obj_stat(ux_cp_call *c);
int ux_cp_obj_versions(ux_cp_call *c);
int ux_cp_obj_ticket(ux_cp_call *c);
int ux_cp_content_get(ux_cp_call *c);
int ux_cp_content_put(ux_cp_call *c);
int ux_cp_obj_import(ux_cp_call *c);
int ux_cp_obj_export(ux_cp_call *c);

#endif
