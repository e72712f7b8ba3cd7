/*
** Fault injection for client tests (only with --enable-faults):
** POST /_faults arms faults; each later request is checked against them
** before it is routed. See docs/internals.md for the modes. The
** transport's own test routes (streamed bodies and replies, /_faults/...)
** live in faults_stream.c and count what they saw here.
*/
#ifndef UX_FAULTS_H
#define UX_FAULTS_H

#include "server/http/reply.h"

typedef struct ux_faults ux_faults;

ux_faults *ux_faults_new(void);
void ux_faults_free(ux_faults *f);

/* The POST /_faults handler. */
int ux_faults_route(ux_req *r, ux_faults *f);

/* The body limit of the streaming-body test route (the Control Plane's
** largest object). */
#define UX_FAULTS_STREAM_MAX (64ull << 20)

/* Counters of the streaming test routes. */
enum { UX_FAULTS_STARTED, UX_FAULTS_COMPLETED, UX_FAULTS_GONE, UX_FAULTS_NSTATS };
void ux_faults_count(ux_faults *f, int stat);
/* {"streams_started","streams_completed","streams_gone","gone_at_ms","now_ms"} */
json_t *ux_faults_stats_json(ux_faults *f);

/* faults_stream.c: PUT /_faults/echo-hash, POST /_faults/stream,
** GET /_faults/stats. */
int ux_faults_echo_hash(ux_req *r, const char *id);
int ux_faults_stream(ux_req *r, const char *id);
int ux_faults_stats(ux_req *r, const char *id);

/* Applies a matching armed fault: returns 1 when the fault produced the
** reply (answer it as is), 0 to route the request normally (latency and
** defer act here and let it continue). */
int ux_faults_apply(ux_faults *f, ux_req *r);

#endif
