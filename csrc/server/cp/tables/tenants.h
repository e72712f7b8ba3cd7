/*
** cp_tenants and cp_owner_tenants: the tenants an administrator made, with
** their limits and status, and the owner tenants each one allows (spec
** §4.4). A tenant is never deleted (DELETE suspends it), so a tenant found
** once stays found and a check of its existence cannot go stale.
*/
#ifndef UX_CP_TABLES_TENANTS_H
#define UX_CP_TABLES_TENANTS_H

#include <jansson.h>

#include "server/store/store.h"

int ux_tenants_create(ux_store *st);

/* A new active tenant: 1 added, 0 the id exists, -1 store. */
int ux_tenants_add(ux_store *st, const char *id, const char *display_name,
                   long long max_workspaces, long long max_runtimes, long long now);

/* The admin view of a tenant: id, display_name, status, max_workspaces,
** max_runtimes and workspaces_in_use. NULL: none, or the store failed. */
json_t *ux_tenants_view(ux_store *st, const char *id);
/* Every tenant's view, by id. NULL: the store failed. */
json_t *ux_tenants_views(ux_store *st);
/* whoami's tenant: name, status, max_workspaces, used_workspaces. */
json_t *ux_tenants_usage(ux_store *st, const char *id);

/* "active" or "suspended": rows changed (0 = unknown tenant), -1 store. */
int ux_tenants_set_status(ux_store *st, const char *id, const char *status);

typedef enum {
  UX_TENANT_BROKEN = -1,        /* the store failed */
  UX_TENANT_UNKNOWN = 0,
  UX_TENANT_ACTIVE = 1,
  UX_TENANT_SUSPENDED = 2
} ux_tenant_state;

ux_tenant_state ux_tenants_state(ux_store *st, const char *id);

/* A tenant's owner tenants: owner_tenant, created_at, created_by. */
json_t *ux_owner_tenants_list(ux_store *st, const char *tenant);
/* Allows owner for tenant (idempotent): 0, or -1 store. */
int ux_owner_tenants_add(ux_store *st, const char *tenant, const char *owner,
                         const char *created_by, long long now);
/* Rows removed (0 = not allowed before), -1 store. */
int ux_owner_tenants_remove(ux_store *st, const char *tenant, const char *owner);

#endif
