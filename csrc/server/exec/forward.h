/*
** Forwarded ports of services: each port a service declares gets a
** listening socket on 127.0.0.1 (an ephemeral port, never another
** address), and every connection to it is joined to a connection made
** inside the service's own network namespace to 127.0.0.1:PORT, so a
** user can reach the web app their service runs (a documented local
** extension: GET /services/{id} lists them as `urls`). The service's
** sandbox keeps its network mode: forwarding is inbound only, from this
** machine's loopback.
**
** One thread serves every listener and connection (poll); bytes are
** relayed through 64 KiB buffers each way, so a slow side holds up only
** its own connection. A connection is admitted by the owner's callback
** (a frozen service refuses, or is thawed first when it unfreezes on
** demand); a service has at most UX_FWD_CONNS connections at once, the
** server UX_FWD_ALL. Closing a service's forwards closes its listeners
** and connections at once.
*/
#ifndef UX_EXEC_FORWARD_H
#define UX_EXEC_FORWARD_H

#include <stddef.h>

#define UX_FWD_PORTS 16        /* forwarded ports per service */
#define UX_FWD_CONNS 64        /* connections per service at once */
#define UX_FWD_ALL 1024        /* connections of the server at once */

typedef struct ux_fwd ux_fwd;

/* 1 to let a new connection of service id in, 0 to refuse it. Called on
** the forwarder's thread; must be quick. */
typedef int (*ux_fwd_admit)(void *ctx, const char *id);

ux_fwd *ux_fwd_new(ux_fwd_admit admit, void *ctx);
/* Closes everything and ends the thread. */
void ux_fwd_free(ux_fwd *f);

/* Opens a listener on 127.0.0.1 for each of the n ports (the first
** UX_FWD_PORTS) of service id, whose sandbox's network namespace netns
** is (an fd, taken in every case). host_ports[i] gets each one's port.
** Forwards of id open already are closed first. 0, or -1 with err. */
int ux_fwd_open(ux_fwd *f, const char *id, int netns, const int *ports, size_t n,
                int *host_ports, char *err, size_t errlen);

/* Closes service id's listeners and connections (none: nothing). */
void ux_fwd_close(ux_fwd *f, const char *id);

#endif
