/*
** The text of a job's documents: the head every answer about a job starts
** with ({job_id, status, language, created_at, completed_at, error}) and
** the final document a finished job is answered with, written in one
** place so the pending answer, the listing, the stored row and the final
** document can never disagree on a field. The final document is written
** straight from the run's result into a writer (jsonw.h): the output's
** bytes are escaped once, into the text that is stored and sent as it is.
*/
#ifndef UX_JOB_DOCS_H
#define UX_JOB_DOCS_H

#include "server/jsonw.h"
#include "server/sandbox/runner.h"

typedef struct ux_job_head {
  const char *id, *status, *language;
  long created_at;
  long completed_at;      /* 0: not finished (null) */
  const char *error;      /* NULL or "": null */
} ux_job_head;

/* The head's fields, into an object the caller opened. */
void ux_job_write_head(ux_jw *w, const ux_job_head *h);
/* {head} as malloc'd text (len in *len). */
char *ux_job_head_text(const ux_job_head *h, size_t *len);

/* The final document: the head, then exit_code, success, stdout, stderr,
** their truncation flags, execution_time_ms, execution_time (µs),
** oom_killed, and, when wanted, artifacts [{filename, content_base64}]
** last. keep_output 0 writes the output empty and flagged truncated, and
** the artifacts as [] (a document the key's storage has no room for). */
void ux_job_write_final(ux_jw *w, const ux_job_head *h, const ux_run_result *res,
                        int want_artifacts, int keep_output);

#endif
