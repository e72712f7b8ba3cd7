/*
** Credentials and the auth order of the Control Plane (spec §3), and the
** ownership check of +ownership routes (§4). Each function establishes
** c->id or leaves the spec's error reply and returns -1; nothing here
** has side effects beyond audit rows for denied ownership.
*/
#ifndef UX_CP_AUTH_H
#define UX_CP_AUTH_H

#include "server/cp/cp.h"

/* The credential a route takes (the TSV's column). */
typedef enum {
  UX_CRED_NONE,
  UX_CRED_CP,           /* control-plane: break-glass, admin or tenant key */
  UX_CRED_ADMIN,        /* admin key or break-glass, no X-Sandbox-Tenant */
  UX_CRED_WS_OR_CP,     /* this workspace's token, or a control-plane one */
  UX_CRED_WS,           /* this workspace's token */
  UX_CRED_SB,           /* this sandbox's token */
  UX_CRED_TICKET        /* an object ticket: checked by its handler */
} ux_cred;

/* The bearer value of r, or NULL (absent, not "Bearer ", empty or not
** ASCII). */
const char *ux_cp_bearer(const ux_req *r);

/* Establishes c->id for a route taking `cred`; for scoped credentials
** `scope_id` is the route's ws- or sb- id. 0, or -1 with the reply set. */
int ux_cp_authenticate(ux_cp_call *c, ux_cred cred, const char *scope_id);

/* c->id acts for `subject` (from X-Acting-Subject, or a body principal
** of kind "subject", which names the same workspaces): only a key with
** the act_as_subjects permission may, never the break-glass token (403);
** a subject that is not 32 lowercase hex is a 400 naming `what`. */
int ux_cp_act_for_subject(ux_cp_call *c, const char *subject, const char *what);

/* The workspace row of ws_id if c->id may see it, else NULL after a 404
** "workspace not found" and an audit row (or a 503 when the store
** broke). Scoped identities see exactly their own workspace. */
json_t *ux_cp_own_workspace(ux_cp_call *c, const char *ws_id);
/* The same for a sandbox record (its workspace must be visible). */
json_t *ux_cp_own_sandbox(ux_cp_call *c, const char *sb_id);

/* 1 when the workspace row is in c->id's namespace (tenant and acting
** subject); the tenant-less admin sees everything. */
int ux_cp_visible(const ux_identity *id, const json_t *ws_row);
/* The same rule as the columns a list selects on, for SQL: a row is
** visible when tenant, subject and id each are NULL or equal (a scoped
** token of another kind than workspace sees none: *none). */
typedef struct { const char *tenant, *subject, *id; int none; } ux_cp_visible_cols;
ux_cp_visible_cols ux_cp_visible_filter(const ux_identity *id);

/* The tenant whose namespace new workspaces of id go to: its own, the
** admin's X-Sandbox-Tenant, or UX_CP_OPERATOR_TENANT for the tenant-less
** admin (a reserved id: no tenant can be made with it). */
#define UX_CP_OPERATOR_TENANT "management"
const char *ux_cp_home_tenant(const ux_identity *id);

/* A scoped token (kind "workspace" or "sandbox") for sub, with the owner
** claim when owner is non-empty, valid for cp->token_ttl_s: malloc'd. */
char *ux_cp_scoped_token(ux_cp *cp, const char *kind, const char *sub, const char *owner);

#endif
