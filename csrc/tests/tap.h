/*
** Minimal TAP output for the C unit tests: each check prints one
** "ok N - name" or "not ok N - name" line; scripts/run-tests.sh counts
** them together with busted's TAP output.
*/
#ifndef UNSB_TAP_H
#define UNSB_TAP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int tap_count, tap_failed;

#define ok(cond, ...) do {                                            \
    int ok_ = (cond) ? 1 : 0;                                         \
    printf("%sok %d - ", ok_ ? "" : "not ", ++tap_count);             \
    printf(__VA_ARGS__);                                              \
    printf("\n");                                                     \
    if (!ok_) { tap_failed++;                                         \
      printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define is_str(got, want, ...) do {                                   \
    const char *g_ = (got), *w_ = (want);                             \
    int same_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;          \
    ok(same_, __VA_ARGS__);                                           \
    if (!same_) printf("#   got  '%s'\n#   want '%s'\n",                \
                       g_ ? g_ : "(null)", w_ ? w_ : "(null)");        \
  } while (0)

/* The tests' one pause: between two looks of a bounded wait on a
** condition, never a wait for time itself to pass (a signal resumes it). */
static __attribute__((unused)) void t_sleep_ms(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The process's thread count (/proc/self/status), or -1: how a test sees
** that a thread it caused was started, kept or joined. */
static __attribute__((unused)) int t_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
  if (f) fclose(f);
  return n;
}

#define tap_done() (printf("1..%d\n", tap_count), tap_failed ? 1 : 0)

#endif
