/*
** Request counters for GET /metrics (Prometheus text format 0.0.4), by
** route pattern and status, shared by both listeners (the Control
** Plane's and the execution API's). A fixed table under a mutex: the
** route patterns are a closed set, so it cannot grow with what clients
** send.
*/
#ifndef UX_COUNTERS_H
#define UX_COUNTERS_H

#include <stddef.h>

typedef struct ux_counters ux_counters;

ux_counters *ux_counters_new(void);
void ux_counters_free(ux_counters *m);

/* Counts one answered request; route is a pattern of a route table (a
** string literal: compared by address first). */
void ux_counters_count(ux_counters *m, const char *route, int status);

/* The counters as the Prometheus counter `family` with its HELP text, in
** a malloc'd buffer (NULL when out of memory). */
char *ux_counters_text(ux_counters *m, const char *family, const char *help, size_t *len);

#endif
