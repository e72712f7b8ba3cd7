/*
** Time for the client: wall-clock seconds (X-Timestamp, cache ages), a
** monotonic millisecond clock (deadlines that survive clock changes), and
** an interruptible sleep.
*/
#ifndef UNSB_CLOCK_H
#define UNSB_CLOCK_H

#include <stdint.h>

/* The longest single wait of any blocking core call, so Ctrl-C is noticed
** within this many milliseconds. */
#define UNSB_SLICE_MS 100

int64_t unsb_now(void);
int64_t unsb_monotonic_ms(void);
int64_t unsb_monotonic_us(void);   /* the same clock in microseconds (timing) */

/* Sleeps ms milliseconds in slices of at most UNSB_SLICE_MS, consuming the
** interrupt flag between slices. Returns 0, or -1 when interrupted. */
int unsb_sleep_ms(int64_t ms);

#endif
