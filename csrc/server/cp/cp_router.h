/*
** The Control Plane's router for the transport (http/http.h), and the
** path-id shapes of the spec (§2), shared by handlers that validate ids
** given in bodies.
*/
#ifndef UX_CP_ROUTER_H
#define UX_CP_ROUTER_H

#include "server/cp/cp.h"
#include "server/http/http.h"

void ux_cp_router(ux_cp *cp, ux_http_router *out);

/* 1 when v has the shape of a path id of that kind: "ws", "sb", "cp"
** (checkpoint), "tenant", "key" (16 hex), "template". */
int ux_cp_valid_param(const char *kind, const char *v);
int ux_cp_valid_tenant_id(const char *s);

/* How many routes the table has (the contract spec compares). */
int ux_cp_route_count(void);

#endif
