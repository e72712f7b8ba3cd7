/*
** Where a session's terminal lives (spec §5.4): the client's base URL with
** its scheme mapped (http -> ws, https -> wss), the same host and port,
** and the base URL's path prefix followed by /sessions/{id}/shell. The
** handshake is signed over the route alone ("/sessions/{id}/shell"), as
** every other request of the client signs the path it appends to the base
** URL (request.c). Pure string work, kept apart from the connection so the
** rules are unit-tested without a socket.
*/
#ifndef UNSB_WS_URL_H
#define UNSB_WS_URL_H

#include <stddef.h>

#include "core/error.h"

/* Longest host name (RFC 1035: 253) with room for an IPv6 literal. */
#define UNSB_WS_HOST_MAX 256

typedef struct {
  int tls;                          /* 1 = wss (from https) */
  char host[UNSB_WS_HOST_MAX];      /* without brackets for an IPv6 literal */
  int port;                         /* explicit, else 80 / 443 */
  char *path;                       /* malloc'd: prefix + route */
  char *route;                      /* malloc'd: "/sessions/<id>/shell", what is signed */
  char *url;                        /* malloc'd: "ws[s]://host[:port]/...", for messages */
} unsb_ws_target;

/* Fills t from base (an http:// or https:// URL without query, as the
** client keeps it) and a session id (checked with unsb_valid_id). 0, or
** -1 with a validation error (bad URL, bad id, port out of range) or
** ENOMEM; t is left empty (nothing to free) on failure. */
int unsb_ws_target_make(unsb_ws_target *t, const char *base, const char *session_id,
                        unsb_error *err);

/* Frees what t holds; t may be zeroed or already freed. */
void unsb_ws_target_free(unsb_ws_target *t);

#endif
