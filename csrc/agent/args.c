/*
** Argument checks with messages that name the argument, so the server can
** pass them on unchanged as JSON-RPC -32602 texts.
*/
#include "agent/args.h"

#include <string.h>

int ag_args_only(json_t *req, const char *const *allowed, ag_err *e) {
  const char *key;
  json_t *val;
  json_object_foreach(req, key, val) {
    int known = !strcmp(key, "op");
    for (const char *const *a = allowed; !known && *a; a++) known = !strcmp(key, *a);
    if (!known) {
      char shown[AG_SHOW_MAX];
      return ag_fail(e, AG_INVALID, "unknown argument '%s'", ag_show(key, shown, sizeof shown));
    }
  }
  return 0;
}

int ag_arg_str(json_t *req, const char *key, const char *def, int allow_nul,
               const char **out, size_t *len, ag_err *e) {
  json_t *v = json_object_get(req, key);
  if (!v) {
    if (!def) return ag_fail(e, AG_INVALID, "missing argument '%s'", key);
    *out = def;
    if (len) *len = strlen(def);
    return 0;
  }
  if (!json_is_string(v)) return ag_fail(e, AG_INVALID, "argument '%s' must be a string", key);
  *out = json_string_value(v);
  if (!allow_nul && strlen(*out) != json_string_length(v))
    return ag_fail(e, AG_INVALID, "argument '%s' must not contain a NUL byte", key);
  if (len) *len = json_string_length(v);
  return 0;
}

int ag_arg_int(json_t *req, const char *key, long long def, long long min,
               long long max, long long *out, ag_err *e) {
  json_t *v = json_object_get(req, key);
  if (!v) { *out = def; return 0; }
  if (!json_is_integer(v)) return ag_fail(e, AG_INVALID, "argument '%s' must be an integer", key);
  *out = json_integer_value(v);
  if (*out < min || *out > max)
    return ag_fail(e, AG_INVALID, "argument '%s' must be between %lld and %lld", key, min, max);
  return 0;
}

int ag_arg_bool(json_t *req, const char *key, int def, int *out, ag_err *e) {
  json_t *v = json_object_get(req, key);
  if (!v) { *out = def; return 0; }
  if (!json_is_boolean(v)) return ag_fail(e, AG_INVALID, "argument '%s' must be a boolean", key);
  *out = json_is_true(v);
  return 0;
}
