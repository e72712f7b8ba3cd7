/*
** Control Plane tables and secrets at start (see cp/store.h).
*/
#include "server/cp/store.h"

#include <stdio.h>

#include "server/cp/tables/meta.h"
#include "server/cp/tables/sandboxes.h"
#include "server/cp/tables/tables.h"
#include "server/fsutil.h"

int ux_cp_store_init(ux_cp *cp, char *err, size_t errlen) {
  ux_store *st = cp->srv->store;
  if (ux_cp_tables_create(st) < 0) {
    snprintf(err, errlen, "cannot create the Control Plane tables");
    return -1;
  }
  if (ux_meta_secret(st, "signing_key", cp->signing_key, sizeof cp->signing_key) < 0 ||
      ux_meta_secret(st, "workspace_key", cp->ws_key, sizeof cp->ws_key) < 0) {
    snprintf(err, errlen, "cannot load the Control Plane keys");
    return -1;
  }
  return 0;
}

int ux_cp_store_recover(ux_cp *cp) {
  return ux_sandboxes_end_all(cp->srv->store, (long long)ux_now());
}
