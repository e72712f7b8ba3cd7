/*
** The event loop every HTTP engine of a program (or of one Lua state)
** shares: one poll() over the sockets of all of them, their libcurl
** timeouts, the timers of job polls and retry backoff, and a queue of
** wake-up tokens. It is shaped after libcurl's multi_socket API (the
** engines tell the loop which sockets to watch and when they next need
** a kick) rather than curl_multi_poll, because only that lets one wait
** cover many multi handles, and lets a host's own loop (poll, epoll,
** luv) wait on the same sockets: unsb_loop_fds and unsb_loop_timeout
** are all it needs.
**
** Tokens are the loop's only notion of "who waits": a transfer or a timer
** carries one, and when it ends (or a stream has bytes, or the timer is
** due) its token is queued; whoever drives the loop takes the tokens and
** wakes what waits on them (the Lua scheduler: a task). Spurious or
** repeated tokens are harmless by contract: a waiter re-checks.
**
** Single-threaded, no globals; reference-counted, because the engines
** that use a loop and the loop itself may be freed in any order (Lua's
** finalizers run in no order a binding can rely on).
*/
#ifndef UNSB_LOOP_H
#define UNSB_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct unsb_loop unsb_loop;
typedef uint64_t unsb_token;     /* 0 = none */

/* What a source (an HTTP engine) plugs into the loop. */
typedef struct unsb_loop_source unsb_loop_source;
struct unsb_loop_source {
  /* a watched socket is ready: revents as poll(2) reports them */
  void (*on_fd)(unsb_loop_source *s, int fd, short revents);
  /* due_ms has passed (the loop has reset it to -1 first) */
  void (*on_due)(unsb_loop_source *s);
  int64_t due_ms;                /* monotonic ms of the next kick, -1 none */
  unsigned round;                /* the loop's: kicked once per step */
  unsb_loop_source *prev, *next; /* the loop's list */
};

/* A socket to wait on, as unsb_loop_fds reports it: events is POLLIN
** and/or POLLOUT. */
typedef struct {
  int fd;
  short events;
} unsb_loop_fd;

unsb_loop *unsb_loop_new(unsb_error *err);
unsb_loop *unsb_loop_ref(unsb_loop *l);
/* Drops a reference; the last one frees the loop (its sources must have
** been removed by then: each holds a reference). NULL is fine. */
void unsb_loop_unref(unsb_loop *l);

/* Sources. add takes a reference on the loop; remove gives it back and
** forgets the source's sockets. */
void unsb_loop_add(unsb_loop *l, unsb_loop_source *s);
void unsb_loop_remove(unsb_loop *l, unsb_loop_source *s);
/* Watches fd for s (events POLLIN|POLLOUT), or stops (events 0). 0, or
** -1 when memory ran out (the loop then reports ENOMEM from its step). */
int unsb_loop_watch(unsb_loop *l, unsb_loop_source *s, int fd, short events);

/* Inside a source's callback (libcurl is running): nothing may drive the
** loop or start, resume or close a transfer of its engines. */
void unsb_loop_enter(unsb_loop *l);
void unsb_loop_leave(unsb_loop *l);
int unsb_loop_busy(const unsb_loop *l);

/* Timers: tok is queued once monotonic ms reaches due_ms. 0, or -1 with
** err (memory). cancel removes every timer of tok (none is fine). */
int unsb_loop_timer(unsb_loop *l, int64_t due_ms, unsb_token tok, unsb_error *err);
void unsb_loop_timer_cancel(unsb_loop *l, unsb_token tok);
size_t unsb_loop_timers(const unsb_loop *l);

/* Queues tok (skipped when it is already the last one queued). Safe
** inside libcurl callbacks. -1 when memory ran out (reported by the next
** step as ENOMEM). */
int unsb_loop_notify(unsb_loop *l, unsb_token tok);
/* Moves up to max queued tokens to out, oldest first; returns how many. */
size_t unsb_loop_take(unsb_loop *l, unsb_token *out, size_t max);
size_t unsb_loop_pending(const unsb_loop *l);

/* One round: waits at most wait_ms (0 = not at all; less when a source
** or a timer is due sooner) for any watched socket, then lets every
** ready socket's source act, kicks the sources and fires the timers that
** are due. Queued tokens do not shorten the wait: a caller that has some
** takes them first. 0, or -1 with err (validation: called from inside a
** callback; ENOMEM). An interrupted poll(2) counts as a round without
** activity; the caller checks the interrupt flag. */
int unsb_loop_step(unsb_loop *l, long wait_ms, unsb_error *err);

/* 1 when a signal cut a step's wait short since the last call (cleared):
** a caller that blocks can act on it at once (`un` resizes its terminal
** on SIGWINCH). */
int unsb_loop_signalled(unsb_loop *l);

/* 1 when fd is one of the sockets watched now (of any source). */
int unsb_loop_watching(const unsb_loop *l, int fd);

/* Milliseconds until the next source or timer is due (0: now), -1 when
** nothing is scheduled: what a host's own loop waits at most. */
long unsb_loop_timeout(const unsb_loop *l);

/* The sockets to watch right now; returns how many there are (only the
** first max are written). */
size_t unsb_loop_fds(const unsb_loop *l, unsb_loop_fd *out, size_t max);

#endif
