/*
** Response header values (core/headers.h): names matched without case,
** values trimmed, and Retry-After from a hostile server clamped or
** ignored: huge delays, far-future dates, signs, fractions, garbage.
*/
#include <string.h>

#include "core/headers.h"
#include "tests/tap.h"

#define RA(s, now) unsb_retry_after((s), strlen(s), (now))

static void test_values(void) {
  size_t n = 0;
  const char *line = "x-request-id:  abc \r\n";
  const char *v = unsb_header_value(line, strlen(line), "X-Request-Id", &n);
  ok(v && n == 3 && !memcmp(v, "abc", 3), "name without case, value trimmed");
  line = "X-Request-Idx: abc\r\n";
  ok(!unsb_header_value(line, strlen(line), "X-Request-Id", &n), "a longer name is another header");
  line = "X-Request-Id\r\n";
  ok(!unsb_header_value(line, strlen(line), "X-Request-Id", &n), "no colon: no value");
  line = "Retry-After:\r\n";
  ok(unsb_header_value(line, strlen(line), "Retry-After", &n) && n == 0, "an empty value");
}

static void test_retry_after(void) {
  const int64_t now = 1767225600;              /* 2026-01-01 00:00:00 UTC */
  ok(RA("120", now) == 120, "delta seconds");
  ok(RA("0", now) == 0, "zero");
  ok(RA("86400", now) == UNSB_RETRY_AFTER_MAX, "exactly the cap");
  ok(RA("86401", now) == UNSB_RETRY_AFTER_MAX, "over the cap: the cap");
  ok(RA("9223372036854775807", now) == UNSB_RETRY_AFTER_MAX, "2^63-1: the cap");
  ok(RA("99999999999999999999999999999", now) == UNSB_RETRY_AFTER_MAX, "beyond 64 bits: the cap");
  ok(RA("00000000000000000000000000007", now) == 7, "leading zeros");
  ok(RA("-5", now) == -1, "a sign is not a delay");
  ok(RA("+5", now) == -1, "a plus sign neither");
  ok(RA("1.5", now) == -1, "no fractions");
  ok(RA("5 6", now) == -1, "no blanks inside");
  ok(RA("soon", now) == -1, "garbage is ignored");
  ok(RA("", now) == -1, "empty is ignored");
  ok(unsb_retry_after("5\0", 2, now) == -1, "a NUL inside is ignored");
  ok(unsb_retry_after(NULL, 0, now) == -1, "NULL is ignored");
  ok(RA("Thu, 01 Jan 2026 00:01:00 GMT", now) == 60, "an HTTP date a minute ahead");
  ok(RA("Thursday, 01-Jan-26 00:00:30 GMT", now) == 30, "the RFC 850 form");
  ok(RA("Wed, 31 Dec 2025 23:00:00 GMT", now) == 0, "a past date: now");
  ok(RA("Fri, 31 Dec 9999 23:59:59 GMT", now) == UNSB_RETRY_AFTER_MAX, "a far-future date: the cap");
  ok(RA("Thu, 01 Jan 2026 24:99:99 GMT", now) == -1, "an impossible date is ignored");
  char big[400];
  memset(big, '9', sizeof big);
  ok(unsb_retry_after(big, sizeof big, now) == UNSB_RETRY_AFTER_MAX, "400 digits: the cap");
  memcpy(big, "Thu, ", 5);
  ok(unsb_retry_after(big, sizeof big, now) == -1, "an overlong date is ignored");
}

int main(void) {
  test_values();
  test_retry_after();
  return tap_done();
}
