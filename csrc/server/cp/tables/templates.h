/*
** cp_templates: the templates administrators added, for every tenant
** (tenant_id "*") or for one (cp/admin/templates.c decides which are
** usable: the built-in one, and those whose image a configured registry
** serves).
*/
#ifndef UX_CP_TABLES_TEMPLATES_H
#define UX_CP_TABLES_TEMPLATES_H

#include <jansson.h>

#include "server/store/store.h"

int ux_templates_create(ux_store *st);

/* template_id and image of the templates of every tenant and of tenant
** (NULL or "": every tenant's only). NULL: the store failed. */
json_t *ux_templates_of(ux_store *st, const char *tenant);

/* Every row (tenant_id, template_id, image, created_at, created_by) by
** tenant and id. NULL: the store failed. */
json_t *ux_templates_all(ux_store *st);

/* Adds or replaces (tenant, id): 1, or -1 store. */
int ux_templates_put(ux_store *st, const char *tenant, const char *id, const char *image,
                     long long now, const char *created_by);

/* Rows removed (0 = none was there), -1 store. */
int ux_templates_remove(ux_store *st, const char *tenant, const char *id);

#endif
