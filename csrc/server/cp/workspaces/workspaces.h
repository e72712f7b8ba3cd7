/*
** Workspaces as other Control Plane modules need them: where a
** workspace's volume lives, which workspace a request names, and the
** owner shape of §5.1.
*/
#ifndef UX_CP_WORKSPACES_H
#define UX_CP_WORKSPACES_H

#include "server/cp/cp.h"
#include "server/cp/workspaces/ids.h"

typedef struct ux_ws_target {
  char id[UX_WS_ID_LEN + 1];
  char tenant[64], subject[40], kind[130], principal[130], session_id[130];
} ux_ws_target;

/* DATA/workspaces/<ws>: the workspace's volume. */
int ux_cp_ws_dir(const ux_cp *cp, const char *ws_id, char *out, size_t outlen);

/* The workspace a body's session_id and principal name for c->id. */
int ux_cp_ws_target(ux_cp_call *c, ux_ws_target *w);

/* <tenant>/<subject>, each ^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$, not dots only. */
int ux_cp_valid_owner(const char *owner);

/* The routes (workspaces.c) */
int ux_cp_ws_list(ux_cp_call *c);
int ux_cp_ws_create(ux_cp_call *c);
int ux_cp_ws_resolve(ux_cp_call *c);
int ux_cp_ws_delete(ux_cp_call *c);

#endif
