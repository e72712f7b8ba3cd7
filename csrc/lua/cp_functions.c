/*
** Pure Control Plane functions of unsandbox.core: the acting subject,
** identifiers and their shapes, argv quoting, trace context, workspace
** paths, query strings and MCP request ids. Marshalling only; every rule
** is in csrc/core. A refused value (a short salt, a path outside
** /workspace, an argv that is not a list of strings) is raised by the flat
** function and returned by the grouped one (binding.h: ub_mode), naming
** the argument the core says it was; a header value that does not parse is
** not misuse and gives nil.
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>

#include "core/cpclient.h"
#include "core/cprequest.h"
#include "core/cpids.h"
#include "core/cpshapes.h"
#include "core/digest.h"
#include "core/form.h"
#include "core/lease.h"
#include "core/mcp.h"
#include "core/pseudonym.h"
#include "core/quote.h"
#include "core/trace.h"
#include "core/wspath.h"

/* core.acting_subject(salt, tenant, subject) */
static int acting_subject(lua_State *L, ub_mode mode) {
  size_t sl, tl, jl;
  char out[UNSB_SUBJECT_LEN + 1];
  unsb_error err;
  const char *salt = ub_check_string(L, 1, "salt", &sl);
  const char *tenant = ub_check_string(L, 2, "tenant", &tl);
  const char *subject = ub_check_string(L, 3, "subject", &jl);
  if (unsb_acting_subject(salt, sl, tenant, tl, subject, jl, out, &err) != 0)
    return ub_bad_error(L, mode, 1, &err);
  lua_pushstring(L, out);
  return 1;
}
UB_BOTH(acting_subject)

static int l_valid_subject(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "subject", &len);
  lua_pushboolean(L, unsb_valid_subject(s, len));
  return 1;
}

static int session_id(lua_State *L, ub_mode mode) {
  size_t len;
  char out[UNSB_SESSION_ID_LEN + 1];
  unsb_error err;
  const char *key = ub_check_string(L, 1, "key", &len);
  if (unsb_session_id(key, len, out, &err) != 0) return ub_bad_error(L, mode, 1, &err);
  lua_pushstring(L, out);
  return 1;
}
UB_BOTH(session_id)

static int l_object_id(lua_State *L) {
  size_t len;
  char out[UNSB_OBJECT_ID_MAX + 1];
  unsb_error err;
  const char *s = ub_check_string(L, 1, "id", &len);
  if (unsb_object_id(s, len, out, &err) != 0) return luaL_error(L, "%s", err.message);
  lua_pushstring(L, out);
  return 1;
}

/* core.shell_quote(argv[, max_len]): argv a non-empty list of strings. */
static int shell_quote(lua_State *L, ub_mode mode) {
  unsb_error err;
  size_t len, count = 0;
  if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "argv", "table");
  lua_Integer max = luaL_optinteger(L, 2, 0);
  if (max < 0) return ub_bad_value(L, mode, 2, "max_len: must not be negative");
  lua_Unsigned n = lua_rawlen(L, 1);
  for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) count++;
  if (n == 0) return ub_bad_value(L, mode, 1, "argv: at least the command expected");
  if (count != n) return ub_bad_value(L, mode, 1, "argv: a list (1..n) of strings expected");
  if (n > 65536) return ub_bad_value(L, mode, 1, "argv: too many arguments");
  /* pointer arrays as userdata: collected by Lua whatever happens */
  const char **args = lua_newuserdatauv(L, n * sizeof *args, 0);
  size_t *lens = lua_newuserdatauv(L, n * sizeof *lens, 0);
  for (lua_Unsigned i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, (lua_Integer)i) != LUA_TSTRING)
      return ub_bad_value(L, mode, 1, lua_pushfstring(L, "argv[" UB_I "]: string expected, got %s",
                                                      UB_IARG(i), luaL_typename(L, -1)));
    args[i - 1] = lua_tolstring(L, -1, &lens[i - 1]);   /* anchored by argv */
    lua_pop(L, 1);
  }
  char **box = ub_box_new(L);
  *box = unsb_shell_quote(args, lens, n, (size_t)max, &len, &err);
  if (!*box) return ub_bad_error(L, mode, 1, &err);
  ub_box_push(L, box, len);
  return 1;
}
UB_BOTH(shell_quote)

static int l_trace_from_request_id(lua_State *L) {
  size_t len;
  char out[UNSB_TRACE_ID_LEN + 1];
  const char *s = ub_check_string(L, 1, "request_id", &len);
  int rc = unsb_trace_from_request_id(s, len, out);
  if (rc < 0) return luaL_error(L, "SHA-256 failed (OpenSSL)");
  if (rc == 0) lua_pushnil(L);
  else lua_pushstring(L, out);
  return 1;
}

