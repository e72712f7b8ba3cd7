/*
** cp_keys: the Control Plane's API keys (cp/auth/keys.h makes and checks
** them). A row holds the SHA-256 of a key, found by the key's first
** characters; tenant_id is NULL for admin keys; permissions is a JSON
** array. Revoked and expired keys stay, and are never found.
*/
#ifndef UX_CP_TABLES_KEYS_H
#define UX_CP_TABLES_KEYS_H

#include <stddef.h>
#include <jansson.h>

#include "server/store/store.h"

int ux_apikeys_create(ux_store *st);

/* A new key: 1, or -1 store. expires_at 0 = never. */
int ux_apikeys_add(ux_store *st, const char *id, const char *tenant, const char *prefix,
                   const void *hash, size_t hashlen, const char *label, const char *permissions,
                   long long now, long long expires_at);

/* The usable keys (not revoked, not expired at now) whose prefix is
** prefix: id, tenant_id, permissions, h (the hash in lowercase hex),
** last_used_at. NULL: the store failed. */
json_t *ux_apikeys_by_prefix(ux_store *st, const char *prefix, long long now);

/* Sets last_used_at to now unless it was set less than every seconds ago. */
void ux_apikeys_touch(ux_store *st, const char *id, long long now, long long every);

/* A tenant's keys (tenant NULL: the admin keys), oldest first, without
** their hashes. NULL: the store failed. */
json_t *ux_apikeys_list(ux_store *st, const char *tenant);

/* Revokes a key (a revoked key keeps its first revocation time): rows
** changed (0 = no such key), -1 store. */
int ux_apikeys_revoke(ux_store *st, const char *id, long long now);

#endif
