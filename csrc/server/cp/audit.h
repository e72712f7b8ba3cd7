/*
** The audit log of the Control Plane (GET /v1/admin/audit): one row per
** administrative action and per denied access. Writing it never fails a
** request (a failure is logged); identical denials (same actor, action
** and target) are written at most once per 60 s, and the table keeps
** only its newest --cp-audit-rows rows, so a prober cannot flood it.
*/
#ifndef UX_CP_AUDIT_H
#define UX_CP_AUDIT_H

#include "server/cp/cp.h"

void ux_cp_audit(ux_cp *cp, const ux_identity *id, const char *action,
                 const char *target, const char *outcome);

#endif