static int l_parse_traceparent(lua_State *L) {
  size_t len;
  unsb_traceparent tp;
  const char *s = ub_check_string(L, 1, "traceparent", &len);
  if (!unsb_trace_parse(s, len, &tp)) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, tp.trace_id);
  lua_setfield(L, -2, "trace_id");
  lua_pushstring(L, tp.span_id);
  lua_setfield(L, -2, "span_id");
  lua_pushstring(L, tp.flags);
  lua_setfield(L, -2, "flags");
  return 1;
}

/* core.resolve_trace(traceparent, x_request_id) -> trace_id, flags, source */
static int l_resolve_trace(lua_State *L) {
  static const char *const SOURCES[] = {"traceparent", "x_request_id", "random"};
  size_t tl, rl;
  char trace[UNSB_TRACE_ID_LEN + 1], flags[UNSB_TRACE_FLAGS_LEN + 1];
  unsb_trace_source src;
  unsb_error err;
  const char *tp = ub_opt_string(L, 1, "traceparent", &tl);
  const char *rid = ub_opt_string(L, 2, "x_request_id", &rl);
  if (unsb_trace_resolve(tp, tl, rid, rl, trace, flags, &src, &err) != 0)
    return luaL_error(L, "%s", err.message);
  lua_pushstring(L, trace);
  lua_pushstring(L, flags);
  lua_pushstring(L, SOURCES[src]);
  return 3;
}

/* core.new_traceparent([trace_id[, flags]]) */
static int new_traceparent(lua_State *L, ub_mode mode) {
  char out[UNSB_TRACEPARENT_LEN + 1];
  unsb_error err;
  const char *trace = ub_opt_string(L, 1, "trace_id", NULL);
  const char *flags = ub_opt_string(L, 2, "flags", NULL);
  if (unsb_trace_outbound(trace, flags, out, &err) != 0) return ub_bad_error(L, mode, 1, &err);
  lua_pushstring(L, out);
  return 1;
}
UB_BOTH(new_traceparent)

static int workspace_path(lua_State *L, ub_mode mode) {
  size_t len, off;
  unsb_error err;
  const char *p = ub_check_string(L, 1, "path", &len);
  if (unsb_workspace_path(p, len, &off, &err) != 0) return ub_bad_error(L, mode, 1, &err);
  lua_pushlstring(L, p + off, len - off);
  return 1;
}
UB_BOTH(workspace_path)

static int l_is_object_call(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  lua_pushboolean(L, unsb_cp_is_object_call(path));
  return 1;
}

static int l_mcp_request_id(lua_State *L) {
  char out[UNSB_MCP_ID_MAX];
  unsb_error err;
  if (!lua_isinteger(L, 1)) return ub_type_error(L, 1, 1, "n", "integer");
  lua_Integer n = lua_tointeger(L, 1);
  if (n < 1) return luaL_argerror(L, 1, "n: must be at least 1");
  if (unsb_mcp_format_id((uint64_t)n, out, &err) != 0) return luaL_error(L, "%s", err.message);
  lua_pushstring(L, out);
  return 1;
}

/* core.refresh_period(value): the SANDBOX_LIFECYCLE_REFRESH_SECONDS rule. */
static int l_refresh_period(lua_State *L) {
  int64_t out;
  unsb_error err;
  const char *v = ub_opt_string(L, 1, "value", NULL);
  if (unsb_refresh_period_of(v, UNSB_ENV_CP_REFRESH, 1, &out, &err) != 0)
    return ub_bad_error(L, UB_RAISE, 1, &err);
  lua_pushinteger(L, (lua_Integer)out);
  return 1;
}

/* core.mcp_progress_ok(token, request_id, channel, sequence, chunk): §7.11's
** filter of progress notifications (any Lua values: the server's JSON). */
static int l_mcp_progress_ok(lua_State *L) {
  size_t chunk_len = 0;
  int exact = 0;
  lua_Integer seq = lua_tointegerx(L, 4, &exact);
  const char *token = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
  const char *rid = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  const char *channel = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : NULL;
  if (lua_type(L, 5) == LUA_TSTRING) lua_tolstring(L, 5, &chunk_len);
  exact = exact && lua_type(L, 4) == LUA_TNUMBER;
  lua_pushboolean(L, unsb_mcp_progress_ok(token, rid, channel, exact, (long long)seq, chunk_len));
  return 1;
}

