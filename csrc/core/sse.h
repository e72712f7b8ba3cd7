/*
** Server-Sent Events parser (WHATWG HTML "Interpreting an event stream";
** Control Plane spec §5.5, §7.11), incremental: bytes go in as they come
** off the socket, in any chunking, and the same events come out.
**
** Pull, not push: unsb_sse_step consumes input only up to the end of the
** next event and hands that event back, so a caller that cannot let a
** callback run in the middle (the Lua binding pushes values that may
** raise) loops over it; unsb_sse_feed is the callback form for C callers
** (the HTTP engine's streaming transfers).
**
** Rules, with the two places where this parser differs from the standard:
**  - lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF
**    at the start of the next are one line end); one leading UTF-8 BOM of
**    the stream is dropped; bytes are never decoded or altered otherwise;
**  - "field: value": exactly one space after the colon is dropped, as the
**    standard says (spec §7.11's "leading spaces dropped" describes the
**    reference SDK, whose JSON payloads are the same either way); a line
**    without a colon is a field with an empty value; ':' starts a comment;
**  - data lines accumulate joined by "\n"; event sets the type (default
**    "message"); id sets the last event id unless its value has a NUL (the
**    id persists across events); retry with only ASCII digits sets the
**    reconnection time (values above UNSB_SSE_RETRY_MAX are ignored);
**    other fields are ignored;
**  - a blank line dispatches; an event with no data is not dispatched;
**  - DIFFERENCE 1: at the end of the stream (unsb_sse_finish) an unfinished
**    last line is processed and a pending event is dispatched (§7.11:
**    "dispatch on blank line/EOF"); the standard discards it;
**  - DIFFERENCE 2: caps. A line longer than max_line bytes or event data
**    longer than max_event bytes is an error (kind protocol) and the parser
**    stays failed: memory is bounded by about 3 * max_line + max_event.
*/
#ifndef UNSB_SSE_H
#define UNSB_SSE_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_SSE_DEFAULT_MAX_LINE ((size_t)4 * 1024 * 1024)
#define UNSB_SSE_DEFAULT_MAX_EVENT ((size_t)4 * 1024 * 1024)
#define UNSB_SSE_RETRY_MAX 86400000LL   /* a day in ms */

typedef struct unsb_sse unsb_sse;

/* Valid until the next call on the parser. Each string is NUL-terminated
** (data may also contain NULs: use the length). */
typedef struct {
  const char *type;  size_t type_len;   /* "message" when no event: field */
  const char *data;  size_t data_len;
  const char *id;    size_t id_len;     /* the last event id, "" if none */
} unsb_sse_event;

/* 0 for either limit = its default. NULL when out of memory. */
unsb_sse *unsb_sse_new(size_t max_line, size_t max_event);
void unsb_sse_free(unsb_sse *p);

/* Consumes buf[0..len) up to the end of the next event. Returns 1 with *ev
** filled and *used = bytes consumed (the rest is for the next call), 0 when
** all len bytes were consumed without completing an event, or -1 with err:
** protocol (a cap), memory, validation (called after finish). Once failed,
** every later call fails the same way. */
int unsb_sse_step(unsb_sse *p, const char *buf, size_t len, size_t *used,
                  unsb_sse_event *ev, unsb_error *err);

/* The end of the stream: 1 with *ev for a pending event (at most one), 0
** for none, -1 with err. Afterwards the parser accepts nothing more. */
int unsb_sse_finish(unsb_sse *p, unsb_sse_event *ev, unsb_error *err);

/* The last valid retry: value in ms, or -1 if none was seen. */
long long unsb_sse_retry(const unsb_sse *p);

/* Callback form: a positive return stops the feed. */
typedef int (*unsb_sse_cb)(void *ud, const unsb_sse_event *ev);

/* Steps through all of buf, calling cb for each event. Returns 0, the
** callback's positive value when it stopped (the rest of buf is not
** parsed), or -1 with err. */
int unsb_sse_feed(unsb_sse *p, const char *buf, size_t len, unsb_sse_cb cb, void *ud,
                  unsb_error *err);

#endif
