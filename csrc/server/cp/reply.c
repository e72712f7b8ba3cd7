/*
** Replies and field readers of the Control Plane. Its error body is
** {"error": text} (spec §2), unlike the execution API's {error, message}:
** the two APIs keep their own shapes, so clients of each see what the
** real service sends.
*/
#include "server/cp/cp.h"
#include "server/jsonw.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/store/db.h"
#include "server/store/ledger.h"

static int fail_v(ux_req *r, int status, const char *fmt, va_list ap) {
  char text[600];
  vsnprintf(text, sizeof text, fmt, ap);
  json_t *j = json_object();
  json_object_set_new(j, "error", ux_json_bytes(text, strlen(text)));
  ux_reply_json(r, status, j);
  ux_reply_content_type(r, UX_CP_JSON);
  return -1;
}

int ux_cp_fail_req(ux_req *r, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(r, status, fmt, ap);
  va_end(ap);
  return -1;
}

int ux_cp_fail(ux_cp_call *c, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(c->r, status, fmt, ap);
  va_end(ap);
  return -1;
}

int ux_cp_ok(ux_cp_call *c, int status, json_t *json) {
  ux_reply_json(c->r, status, json ? json : json_object());
  return ux_reply_content_type(c->r, UX_CP_JSON) < 0 ? -1 : 0;
}

int ux_cp_ok_text(ux_cp_call *c, int status, ux_jw *w) {
  size_t len;
  char *text = ux_jw_take(w, &len);
  if (ux_reply_take(c->r, status, UX_CP_JSON, text, len) < 0) return -1;
  return 0;
}

void ux_cp_jw_time(ux_jw *w, long long t) {
  if (t <= 0) ux_jw_null(w);
  else ux_jw_int_string(w, t);
}

int ux_cp_store_failed(ux_cp_call *c, const char *what) {
  return ux_cp_fail(c, 503, "control plane store unavailable: %s", what);
}

void ux_cp_storage_text(int refusal, const char *tenant, char *out, size_t len) {
  if (refusal == UX_LEDGER_QUOTA) snprintf(out, len, "storage limit reached for tenant %s", tenant);
  else snprintf(out, len, "storage capacity is exhausted; this is transient, retry later");
}

int ux_cp_storage_refused(ux_cp_call *c, int refusal, const char *tenant) {
  char text[200];
  if (refusal != UX_LEDGER_QUOTA && refusal != UX_LEDGER_BUDGET)
    return ux_cp_store_failed(c, "storage ledger");
  ux_cp_storage_text(refusal, tenant, text, sizeof text);
  return ux_cp_fail(c, 429, "%s", text);
}

int ux_cp_flag(const ux_req *r, const char *name) {
  const char *v = ux_req_query(r, name);
  return v && (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

json_t *ux_cp_time(long long t) {
  if (t <= 0) return json_null();
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", t);
  return json_string(buf);
}

int ux_cp_str(ux_cp_call *c, const char *key, int required, const char *dflt,
              size_t maxlen, const char **out) {
  json_t *v = json_object_get(c->body, key);
  *out = dflt;
  if (!v || json_is_null(v)) {
    return required ? ux_cp_fail(c, 400, "%s is required", key) : 0;
  }
  if (!json_is_string(v)) return ux_cp_fail(c, 400, "%s must be a string", key);
  size_t n = json_string_length(v);
  if (required && n == 0) return ux_cp_fail(c, 400, "%s must not be empty", key);
  if (maxlen && n > maxlen)
    return ux_cp_fail(c, 400, "%s must be at most %zu characters", key, maxlen);
  if (strlen(json_string_value(v)) != n) return ux_cp_fail(c, 400, "%s must not contain NUL", key);
  *out = json_string_value(v);
  return 0;
}

int ux_cp_int(ux_cp_call *c, const char *key, long long lo, long long hi,
              long long dflt, long long *out) {
  json_t *v = json_object_get(c->body, key);
  *out = dflt;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return ux_cp_fail(c, 400, "%s must be an integer between %lld and %lld", key, lo, hi);
  *out = json_integer_value(v);
  return 0;
}

int ux_cp_bool(ux_cp_call *c, const char *key, int dflt, int *out) {
  json_t *v = json_object_get(c->body, key);
  *out = dflt;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_boolean(v)) return ux_cp_fail(c, 400, "%s must be a boolean", key);
  *out = json_is_true(v);
  return 0;
}
