/*
** Finished jobs expire: their documents (output and artifacts kept in
** the store) are removed `retention` seconds after they finished, and
** their bytes go back to their key's quota (the ledger's items go with
** the rows). A read finds an expired job unknown at once (jobs.c); this
** thread removes the ones nobody asks for, every few seconds.
*/
#ifndef UX_EXPIRY_H
#define UX_EXPIRY_H

#include <jansson.h>

#include "server/store/store.h"

typedef struct ux_expiry ux_expiry;

/* Starts the sweep (retention_s > 0): NULL when no thread could be made. */
ux_expiry *ux_expiry_start(ux_store *st, long retention_s);
/* Stops and joins it (NULL is fine). */
void ux_expiry_stop(ux_expiry *x);

/* 1 when the stored job document doc has expired at now. */
int ux_job_expired(const json_t *doc, long retention_s, long now);

/* How often the sweep runs for a retention: a quarter of it, between 1
** and 60 seconds. */
long ux_expiry_interval(long retention_s);

#endif
