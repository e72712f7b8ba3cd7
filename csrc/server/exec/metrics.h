/*
** GET /metrics of the execution API (Prometheus text format 0.0.4), so a
** user can watch a load test: requests by route pattern and status, runs
** of execute jobs by language and outcome with a latency histogram, and
** gauges read when scraped (jobs queued and running, sandboxes live,
** sandboxes waiting in the pool per shape). One table per process: a
** process serves one execution API, and the job workers that record runs
** do not know the server.
*/
#ifndef UX_EXEC_METRICS_H
#define UX_EXEC_METRICS_H

#include "server/exec/routes.h"

/* Counts one answered request of the execution API's route table. */
void ux_exec_metrics_request(const char *route, int status);

/* Records a finished execute job: its language, final status
** ("completed", "failed", "timeout", "cancelled") and run time. */
void ux_exec_metrics_run(const char *language, const char *status, long elapsed_ms);

/* Records how long a job waited queued before a worker (and, for a job
** that starts a sandbox, a start slot) took it. */
void ux_exec_metrics_wait(long waited_ms);

#endif
