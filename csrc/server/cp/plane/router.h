/*
** The Control Plane's router for the transport (http/http.h): the route
** table and the pipeline of plane/router.c.
*/
#ifndef UX_CP_ROUTER_H
#define UX_CP_ROUTER_H

#include "server/cp/cp.h"
#include "server/http/http.h"

void ux_cp_router(ux_cp *cp, ux_http_router *out);

/* How many routes the table has (the contract spec compares). */
int ux_cp_route_count(void);

#endif
