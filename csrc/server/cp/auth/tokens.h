/*
** Scoped access tokens and object tickets of the Control Plane (spec §3):
**   b64url_nopad(compact sorted-key JSON claims) "." b64url_nopad(HMAC-SHA256(key, first part))
** Opaque to clients; the server checks the MAC in constant time before it
** reads a single claim, so a forged token costs one HMAC and reveals
** nothing. Claims always carry aud "sandbox-control-plane", kind, sub and
** exp; callers check kind, sub and the rest.
*/
#ifndef UX_CP_TOKENS_H
#define UX_CP_TOKENS_H

#include <stddef.h>
#include <jansson.h>

#define UX_TOKEN_AUD "sandbox-control-plane"

/* The token for claims (serialised with sorted keys, compact, ASCII
** only), malloc'd; NULL when out of memory. */
char *ux_token_mint(const unsigned char *key, size_t keylen, const json_t *claims);

/* The claims of a genuine token whose aud is right and whose exp is
** after now; NULL for anything else (bad shape, bad MAC, expired). */
json_t *ux_token_verify(const unsigned char *key, size_t keylen, const char *token, long now);

#endif
