/*
** Poll schedule and failure policy (spec §5.2, §7.8).
*/
#include "core/poll.h"
#include "tests/tap.h"

int main(void) {
  static const int want[] = {300, 450, 700, 900, 650, 1600, 2000, 2000, 2000};
  unsb_poll_tracker t;
  const char *why;
  int i;

  for (i = 0; i < 9; i++) ok(unsb_poll_delay(i + 1) == want[i], "delay before poll %d is %d ms", i + 1, want[i]);
  ok(unsb_poll_delay(1000000) == 2000, "much later: 2000 ms, never cycles");
  ok(unsb_poll_delay(0) == 300 && unsb_poll_delay(-5) == 300, "attempt < 1 counts as 1");
  int total = 0;
  for (i = 1; i <= 7; i++) total += unsb_poll_delay(i);
  ok(total == 6600, "cumulative sleep before poll 7 is 6.6 s");

  /* 404: five tolerated on the schedule, the sixth fatal */
  unsb_poll_init(&t);
  for (i = 1; i <= 5; i++) {
    ok(unsb_poll_failure(&t, 404, UNSB_OK, &why) == UNSB_POLL_RETRY, "404 #%d retried", i);
    ok(unsb_poll_next_delay(&t, i + 1) == unsb_poll_delay(i + 1), "after 404 #%d the schedule goes on", i);
  }
  ok(unsb_poll_failure(&t, 404, UNSB_OK, &why) == UNSB_POLL_FATAL && why, "404 #6 is fatal");
  unsb_poll_init(&t);
  for (i = 0; i < 3; i++) unsb_poll_failure(&t, 404, UNSB_OK, NULL);
  unsb_poll_success(&t);
  for (i = 0; i < 2; i++) unsb_poll_failure(&t, 404, UNSB_OK, NULL);
  ok(unsb_poll_failure(&t, 404, UNSB_OK, NULL) == UNSB_POLL_FATAL,
     "404s count in total, across successes");

  /* 5xx and network errors: 30 consecutive with 2 s backoff, then fatal */
  unsb_poll_init(&t);
  for (i = 1; i <= 30; i++) {
    unsb_kind k = i % 3 == 0 ? UNSB_ETIMEOUT : UNSB_ETRANSPORT;
    int status = i % 2 ? 503 : 0;
    if (unsb_poll_failure(&t, status, k, NULL) != UNSB_POLL_RETRY) break;
  }
  ok(i == 31, "30 consecutive network errors and 5xx are retried");
  ok(unsb_poll_next_delay(&t, 2) == 2000, "with a 2000 ms backoff instead of the schedule");
  ok(unsb_poll_failure(&t, 500, UNSB_OK, &why) == UNSB_POLL_FATAL && why, "the 31st is fatal");

  unsb_poll_init(&t);
  for (i = 0; i < 29; i++) unsb_poll_failure(&t, 0, UNSB_ETRANSPORT, NULL);
  unsb_poll_success(&t);
  ok(unsb_poll_next_delay(&t, 3) == 700, "a success ends the backoff");
  for (i = 0; i < 30; i++) unsb_poll_failure(&t, 502, UNSB_OK, NULL);
  ok(t.errors == 30, "a success restarts the streak");
  ok(unsb_poll_failure(&t, 0, UNSB_ETRANSPORT, NULL) == UNSB_POLL_FATAL, "... up to 30 again");

  /* 404 right after a 5xx: the job was lost */
  unsb_poll_init(&t);
  ok(unsb_poll_failure(&t, 503, UNSB_OK, NULL) == UNSB_POLL_RETRY, "503 retried");
  ok(unsb_poll_failure(&t, 404, UNSB_OK, &why) == UNSB_POLL_FATAL && why, "404 after 503 is fatal");
  unsb_poll_init(&t);
  unsb_poll_failure(&t, 500, UNSB_OK, NULL);
  unsb_poll_failure(&t, 0, UNSB_ETRANSPORT, NULL);
  ok(unsb_poll_failure(&t, 404, UNSB_OK, NULL) == UNSB_POLL_FATAL,
     "404 after 5xx then a network error is still fatal");
  unsb_poll_init(&t);
  unsb_poll_failure(&t, 500, UNSB_OK, NULL);
  unsb_poll_success(&t);
  ok(unsb_poll_failure(&t, 404, UNSB_OK, NULL) == UNSB_POLL_RETRY, "404 after a success is retried");
  unsb_poll_init(&t);
  unsb_poll_failure(&t, 0, UNSB_ETRANSPORT, NULL);
  ok(unsb_poll_failure(&t, 404, UNSB_OK, NULL) == UNSB_POLL_RETRY,
     "404 after only a network error is retried");

  /* everything else is fatal */
  static const int fatal_status[] = {400, 401, 403, 409, 429, 302, 100};
  for (i = 0; i < 7; i++) {
    unsb_poll_init(&t);
    why = NULL;
    ok(unsb_poll_failure(&t, fatal_status[i], UNSB_OK, &why) == UNSB_POLL_FATAL && why,
       "status %d is fatal", fatal_status[i]);
  }
  static const unsb_kind fatal_kind[] = {UNSB_EPROTOCOL, UNSB_ECREDENTIALS, UNSB_EVALIDATION,
                                         UNSB_EINTERRUPTED};
  for (i = 0; i < 4; i++) {
    unsb_poll_init(&t);
    ok(unsb_poll_failure(&t, 0, fatal_kind[i], NULL) == UNSB_POLL_FATAL,
       "kind %s is fatal", unsb_kind_name(fatal_kind[i]));
  }
  return tap_done();
}
