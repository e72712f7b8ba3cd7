/*
** Every Control Plane table made at start (see cp/tables/tables.h).
*/
#include "server/cp/tables/tables.h"

#include "server/cp/tables/audit.h"
#include "server/cp/tables/keys.h"
#include "server/cp/tables/meta.h"
#include "server/cp/tables/sandboxes.h"
#include "server/cp/tables/templates.h"
#include "server/cp/tables/tenants.h"
#include "server/cp/tables/workspaces.h"

int ux_cp_tables_create(ux_store *st) {
  int (*const create[])(ux_store *) = {
    ux_meta_create, ux_tenants_create, ux_apikeys_create, ux_audit_create,
    ux_templates_create, ux_workspaces_create, ux_sandboxes_create,
  };
  for (size_t i = 0; i < sizeof create / sizeof create[0]; i++)
    if (create[i](st) < 0) return -1;
  return 0;
}
