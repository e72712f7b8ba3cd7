/*
** Clocks and the interruptible sleep (see clock.h).
*/
#include "core/clock.h"
#include "core/interrupt.h"

#include <errno.h>
#include <time.h>

int64_t unsb_now(void) { return (int64_t)time(NULL); }

int64_t unsb_monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t unsb_monotonic_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleeps the whole slice even when another signal interrupts nanosleep. */
static void sleep_slice(int64_t ms) {
  struct timespec req = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
  while (nanosleep(&req, &req) == -1 && errno == EINTR)
    if (unsb_interrupt_pending()) return;
}

int unsb_sleep_ms(int64_t ms) {
  int64_t end = unsb_monotonic_ms() + (ms > 0 ? ms : 0);
  for (;;) {
    if (unsb_interrupt_take()) return -1;
    int64_t left = end - unsb_monotonic_ms();
    if (left <= 0) return 0;
    sleep_slice(left < UNSB_SLICE_MS ? left : UNSB_SLICE_MS);
  }
}
