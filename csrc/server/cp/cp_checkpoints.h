/*
** Checkpoints as the rest of the Control Plane needs them (the routes are
** in cp_handlers.h).
*/
#ifndef UX_CP_CHECKPOINTS_H
#define UX_CP_CHECKPOINTS_H

#include "server/cp/cp.h"

/* Removes every checkpoint of workspace ws with all its versions (a
** workspace DELETE with ?purge): how many, or -1 when the store failed. */
long long ux_cp_checkpoints_purge(ux_cp *cp, const char *ws);

#endif
