/*
** cp_audit: the audit log's rows (cp/audit.h decides what is written).
** The table keeps only its newest rows: adding one drops those that fell
** out of the window, in the same transaction.
*/
#ifndef UX_CP_TABLES_AUDIT_H
#define UX_CP_TABLES_AUDIT_H

#include <jansson.h>

#include "server/store/store.h"

int ux_audit_create(ux_store *st);

/* One row; keep > 0 keeps the newest keep rows. 0, or -1 store. */
int ux_audit_add(ux_store *st, const char *tenant, const char *actor_kind, const char *actor_id,
                 const char *action, const char *target, const char *outcome, long long now,
                 long long keep);

/* The newest limit rows, newest first. NULL: the store failed. */
json_t *ux_audit_latest(ux_store *st, long long limit);

#endif
