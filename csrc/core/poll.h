/*
** Job polling policy of spec §5.2 / §7.8, as data and a small state
** machine; the loop itself (sleep, request, decode) lives in the caller.
**
** Schedule: sleep before poll n (1-based) 300, 450, 700, 900, 650, 1600,
** 2000 ms, then 2000 ms for every later poll; it never cycles.
** Failures: up to 5 answers 404 in total (the job may not be registered
** yet), but a 404 after a 5xx with no success since is fatal (an API restart
** lost the in-memory job); up to 30 consecutive network errors or 5xx, each
** followed by a fixed 2 s backoff; any other status or error is fatal.
*/
#ifndef UNSB_POLL_H
#define UNSB_POLL_H

#include "core/error.h"

#define UNSB_POLL_MAX_404 5
#define UNSB_POLL_MAX_ERRORS 30
#define UNSB_POLL_BACKOFF_MS 2000

typedef struct {
  int not_found;    /* 404 answers so far */
  int errors;       /* consecutive network errors and 5xx answers */
  int after_5xx;    /* a 5xx was seen and no poll succeeded since */
  int backoff_ms;   /* replaces the schedule before the next poll; 0 = none */
} unsb_poll_tracker;

typedef enum { UNSB_POLL_RETRY, UNSB_POLL_FATAL } unsb_poll_verdict;

/* ms to sleep before poll number attempt (1-based; < 1 counts as 1). */
int unsb_poll_delay(long long attempt);

void unsb_poll_init(unsb_poll_tracker *t);

/* The delay before poll number attempt: the backoff after a network error
** or 5xx, else the schedule. */
int unsb_poll_next_delay(const unsb_poll_tracker *t, long long attempt);

/* A poll answered 2xx: the error streak and the 5xx mark end. */
void unsb_poll_success(unsb_poll_tracker *t);

/* A poll failed, with an HTTP status (status > 0) or, for status 0, an
** error kind. Returns the verdict; on UNSB_POLL_FATAL *why (if why is not
** NULL) says which rule ended the wait. */
unsb_poll_verdict unsb_poll_failure(unsb_poll_tracker *t, int status,
                                    unsb_kind kind, const char **why);

#endif
