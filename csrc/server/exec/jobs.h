/*
** Jobs: a bounded pool of worker threads running sandbox runs. A job is
** in memory while pending or running; once terminal its final document
** is written to the store and memory forgets it, so finished results
** survive a restart and memory stays bounded by workers + queue.
*/
#ifndef UX_JOBS_H
#define UX_JOBS_H

#include <jansson.h>

#include "server/exec/exec_spec.h"
#include "server/store/store.h"

typedef struct ux_jobs ux_jobs;
typedef struct ux_job ux_job;

enum { UX_JOBS_OK = 0, UX_JOBS_FULL = 1, UX_JOBS_STOPPING = 2, UX_JOBS_ERROR = 3,
       UX_JOBS_QUOTA = 4, UX_JOBS_BUDGET = 5 };

/* workers threads and queue places, shared by every key; one key (the
** job's owner) may have at most key_running jobs running and
** key_running + key_queued active (running or queued): fair shares, see
** docs/internals.md. The run queue: at most start_slots jobs are starting
** their sandbox at once; the others wait queued, in their place (jobs.c). */
ux_jobs *ux_jobs_new(ux_store *st, int workers, int queue, int key_running, int key_queued,
                     int start_slots);

/* Queues spec (ownership passes to the pool on success). On success *out
** holds a reference the caller must release; on UX_JOBS_FULL *active and
** *limit say how busy the pool is, or, when the owner is at its share,
** how many of its own are active and its share; UX_JOBS_ERROR: the job's
** row could not be stored, and nothing was queued; UX_JOBS_QUOTA /
** UX_JOBS_BUDGET: the owner's storage quota / the server's budget has no
** room for the job's document (ux_jobs_doc_bound bytes, reserved in the
** ledger before the job is queued and settled to the document's real size
** when it ends). defer_row: a caller that waits for
** the job skips the pending row (a write on every run's path); the row is
** written when ux_jobs_wait gives out the id of an unfinished job, or
** final when the job ends. A restart thus never finds a deferred job that
** nobody had the id of. */
int ux_jobs_submit(ux_jobs *js, const char *owner, ux_exec_spec *spec, int defer_row,
                   ux_job **out, int *active, int *limit);

/* The bytes reserved for the final document of a job of spec. */
unsigned long long ux_jobs_doc_bound(const ux_exec_spec *spec);

/* Finished jobs are unknown (404, removed) `seconds` after they finished;
** 0 keeps them. The sweep that removes those nobody asks for is
** expiry.h's. */
void ux_jobs_set_retention(ux_jobs *js, long seconds);

/* Waits up to timeout_ms (< 0: until terminal): 1 when the job has
** finished (its document: ux_jobs_final), else 0; *status (may be NULL)
** its status then (a static string). */
int ux_jobs_wait(ux_jobs *js, ux_job *job, long timeout_ms, const char **status);
/* The final document of a finished job, exactly as written and stored
** (stored or not), as a spool to answer with: 0, or -1. */
int ux_jobs_final(ux_jobs *js, ux_job *job, ux_spool **out, unsigned long long *len);
void ux_jobs_release(ux_jobs *js, ux_job *job);
const char *ux_job_id(const ux_job *job);

/* The document of an active (pending or running) job of owner, as
** malloc'd JSON text; NULL when it is not active: a finished job's final
** document is in the store then, written before the job left the active
** list. */
char *ux_jobs_get_active(ux_jobs *js, const char *id, const char *owner, size_t *len);
/* Removes id's stored document when its retention has ended (the sweep
** of expiry.h may not have come by yet), so an expired job is unknown
** from the second its retention ends: read paths call it first. */
void ux_jobs_expire_due(ux_jobs *js, const char *id);
/* {"count":N,"jobs":[...]}: owner's pending and running jobs, oldest
** first, as malloc'd JSON text. */
char *ux_jobs_list(ux_jobs *js, const char *owner, size_t *len);

/* How many jobs wait for a worker, how many run now, how many of those
** are starting their sandbox and the most that may (for /metrics). */
void ux_jobs_depth(ux_jobs *js, int *queued, int *running, int *starting, int *start_slots);

/* 0 cancelled, 1 already terminal, -1 unknown. */
int ux_jobs_cancel(ux_jobs *js, const char *id, const char *owner);

/* Refuses new jobs, cancels queued and running ones, joins the workers. */
void ux_jobs_stop(ux_jobs *js);
void ux_jobs_free(ux_jobs *js);

#endif
