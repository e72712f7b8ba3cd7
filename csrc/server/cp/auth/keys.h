/*
** API keys of the Control Plane (spec §3): sk_<urlsafe 9 B>_<scope>_<urlsafe
** 32 B>, scope the tenant id or "admin". Only the SHA-256 of a key is
** stored; a presented key is found by its first 12 characters and its hash
** compared in constant time. Revoked and expired keys are unknown.
*/
#ifndef UX_CP_KEYS_H
#define UX_CP_KEYS_H

#include <jansson.h>

#include "server/cp/cp.h"

/* Issues a key for tenant (NULL = an admin key) and returns the
** IssuedApiKey reply (the plaintext appears there only), or NULL when
** the store failed. expires_at 0 = never. */
json_t *ux_cp_key_issue(ux_cp *cp, const char *tenant, const char *label,
                        int act_as_subjects, long long expires_at);

/* The key row (id, tenant_id, permissions, ...) of a presented bearer
** value, or NULL: *broken is set when the store failed (503, not 401).
** Writes last_used_at at most every 300 s. */
json_t *ux_cp_key_find(ux_cp *cp, const char *bearer, int *broken);

/* The key list of a tenant (NULL: admin keys) as the API shows it. */
json_t *ux_cp_key_list(ux_cp *cp, const char *tenant);

#endif
