/*
** The Control Plane's store at start: its tables (cp/tables/, one module
** per table, which the handlers call) and its two lasting secrets, the key
** that signs tokens and tickets and the key of workspace ids (cp_meta).
*/
#ifndef UX_CP_STORE_H
#define UX_CP_STORE_H

#include "server/cp/cp.h"

/* Creates the tables and loads (or makes) the keys into cp. 0, or -1 with
** err. */
int ux_cp_store_init(ux_cp *cp, char *err, size_t errlen);

/* Sandbox records still pending or running when the server stopped are
** marked released (runtimes are processes; none outlives the server).
** Returns how many. */
int ux_cp_store_recover(ux_cp *cp);

#endif
