/*
** Trace context (see trace.h). Validation is by position in a fixed-length
** string, so a traceparent is never split on '-' and a 5-segment or padded
** value cannot slip through.
*/
#include "core/trace.h"
#include "core/digest.h"
#include "core/validate.h"

#include <stdio.h>
#include <string.h>

static int is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* n lowercase hex digits (any value) */
static int hex_run(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_lower_hex(s[i])) return 0;
  return 1;
}

int unsb_trace_valid_hex(const char *s, size_t len, size_t n) {
  int nonzero = 0;
  if (!s || len != n || !hex_run(s, n)) return 0;
  for (size_t i = 0; i < n; i++) nonzero |= s[i] != '0';
  return nonzero;
}

int unsb_trace_parse(const char *s, size_t len, unsb_traceparent *out) {
  memset(out, 0, sizeof *out);
  if (!s) return 0;
  unsb_trim(&s, &len);
  /* 00 - trace(32) - span(16) - flags(2) */
  if (len != UNSB_TRACEPARENT_LEN || s[0] != '0' || s[1] != '0' || s[2] != '-' ||
      s[35] != '-' || s[52] != '-')
    return 0;
  if (!unsb_trace_valid_hex(s + 3, UNSB_TRACE_ID_LEN, UNSB_TRACE_ID_LEN) ||
      !unsb_trace_valid_hex(s + 36, UNSB_SPAN_ID_LEN, UNSB_SPAN_ID_LEN) ||
      !hex_run(s + 53, UNSB_TRACE_FLAGS_LEN))
    return 0;
  memcpy(out->trace_id, s + 3, UNSB_TRACE_ID_LEN);
  memcpy(out->span_id, s + 36, UNSB_SPAN_ID_LEN);
  memcpy(out->flags, s + 53, UNSB_TRACE_FLAGS_LEN);
  return 1;
}

int unsb_trace_from_request_id(const char *s, size_t len, char out[UNSB_TRACE_ID_LEN + 1]) {
  char hex[UNSB_SHA256_HEX_LEN + 1];
  if (!s) return 0;
  unsb_trim(&s, &len);
  if (len == 0) return 0;
  if (unsb_sha256_hex(s, len, hex) != 0) return -1;
  memcpy(out, hex, UNSB_TRACE_ID_LEN);     /* 16 bytes = 32 hex digits */
  out[UNSB_TRACE_ID_LEN] = '\0';
  return 1;
}

/* n random bytes as hex, retried when all zero (odds 2^-64 or less). */
static int random_hex(char *out, size_t bytes, unsb_error *err) {
  unsigned char raw[16];
  for (int attempt = 0; attempt < 4; attempt++) {
    if (unsb_random_id_bytes(raw, bytes) != 0)
      return unsb_fail(err, UNSB_EPROTOCOL, "random bytes unavailable (OpenSSL RAND_bytes)");
    unsb_hex(raw, bytes, out);
    if (unsb_trace_valid_hex(out, 2 * bytes, 2 * bytes)) return 0;
  }
  return unsb_fail(err, UNSB_EPROTOCOL, "random bytes were all zero four times");
}

int unsb_trace_random_id(char out[UNSB_TRACE_ID_LEN + 1], unsb_error *err) {
  return random_hex(out, UNSB_TRACE_ID_LEN / 2, err);
}

int unsb_span_random_id(char out[UNSB_SPAN_ID_LEN + 1], unsb_error *err) {
  return random_hex(out, UNSB_SPAN_ID_LEN / 2, err);
}

int unsb_trace_resolve(const char *traceparent, size_t tp_len, const char *request_id,
                       size_t rid_len, char trace_id[UNSB_TRACE_ID_LEN + 1],
                       char flags[UNSB_TRACE_FLAGS_LEN + 1], unsb_trace_source *source,
                       unsb_error *err) {
  unsb_traceparent tp;
  int rc;
  if (unsb_trace_parse(traceparent, tp_len, &tp)) {
    memcpy(trace_id, tp.trace_id, sizeof tp.trace_id);
    memcpy(flags, tp.flags, sizeof tp.flags);
    *source = UNSB_TRACE_FROM_TRACEPARENT;
    return 0;
  }
  memcpy(flags, "01", 3);
  rc = unsb_trace_from_request_id(request_id, rid_len, trace_id);
  if (rc < 0) return unsb_fail(err, UNSB_EPROTOCOL, "SHA-256 failed (OpenSSL)");
  if (rc == 1) {
    *source = UNSB_TRACE_FROM_REQUEST_ID;
    return 0;
  }
  *source = UNSB_TRACE_RANDOM;
  return unsb_trace_random_id(trace_id, err);
}

int unsb_trace_outbound(const char *trace_id, const char *flags,
                        char out[UNSB_TRACEPARENT_LEN + 1], unsb_error *err) {
  char trace[UNSB_TRACE_ID_LEN + 1], span[UNSB_SPAN_ID_LEN + 1];
  if (!flags) flags = "01";
  if (strlen(flags) != UNSB_TRACE_FLAGS_LEN || !hex_run(flags, UNSB_TRACE_FLAGS_LEN))
    return unsb_invalid(err, 2, "trace flags must be 2 lowercase hex digits");
  if (trace_id) {
    if (!unsb_trace_valid_hex(trace_id, strlen(trace_id), UNSB_TRACE_ID_LEN))
      return unsb_invalid(err, 1, "trace id must be 32 lowercase hex digits, not all zero");
    memcpy(trace, trace_id, sizeof trace);
  } else if (unsb_trace_random_id(trace, err) != 0) {
    return -1;
  }
  if (unsb_span_random_id(span, err) != 0) return -1;
  snprintf(out, UNSB_TRACEPARENT_LEN + 1, "00-%s-%s-%s", trace, span, flags);
  return 0;
}
