/*
** W3C trace context for the Control Plane (spec §2, vectors trace.json):
** parsing an inbound traceparent, deriving a trace id from an X-Request-Id,
** random ids, and the outbound header. Pure functions over fixed-size
** buffers, shared by the client (a fresh span per request) and usable by a
** server that must resolve the same rules.
**
** "Trimmed" means ASCII whitespace (HT, LF, VT, FF, CR, space) at both
** ends: HTTP header values can carry no other. The reference server trims
** with Python's str.strip(), which would also drop Unicode spaces of a
** decoded value; those cannot reach a header unescaped, so the rules agree
** on every value a header can hold.
*/
#ifndef UNSB_TRACE_H
#define UNSB_TRACE_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_TRACE_ID_LEN 32
#define UNSB_SPAN_ID_LEN 16
#define UNSB_TRACE_FLAGS_LEN 2
#define UNSB_TRACEPARENT_LEN 55    /* 00-<32>-<16>-<2> */

typedef struct {
  char trace_id[UNSB_TRACE_ID_LEN + 1];
  char span_id[UNSB_SPAN_ID_LEN + 1];
  char flags[UNSB_TRACE_FLAGS_LEN + 1];
} unsb_traceparent;

typedef enum {
  UNSB_TRACE_FROM_TRACEPARENT,
  UNSB_TRACE_FROM_REQUEST_ID,
  UNSB_TRACE_RANDOM
} unsb_trace_source;

/* 1 when s, trimmed, is exactly "00-<32 lc hex>-<16 lc hex>-<2 lc hex>"
** with neither id all zeros (out filled); else 0 (out emptied). */
int unsb_trace_parse(const char *s, size_t len, unsb_traceparent *out);

/* Trace id of an X-Request-Id: hex of the first 16 bytes of SHA-256 of the
** trimmed value. 1 with out filled; 0 when the trimmed value is empty;
** -1 if OpenSSL fails. */
int unsb_trace_from_request_id(const char *s, size_t len, char out[UNSB_TRACE_ID_LEN + 1]);

/* Inbound resolution, in the spec's order: a valid traceparent (flags kept),
** else a non-blank X-Request-Id (flags "01"), else a random id (flags
** "01"). Either header may be NULL (absent). 0, or -1 with err when random
** bytes are unavailable. A malformed header is never an error. */
int unsb_trace_resolve(const char *traceparent, size_t tp_len, const char *request_id,
                       size_t rid_len, char trace_id[UNSB_TRACE_ID_LEN + 1],
                       char flags[UNSB_TRACE_FLAGS_LEN + 1], unsb_trace_source *source,
                       unsb_error *err);

/* Random ids from OpenSSL, never all zeros. 0, or -1 with err. */
int unsb_trace_random_id(char out[UNSB_TRACE_ID_LEN + 1], unsb_error *err);
int unsb_span_random_id(char out[UNSB_SPAN_ID_LEN + 1], unsb_error *err);

/* 1 if s[0..len) is exactly n lowercase hex digits, not all '0'. */
int unsb_trace_valid_hex(const char *s, size_t len, size_t n);

/* The outbound value "00-<trace_id>-<new random span>-<flags>". trace_id
** NULL = a new random trace; flags NULL = "01". A bad trace id (err->arg
** 1) or flags (2) is a validation error. 0, or -1 with err. */
int unsb_trace_outbound(const char *trace_id, const char *flags,
                        char out[UNSB_TRACEPARENT_LEN + 1], unsb_error *err);

#endif
