/*
** Fault injection for client tests (only with --enable-faults):
** POST /_faults arms faults; each later request is checked against them
** before it is routed. See docs/internals.md for the modes.
*/
#ifndef UX_FAULTS_H
#define UX_FAULTS_H

#include "server/http/reply.h"

typedef struct ux_faults ux_faults;

ux_faults *ux_faults_new(void);
void ux_faults_free(ux_faults *f);

/* The POST /_faults handler. */
int ux_faults_route(ux_req *r, ux_faults *f);

/* Applies a matching armed fault: returns 1 when the fault produced the
** reply (answer it as is), 0 to route the request normally (latency and
** defer act here and let it continue). */
int ux_faults_apply(ux_faults *f, ux_req *r);

#endif