/* core.mcp_session_action(action): "session_exec", ... or nil. */
static int l_mcp_session_action(lua_State *L) {
  const char *a = unsb_mcp_session_action(ub_check_string(L, 1, "action", NULL));
  if (a) lua_pushstring(L, a);
  else lua_pushnil(L);
  return 1;
}

static int l_mcp_valid_session_id(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "session_id", &len);
  lua_pushboolean(L, unsb_mcp_valid_session_id(s, len));
  return 1;
}

/* core.sha256(bytes): 64 lowercase hex (upload checksums). */
static int l_sha256(lua_State *L) {
  size_t len;
  char out[UNSB_SHA256_HEX_LEN + 1];
  const char *s = ub_check_string(L, 1, "bytes", &len);
  if (unsb_sha256_hex(s, len, out) != 0) return luaL_error(L, "SHA-256 failed (OpenSSL)");
  lua_pushstring(L, out);
  return 1;
}

static int l_valid_tenant(lua_State *L) {
  lua_pushboolean(L, unsb_cp_valid_tenant(ub_check_string(L, 1, "tenant", NULL)));
  return 1;
}

/* The shapes of the Control Plane's ids (core/lease.h), true or false:
** the facade checks the ids a caller passes with them. */
static int l_valid_workspace_id(lua_State *L) {
  lua_pushboolean(L, unsb_valid_workspace_id(ub_check_string(L, 1, "id", NULL)));
  return 1;
}

static int l_valid_sandbox_id(lua_State *L) {
  lua_pushboolean(L, unsb_valid_sandbox_id(ub_check_string(L, 1, "id", NULL)));
  return 1;
}

static int l_valid_template(lua_State *L) {
  lua_pushboolean(L, unsb_valid_template(ub_check_string(L, 1, "template", NULL)));
  return 1;
}

static int l_valid_checkpoint_id(lua_State *L) {
  lua_pushboolean(L, unsb_valid_checkpoint_id(ub_check_string(L, 1, "id", NULL)));
  return 1;
}

/* core.sandbox_name_check(name) -> nil | reason (core/cpids.h) */
static int l_sandbox_name_check(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "name", &len);
  const char *why = unsb_cp_sandbox_name_check(s, len);
  if (why) lua_pushstring(L, why); else lua_pushnil(L);
  return 1;
}

static const luaL_Reg FUNCTIONS[] = {
  {"mcp_progress_ok", l_mcp_progress_ok},
  {"mcp_session_action", l_mcp_session_action},
  {"mcp_valid_session_id", l_mcp_valid_session_id},
  {"sha256", l_sha256},
  {"valid_tenant", l_valid_tenant},
  {"acting_subject", l_acting_subject},
  {"valid_subject", l_valid_subject},
  {"session_id", l_session_id},
  {"object_id", l_object_id},
  {"shell_quote", l_shell_quote},
  {"trace_from_request_id", l_trace_from_request_id},
  {"parse_traceparent", l_parse_traceparent},
  {"resolve_trace", l_resolve_trace},
  {"new_traceparent", l_new_traceparent},
  {"workspace_path", l_workspace_path},
  {"is_object_call", l_is_object_call},
  {"mcp_request_id", l_mcp_request_id},
  {"refresh_period", l_refresh_period},
  {"form_encode", ub_form_encode},
  {"valid_workspace_id", l_valid_workspace_id},
  {"valid_sandbox_id", l_valid_sandbox_id},
  {"valid_template", l_valid_template},
  {"valid_checkpoint_id", l_valid_checkpoint_id},
  {"sandbox_name_check", l_sandbox_name_check},
  {NULL, NULL},
};

/* what the groups hold instead of the raising forms (binding.h) */
static const luaL_Reg RETURNING[] = {
  {"acting_subject", r_acting_subject},
  {"session_id", r_session_id},
  {"shell_quote", r_shell_quote},
  {"new_traceparent", r_new_traceparent},
  {"workspace_path", r_workspace_path},
  {"form_encode", ub_form_encode_returning},
  {NULL, NULL},
};

void ub_open_cp_functions(lua_State *L) {
  ub_register(L, FUNCTIONS, RETURNING);
  lua_createtable(L, 0, 3);
  lua_pushliteral(L, UNSB_MCP_PROTOCOL_VERSION);
  lua_setfield(L, -2, "protocol_version");
  lua_pushliteral(L, UNSB_MCP_CLIENT_NAME);
  lua_setfield(L, -2, "client_name");
  lua_pushliteral(L, UNSB_MCP_CLIENT_VERSION);
  lua_setfield(L, -2, "client_version");
  lua_setfield(L, -2, "MCP");
}
