/*
** Id validation (spec §7.10), the interrupt flag and the interruptible sleep.
*/
#include <string.h>

#include "core/clock.h"
#include "core/ids.h"
#include "core/interrupt.h"
#include "tests/tap.h"

static int valid(const char *s) { return unsb_valid_id(s, strlen(s)); }

int main(void) {
  char buf[UNSB_ID_MAX + 2];

  ok(valid("job_abc123"), "job_abc123");
  ok(valid("unsb-session-1"), "unsb-session-1");
  ok(valid("a.b_c-D9"), "all allowed characters");
  ok(valid("..a"), "dots with other characters");
  ok(!valid(""), "empty");
  ok(!valid("."), "'.'");
  ok(!valid(".."), "'..'");
  ok(!valid("a/b"), "slash");
  ok(!valid("a b"), "blank");
  ok(!valid("a?b"), "question mark");
  ok(!valid("a%2e"), "percent");
  ok(!valid("caf\xc3\xa9"), "non-ASCII");
  ok(!unsb_valid_id("ab\0c", 4), "embedded NUL");
  ok(!unsb_valid_id(NULL, 0), "NULL");
  memset(buf, 'a', sizeof buf);
  ok(unsb_valid_id(buf, UNSB_ID_MAX), "128 characters");
  ok(!unsb_valid_id(buf, UNSB_ID_MAX + 1), "129 characters");

  /* the interrupt flag: test-and-clear */
  ok(unsb_interrupt_take() == 0, "no interrupt pending at start");
  unsb_interrupt_request();
  ok(unsb_interrupt_pending() == 1, "request sets the flag");
  ok(unsb_interrupt_take() == 1, "take reports it");
  ok(unsb_interrupt_take() == 0, "take cleared it");

  /* sleep */
  int64_t t0 = unsb_monotonic_ms();
  ok(unsb_sleep_ms(150) == 0, "sleep 150 ms");
  int64_t dt = unsb_monotonic_ms() - t0;
  /* at least the time asked; the upper bound only catches a sleep of the
  ** wrong unit (seconds), far above what a busy machine adds */
  ok(dt >= 150 && dt < 5000, "slept at least 150 ms (%lld)", (long long)dt);
  ok(unsb_sleep_ms(0) == 0 && unsb_sleep_ms(-5) == 0, "sleep 0 and negative return at once");
  unsb_interrupt_request();
  t0 = unsb_monotonic_ms();
  ok(unsb_sleep_ms(5000) == -1, "a pending interrupt ends the sleep");
  ok(unsb_monotonic_ms() - t0 < 4000, "... at once, not after its 5 s");
  ok(unsb_interrupt_take() == 0, "... and is consumed");
  ok(unsb_now() > 1700000000, "now() is unix seconds");
  return tap_done();
}
