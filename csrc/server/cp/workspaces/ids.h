/*
** Workspace ids (spec §5.1): "ws-" + the first 12 hex characters of
** HMAC-SHA256(server key, material). The material keeps tenant,
** principal and session apart, with ':' and '\' escaped in each field so
** no two different triples can produce the same material.
*/
#ifndef UX_CP_WORKSPACE_IDS_H
#define UX_CP_WORKSPACE_IDS_H

#include <stddef.h>

#define UX_WS_ID_LEN 15   /* "ws-" + 12 hex */

/* "workspace:<session_id>" (no tenant) or
** "ws:v2:<tenant>:<kind>:<principal_id>:<session_id>": malloc'd. */
char *ux_workspace_material(const char *tenant, const char *principal_kind,
                            const char *principal_id, const char *session_id);

/* Writes the id of material to out (UX_WS_ID_LEN + 1 bytes): 0 or -1. */
int ux_workspace_id(const unsigned char *key, size_t keylen, const char *material,
                    char out[UX_WS_ID_LEN + 1]);

#endif
