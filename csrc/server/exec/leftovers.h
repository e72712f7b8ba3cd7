/*
** What a crash can leave half made in the data directory: a volume whose
** session, service or workspace row was never stored (the server died
** between the two), an archive whose snapshot or image row was never
** stored, a temporary archive, the second volume of a restore, a job's
** document file whose row was never stored or is gone. None of it
** has a row, so none of it is counted in the ledger (store/ledger.h),
** and none of it would ever be removed: the start removes it, before
** anything new is made.
*/
#ifndef UX_LEFTOVERS_H
#define UX_LEFTOVERS_H

#include "server/server.h"

/* Removes them all (each removal logged); nothing whose row the store
** cannot rule out is touched. Returns how many were removed. */
int ux_leftovers_sweep(ux_server *srv);

#endif
