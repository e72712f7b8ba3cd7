/*
** Administration routes of the Control Plane (spec §4.4: tenants, keys,
** owner tenants, audit, templates; admin key or break-glass only) and the
** template rules the rest of the Control Plane asks about.
*/
#ifndef UX_CP_ADMIN_H
#define UX_CP_ADMIN_H

#include <jansson.h>

#include "server/cp/cp.h"

/* The routes (admin.c) */
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

/* The routes (templates.c) */
int ux_cp_admin_templates_list(ux_cp_call *c);
int ux_cp_admin_templates_put(ux_cp_call *c);
int ux_cp_admin_templates_delete(ux_cp_call *c);
/* 1 when template_id may be used by tenant ("" = none); the image in out */
int ux_cp_template_allowed(ux_cp *cp, const char *tenant, const char *template_id);
/* The template ids a tenant may use, sorted (JSON array). */
json_t *ux_cp_template_ids(ux_cp *cp, const char *tenant);

#endif
