/*
** The arguments of a Control Plane call as the Manager's `_request` and
** `_open` take them, and the response table both give back: marshalling
** shared by manager.c and transfer.c, so the two never disagree on what a
** call may carry.
**
**   (method, path, body, opts) with opts = {token=, subject=, owner=,
**   trace=, flags=, traceparent= (whole, instead of trace/flags), content_type=, tool=, streaming=, timeout= (ms),
**   capture = {header names}, mode = "sse" | "raw" (_open only),
**   from = path (the body read from that file), to = path (_request only:
**   a 2xx body written to that new file)}
**
** Every string stays anchored by the argument list (or the opts table and
** its capture list, which are arguments) for the whole call.
*/
#include "lua/binding.h"

#include <string.h>

static const char *const CALL_OPTIONS[] = {
  "token", "subject", "owner", "trace", "flags", "traceparent", "content_type", "tool",
  "streaming", "timeout", "capture", "mode", "from", "to", NULL,
};

static int field_bool(lua_State *L, int t, const char *name) {
  int v = 0, ty = lua_getfield(L, t, name);
  if (ty == LUA_TBOOLEAN) v = lua_toboolean(L, -1);
  else if (ty != LUA_TNIL) ub_type_error(L, 5, -1, name, "boolean");
  lua_pop(L, 1);
  return v;
}

static size_t capture_names(lua_State *L, const char **names) {
  size_t n = 0;
  if (lua_getfield(L, 5, "capture") == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1)) ub_type_error(L, 5, -1, "capture", "table");
  n = (size_t)lua_rawlen(L, -1);
  if (n > UNSB_HTTP_CAPTURE_MAX)
    luaL_argerror(L, 5, lua_pushfstring(L, "capture: at most %d names", UNSB_HTTP_CAPTURE_MAX));
  for (size_t i = 0; i < n; i++) {
    if (lua_rawgeti(L, -1, (lua_Integer)i + 1) != LUA_TSTRING)
      luaL_argerror(L, 5, "capture: a list of header names expected");
    names[i] = lua_tostring(L, -1);   /* anchored by the capture table */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);                      /* anchored by opts */
  return n;
}

void ub_cp_call_args(lua_State *L, unsb_cp_call *call, const char **names) {
  memset(call, 0, sizeof *call);
  call->method = ub_check_string(L, 2, "method", NULL);
  call->path = ub_check_string(L, 3, "path", NULL);
  call->body = ub_opt_string(L, 4, "body", &call->body_len);
  if (lua_isnoneornil(L, 5)) return;
  if (!lua_istable(L, 5)) ub_type_error(L, 5, 5, "opts", "table");
  ub_check_keys(L, 5, 5, CALL_OPTIONS);
  call->token = ub_field_string(L, 5, 5, "token", NULL);
  call->subject = ub_field_string(L, 5, 5, "subject", NULL);
  call->has_owner = field_bool(L, 5, "owner");
  call->trace_id = ub_field_string(L, 5, 5, "trace", NULL);
  call->trace_flags = ub_field_string(L, 5, 5, "flags", NULL);
  call->traceparent = ub_field_string(L, 5, 5, "traceparent", NULL);
  call->content_type = ub_field_string(L, 5, 5, "content_type", NULL);
  call->mcp_tool = ub_field_string(L, 5, 5, "tool", NULL);
  call->streaming = field_bool(L, 5, "streaming");
  call->timeout_ms = (long)ub_field_ms(L, 5, 5, "timeout", 0);
  call->n_capture = capture_names(L, names);
  call->capture = names;
}

static void set_string(lua_State *L, const char *field, const char *s) {
  if (!s) return;
  lua_pushstring(L, s);
  lua_setfield(L, -2, field);
}

void ub_push_response(lua_State *L, const unsb_http_response *resp, const char **names,
                      size_t n_names) {
  lua_createtable(L, 0, 9);
  lua_pushinteger(L, resp->status);
  lua_setfield(L, -2, "status");
  lua_pushlstring(L, resp->body ? resp->body : "", resp->body ? resp->body_len : 0);
  lua_setfield(L, -2, "body");
  set_string(L, "request_id", resp->request_id);
  set_string(L, "content_type", resp->content_type);
  if (resp->retry_after >= 0) {
    lua_pushinteger(L, (lua_Integer)resp->retry_after);
    lua_setfield(L, -2, "retry_after");
  }
  lua_pushinteger(L, resp->new_connections);
  lua_setfield(L, -2, "new_connections");
  lua_pushinteger(L, (lua_Integer)resp->streamed);
  lua_setfield(L, -2, "streamed");
  if (n_names > 0) {   /* the headers asked for (capture), and only then */
    lua_createtable(L, 0, (int)n_names);
    for (size_t i = 0; i < n_names; i++) set_string(L, names[i], resp->captured[i]);
    lua_setfield(L, -2, "headers");
  }
  ub_push_timing(L, &resp->timing);
  lua_setfield(L, -2, "timing");
}
