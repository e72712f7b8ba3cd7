/*
** Counters for GET /metrics (Prometheus text format 0.0.4): requests by
** route pattern and status, plus gauges computed when scraped (runtimes
** live, workspaces). A fixed table under a mutex: the route patterns are
** a closed set, so it cannot grow with what clients send.
*/
#ifndef UX_CP_METRICS_H
#define UX_CP_METRICS_H

#include <stddef.h>

typedef struct ux_cp_metrics ux_cp_metrics;

ux_cp_metrics *ux_cp_metrics_new(void);
void ux_cp_metrics_free(ux_cp_metrics *m);

/* Counts one answered request; route is a pattern of the table (a
** string literal: compared by address first). */
void ux_cp_metrics_count(ux_cp_metrics *m, const char *route, int status);

/* Appends the counters in Prometheus text to a malloc'd buffer. */
char *ux_cp_metrics_text(ux_cp_metrics *m, size_t *len);

#endif
