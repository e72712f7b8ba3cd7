/*
** Sandboxes (spec §4.1): their routes over runtimes (runtime/), and
** what the rest of the Control Plane needs of them.
*/
#ifndef UX_CP_SANDBOXES_H
#define UX_CP_SANDBOXES_H

#include "server/cp/cp.h"

/* runtime.h's on_end callback (ctx is the ux_cp): the record of a runtime
** that ended by itself becomes failed or released. */
void ux_cp_sandbox_ended(void *ctx, const char *sb_id, int status, const char *why);

/* The routes (sandboxes.c) */
int ux_cp_sb_list(ux_cp_call *c);
int ux_cp_sb_create(ux_cp_call *c);
int ux_cp_sb_get(ux_cp_call *c);
int ux_cp_sb_delete(ux_cp_call *c);
int ux_cp_sb_token(ux_cp_call *c);

#endif
