/*
** Poll schedule and failure tolerance (see poll.h).
*/
#include "core/poll.h"

#include <stddef.h>

static const int SCHEDULE[] = {300, 450, 700, 900, 650, 1600, 2000};
#define N_SCHEDULE ((long long)(sizeof SCHEDULE / sizeof SCHEDULE[0]))

int unsb_poll_delay(long long attempt) {
  if (attempt < 1) attempt = 1;
  return attempt > N_SCHEDULE ? SCHEDULE[N_SCHEDULE - 1] : SCHEDULE[attempt - 1];
}

void unsb_poll_init(unsb_poll_tracker *t) {
  t->not_found = t->errors = t->after_5xx = t->backoff_ms = 0;
}

int unsb_poll_next_delay(const unsb_poll_tracker *t, long long attempt) {
  return t->backoff_ms > 0 ? t->backoff_ms : unsb_poll_delay(attempt);
}

void unsb_poll_success(unsb_poll_tracker *t) {
  t->errors = 0;
  t->after_5xx = 0;
  t->backoff_ms = 0;
}

static unsb_poll_verdict fatal(const char **why, const char *reason) {
  if (why) *why = reason;
  return UNSB_POLL_FATAL;
}

/* A network error or 5xx: one more in the streak, then the fixed backoff. */
static unsb_poll_verdict transient(unsb_poll_tracker *t, const char **why) {
  if (++t->errors > UNSB_POLL_MAX_ERRORS)
    return fatal(why, "more than 30 consecutive network or server errors while polling");
  t->backoff_ms = UNSB_POLL_BACKOFF_MS;
  return UNSB_POLL_RETRY;
}

unsb_poll_verdict unsb_poll_failure(unsb_poll_tracker *t, int status,
                                    unsb_kind kind, const char **why) {
  if (why) *why = NULL;
  if (status == 404) {
    if (t->after_5xx)
      return fatal(why, "job unknown after a server error: it was lost");
    if (++t->not_found > UNSB_POLL_MAX_404)
      return fatal(why, "job still unknown after 5 polls answered 404");
    t->errors = 0;              /* a 404 is an answer: the streak is over */
    t->backoff_ms = 0;          /* the job may appear soon: keep the schedule */
    return UNSB_POLL_RETRY;
  }
  if (status >= 500 && status <= 599) {
    t->after_5xx = 1;
    return transient(t, why);
  }
  if (status > 0)
    return fatal(why, status >= 400 && status <= 499
                      ? "the server refused the poll"
                      : "unexpected HTTP status while polling");
  if (kind == UNSB_ETRANSPORT || kind == UNSB_ETIMEOUT)
    return transient(t, why);
  return fatal(why, "error that polling does not retry");
}
