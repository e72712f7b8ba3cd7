/*
** The numbers that bound a listener, and the pure arithmetic the sweeper
** applies to them. Kept apart from the transport so the deadline and
** rate rules can be unit-tested without sockets or threads; every number
** is documented in docs/internals.md ("Connections").
*/
#ifndef UX_HTTP_LIMITS_H
#define UX_HTTP_LIMITS_H

#include <stddef.h>

/* Connections: at most this many per listener, fewer when RLIMIT_NOFILE
** (raised to its hard limit at start) cannot hold them plus the reserve
** the rest of the server needs (SQLite, sandboxes' pipes, pidfds). */
#define UX_HTTP_MAX_CONNECTIONS 4096u
#define UX_HTTP_FD_RESERVE 512u
#define UX_HTTP_MIN_CONNECTIONS 16u
/* The connection budget: once this fraction of the cap is open, each new
** connection closes an idle one (sweeper.c), unauthenticated first; the
** rest of the cap is headroom for connections being closed. There is no
** cap per client address: every client of a loopback server is
** 127.0.0.1, and every other 127.x address is a new one. */
#define UX_HTTP_BUDGET_HEADROOM 8u     /* one eighth */

/* libmicrohttpd's idle timeout: a connection without a byte in either
** direction for this long is closed (keep-alive included). */
#define UX_HTTP_IDLE_TIMEOUT_S 30u
/* Request line + headers must be complete this long after the
** connection was accepted, or after the first byte of a later request on
** a kept-alive connection. Fires on a trickle that resets the idle timer. */
#define UX_HTTP_HEADER_DEADLINE_MS 10000L
/* A body must average UX_HTTP_BODY_MIN_RATE bytes/s once the grace period
** is over: at t ms into the body at least RATE * (t - GRACE) / 1000 bytes.
** Time the server itself paused the body (backpressure) does not count. */
#define UX_HTTP_BODY_GRACE_MS 5000L
#define UX_HTTP_BODY_MIN_RATE (16u * 1024u)
/* How often the sweeper looks at every connection. */
#define UX_HTTP_SWEEP_MS 250L

/* Requests handled at once (one thread each); the next one gets 503. */
#define UX_HTTP_MAX_HANDLERS 512u
/* Threads beyond those that only health probes may use (a router's
** admit marks them): a burst that takes every other thread, even for
** the moment it takes to refuse it, leaves the probes answered. */
#define UX_HTTP_PROBE_RESERVE 16u
/* A request that finds every thread busy waits in line for one, at most
** this many requests for at most this long, before its 503: a burst that
** is refused (429) takes threads only for the moment of the refusal, and
** the requests of others that arrive with it wait instead of failing. */
#define UX_HTTP_MAX_WAITING 128u
#define UX_HTTP_WAIT_MS 1000L
/* ... and holding at most this much of buffered bodies together, so the
** line never keeps more memory than a couple of bodies would. */
#define UX_HTTP_WAIT_BYTES (16ull << 20)
/* A handler thread's stack: glibc's default, because handlers recurse
** (JSON, directory walks) and untouched stack pages cost no memory. */
#define UX_HTTP_HANDLER_STACK (8u << 20)
/* A handler thread that is done waits this long for the next request,
** with at most this many others (workers.c); then it ends. */
#define UX_HTTP_IDLE_MS 5000L
#define UX_HTTP_IDLE_THREADS 32u
/* libmicrohttpd's event threads: they only move bytes, handlers run on
** their own threads, so two are plenty. */
#define UX_HTTP_POOL_THREADS 2u
/* Request line and headers must fit here (431 from libmicrohttpd). */
#define UX_HTTP_CONN_MEMORY (64u * 1024u)
/* After an early reply or an oversized body, at most this much more body
** is read and thrown away before the connection is closed instead. */
#define UX_HTTP_DISCARD_MAX (16ull << 20)
/* The buffer between a streaming body and its handler, and between a
** handler's stream and the socket: the backpressure window. */
#define UX_HTTP_RING (64u * 1024u)
/* The one buffer a reply pulled from a source (ux_reply_source) holds
** per client while it reads: what a slow reader of a large document or
** object costs the server. */
#define UX_HTTP_SOURCE_BLOCK (16u * 1024u)
/* How long shutdown lets requests in flight finish. */
#define UX_HTTP_DRAIN_MS 3000L
/* After the drain: how long upgraded sockets, cut, may take to be given back. */
#define UX_HTTP_UPGRADE_DRAIN_MS 1000L

/* 1 when headers started at since_ms (0 = not started) are late at now. */
int ux_limit_headers_late(long since_ms, long now_ms, long deadline_ms);

/* Milliseconds a body has been waited for: since t0, minus the time the
** server paused it (paused_ms done, plus the pause running since
** paused_since, 0 = none). Never negative. */
long ux_limit_body_active_ms(long t0, long paused_ms, long paused_since, long now_ms);

/* 1 when `bytes` received over `active_ms` falls below the minimum
** average rate after the grace period. */
int ux_limit_body_slow(unsigned long long bytes, long active_ms, long grace_ms,
                       unsigned long rate);

/* The connection cap of one of `listeners` listeners under a NOFILE
** limit: min(UX_HTTP_MAX_CONNECTIONS, (nofile - reserve) / listeners),
** never below UX_HTTP_MIN_CONNECTIONS. */
unsigned ux_limit_conn_cap(unsigned long long nofile, unsigned listeners);

/* The connection budget of a connection cap: cap - cap/8 (at least one
** connection of headroom), at least 1. */
unsigned ux_limit_conn_budget(unsigned conn_cap);

/* A fixed-size byte ring (no allocation of its own): the backpressure
** buffer of streaming bodies and streamed replies. */
typedef struct ux_ring {
  char *buf;
  size_t cap, head, len;
} ux_ring;

/* Copies up to n bytes in; returns how many fit. */
size_t ux_ring_put(ux_ring *r, const void *src, size_t n);
/* Copies up to n bytes out; returns how many there were. */
size_t ux_ring_get(ux_ring *r, void *dst, size_t n);

#endif
