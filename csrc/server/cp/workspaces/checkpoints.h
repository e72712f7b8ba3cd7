/*
** Checkpoints (spec §4.1): their routes, and what the rest of the Control
** Plane needs of them.
*/
#ifndef UX_CP_CHECKPOINTS_H
#define UX_CP_CHECKPOINTS_H

#include "server/cp/cp.h"

/* Removes every checkpoint of workspace ws with all its versions (a
** workspace DELETE with ?purge): how many, or -1 when the store failed. */
long long ux_cp_checkpoints_purge(ux_cp *cp, const char *ws);

/* The routes (checkpoints.c) */
int ux_cp_checkpoint_list(ux_cp_call *c);
int ux_cp_checkpoint_create(ux_cp_call *c);
int ux_cp_checkpoint_restore(ux_cp_call *c);
int ux_cp_checkpoint_delete(ux_cp_call *c);

#endif
