/*
** The Control Plane's route handlers, by resource file. Each takes the
** call the router prepared (cp.h) and leaves the reply.
*/
#ifndef UX_CP_HANDLERS_H
#define UX_CP_HANDLERS_H

#include "server/cp/cp.h"

/* cp_health.c: operations and identity */
int ux_cp_livez(ux_cp_call *c);
int ux_cp_readyz(ux_cp_call *c);
int ux_cp_healthz(ux_cp_call *c);
int ux_cp_metrics_route(ux_cp_call *c);
int ux_cp_auth_methods(ux_cp_call *c);
int ux_cp_not_emulated(ux_cp_call *c);
int ux_cp_logout(ux_cp_call *c);
int ux_cp_whoami(ux_cp_call *c);
int ux_cp_templates(ux_cp_call *c);
int ux_cp_monitoring(ux_cp_call *c);

/* cp_workspaces.c */
int ux_cp_ws_list(ux_cp_call *c);
int ux_cp_ws_create(ux_cp_call *c);
int ux_cp_ws_resolve(ux_cp_call *c);
int ux_cp_ws_delete(ux_cp_call *c);

/* cp_checkpoints.c */
int ux_cp_checkpoint_list(ux_cp_call *c);
int ux_cp_checkpoint_create(ux_cp_call *c);
int ux_cp_checkpoint_restore(ux_cp_call *c);
int ux_cp_checkpoint_delete(ux_cp_call *c);

/* cp_sandboxes.c */
int ux_cp_sb_list(ux_cp_call *c);
int ux_cp_sb_create(ux_cp_call *c);
int ux_cp_sb_get(ux_cp_call *c);
int ux_cp_sb_delete(ux_cp_call *c);
int ux_cp_sb_token(ux_cp_call *c);

/* cp_admin.c: tenants, keys, owner tenants, audit */
int ux_cp_tenants_list(ux_cp_call *c);
int ux_cp_tenants_create(ux_cp_call *c);
int ux_cp_tenant_suspend(ux_cp_call *c);
int ux_cp_tenant_status(ux_cp_call *c);
int ux_cp_tenant_keys_list(ux_cp_call *c);
int ux_cp_tenant_keys_create(ux_cp_call *c);
int ux_cp_admin_keys_list(ux_cp_call *c);
int ux_cp_admin_keys_create(ux_cp_call *c);
int ux_cp_key_revoke(ux_cp_call *c);
int ux_cp_owner_tenants_list(ux_cp_call *c);
int ux_cp_owner_tenants_add(ux_cp_call *c);
int ux_cp_owner_tenants_revoke(ux_cp_call *c);
int ux_cp_audit_list(ux_cp_call *c);

/* cp_objects.c, cp_tickets.c, cp_objws.c: object storage */
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

/* cp_templates.c */
int ux_cp_admin_templates_list(ux_cp_call *c);
int ux_cp_admin_templates_put(ux_cp_call *c);
int ux_cp_admin_templates_delete(ux_cp_call *c);
/* 1 when template_id may be used by tenant ("" = none); the image in out */
int ux_cp_template_allowed(ux_cp *cp, const char *tenant, const char *template_id);
/* The template ids a tenant may use, sorted (JSON array). */
json_t *ux_cp_template_ids(ux_cp *cp, const char *tenant);

#endif
