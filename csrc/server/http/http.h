/*
** The HTTP layer on libmicrohttpd: listening, body accumulation with a
** size cap, request ids, one log line per request, and turning a
** handler's ux_reply into a response. Routing lives in routes.c.
*/
#ifndef UX_HTTP_H
#define UX_HTTP_H

#include <stddef.h>

#include "server/server.h"

typedef struct ux_http ux_http;

/* Starts listening on srv->cfg.listen. url gets "http://HOST:PORT" with
** the port really bound. NULL with err set on failure. */
ux_http *ux_http_start(ux_server *srv, char *url, size_t urllen, char *err, size_t errlen);

/* Stops accepting new connections; requests in flight continue. */
void ux_http_quiesce(ux_http *h);

/* Waits for requests in flight, then frees everything. */
void ux_http_stop(ux_http *h);

#endif
