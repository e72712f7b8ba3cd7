/*
** A protocol upgrade (HTTP 101) for a handler, on libmicrohttpd's upgrade
** path. The handler stays what every handler is, a blocking function on
** its own thread: it checks the request and answers errors as usual,
** then ux_req_upgrade queues the 101 and waits until libmicrohttpd hands
** the socket over (with any bytes it already read past the headers); the
** handler then owns the socket until ux_req_upgrade_close. Nothing here
** knows what protocol runs on the socket (ws_relay.c does).
*/
#ifndef UX_HTTP_UPGRADE_H
#define UX_HTTP_UPGRADE_H

#include <stddef.h>

#include "server/http/reply.h"

typedef struct ux_upgraded {
  int fd;                     /* the client's socket, non-blocking; never
                              ** close() it: ux_req_upgrade_close does */
  const unsigned char *extra; /* bytes already received after the headers */
  size_t extra_len;
  int stop_fd;                /* readable once the server stops */
} ux_upgraded;

/* Answers r with "101 Switching Protocols", "Upgrade: <protocol>" and the
** headers already added with ux_reply_header, and waits until the socket
** is handed over. 0 with *up filled; -1 when the client went away first
** (r needs nothing more), or when the server stops or an eventfd cannot
** be made (r then holds a 503 or 500 reply). */
int ux_req_upgrade(ux_req *r, const char *protocol, ux_upgraded *up);

/* Gives the socket back to libmicrohttpd, which closes it. Idempotent;
** called by the transport when a handler returns without it. */
void ux_req_upgrade_close(ux_req *r);

#endif
