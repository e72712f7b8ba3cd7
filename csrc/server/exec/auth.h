/*
** Request authentication (spec §3): Bearer public key, X-Timestamp within
** ±300 s, X-Signature = HMAC-SHA256 over "<ts>:<METHOD>:<path>:<body>"
** with the raw received body and the path without its query string.
*/
#ifndef UX_AUTH_H
#define UX_AUTH_H

#include "server/http/reply.h"

#define UX_AUTH_WINDOW_S 300

/* What the headers alone tell, before the body arrives: -1 with the 401
** reply when a header is missing or malformed or the timestamp is outside
** the window; 0 when the public key is known (its body may be buffered);
** 1 when it is not: the body is then thrown away unseen and the request
** ends as a bad signature does (ux_auth_check refuses r->body_discarded).
** Header values may be NULL. */
int ux_auth_headers(ux_req *r, const char *authorization, const char *timestamp,
                    const char *signature);

/* 0 when the request is authentic (owner copied into owner_buf), else a
** 401 reply is set and -1 returned. Header values may be NULL. */
int ux_auth_check(ux_req *r, const char *authorization, const char *timestamp,
                  const char *signature, char *owner_buf, size_t owner_len);

/* --lenient only: the reference CLI opens the terminal (GET
** /sessions/{id}/shell with Upgrade: websocket) with no auth header at
** all (spec §5.4). 1 when r is such a request (it needs no key: the
** session id is the capability), else 0. */
int ux_auth_unsigned_terminal(const ux_req *r, const char *authorization);

/* For such a request: 0 with owner_buf set to the owner of the session
** it names, or -1 with the same 401 as any unauthenticated request when
** there is no such session (nothing tells a prober which ids exist). */
int ux_auth_terminal_owner(ux_req *r, char *owner_buf, size_t owner_len);

#endif
