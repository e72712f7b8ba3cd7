/*
** Sandboxes as the rest of the Control Plane needs them.
*/
#ifndef UX_CP_SANDBOXES_H
#define UX_CP_SANDBOXES_H

#include "server/cp/cp.h"

/* runtime.h's on_end callback (ctx is the ux_cp): the record of a runtime
** that ended by itself becomes failed or released. */
void ux_cp_sandbox_ended(void *ctx, const char *sb_id, int status, const char *why);

#endif
