/*
** Operations and identity routes of the Control Plane (spec §4.1):
** liveness, readiness, health, metrics, auth methods, logout, whoami,
** templates, monitoring.
*/
#ifndef UX_CP_OPS_H
#define UX_CP_OPS_H

#include "server/cp/cp.h"

/* The routes (ops/health.c) */
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

#endif
