/*
** cp_workspaces: a workspace belongs to a tenant ('management' for the
** tenant-less admin) and, when one was bound, an acting subject ('' when
** none); principal and session are the material of its id
** (cp/workspaces/ids.h); owner is its lease's owner claim or NULL.
*/
#ifndef UX_CP_TABLES_WORKSPACES_H
#define UX_CP_TABLES_WORKSPACES_H

#include <stddef.h>
#include <jansson.h>

#include "server/store/store.h"

int ux_workspaces_create(ux_store *st);

/* The columns of a new row. */
typedef struct {
  const char *id, *tenant, *subject, *principal_kind, *principal_id, *session_id;
  const char *owner;            /* NULL: none */
} ux_workspace_row;

/* Inserts w if its tenant is under its max_workspaces (a tenant without
** a row has no limit), in one statement: 1 added, 0 over the limit, -1
** store (a row with w's id already there is a failure: look first). */
int ux_workspaces_add(ux_store *st, const ux_workspace_row *w, long long now);

/* Marks a workspace used at now, and sets its owner when owner is not
** NULL. Rows changed, -1 store. */
int ux_workspaces_touch(ux_store *st, const char *id, long long now, const char *owner);

/* Every column of a workspace (SELECT *). NULL: none, or the store failed. */
json_t *ux_workspaces_get(ux_store *st, const char *id);

/* The workspaces whose tenant, subject and id match those not NULL,
** oldest first, handed to fn one row at a time as the store reads them
** (id, tenant, created_at, last_used_at; ux_db_each): how many, or -1. */
int ux_workspaces_each(ux_store *st, const char *tenant, const char *subject, const char *id,
                       int (*fn)(void *ctx, const char *id, const char *tenant,
                                 long long created_at, long long last_used_at), void *ctx);

/* How many workspaces there are (0 when the store failed). */
long long ux_workspaces_count(ux_store *st);

/* A workspace's tenant into out: 1, or 0 when there is no such workspace
** (or the store failed). */
int ux_workspaces_tenant(ux_store *st, const char *id, char *out, size_t outlen);

/* Deletes a workspace and its sandbox records in one transaction: rows
** of cp_workspaces removed (0 = none was there), -1 store. */
int ux_workspaces_remove(ux_store *st, const char *id);

#endif
