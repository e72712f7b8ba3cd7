/*
** unsandbox.SseParser: the core's incremental SSE parser (core/sse.h) as
** a userdata, for Lua code that reads a stream piece by piece.
**
**   local p = core.sse_parser{max_line = ..., max_event = ...}
**   p:feed(bytes)  -- {{event=, data=, id=}, ...}, or nil, "protocol", msg
**   p:finish()     -- the same for the end of the stream (at most one event)
**   p:retry()      -- the last valid retry: field in ms, or nil
**
** Same shape as Client: created closed, then given its parser; __gc,
** __close and close() are one idempotent closer. Each event is pushed
** right after unsb_sse_step returned it, so a memory error while pushing
** leaves the parser consistent (only that feed's remaining bytes are lost).
*/
#include "lua/binding.h"

#include "core/sse.h"

typedef struct {
  unsb_sse *p;      /* NULL = closed */
} lsse;

static unsb_sse *check_open(lua_State *L) {
  lsse *u = luaL_checkudata(L, 1, UB_SSE);
  if (!u->p) luaL_error(L, "attempt to use a closed SseParser");
  return u->p;
}

static const char *const OPTIONS[] = {"max_line", "max_event", NULL};

/* core.sse_parser([opts]) */
static int l_new(lua_State *L) {
  lua_Integer max_line = 0, max_event = 0;
  if (!lua_isnoneornil(L, 1)) {
    if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "opts", "table");
    ub_check_keys(L, 1, 1, OPTIONS);
    max_line = ub_field_count(L, 1, 1, "max_line", 0);
    max_event = ub_field_count(L, 1, 1, "max_event", 0);
    if (lua_getfield(L, 1, "max_line") != LUA_TNIL && max_line < 1)
      return luaL_argerror(L, 1, "max_line: must be positive");
    if (lua_getfield(L, 1, "max_event") != LUA_TNIL && max_event < 1)
      return luaL_argerror(L, 1, "max_event: must be positive");
    lua_pop(L, 2);
  }
  lsse *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->p = NULL;
  luaL_setmetatable(L, UB_SSE);
  u->p = unsb_sse_new((size_t)max_line, (size_t)max_event);
  if (!u->p) return luaL_error(L, "not enough memory");
  return 1;
}

static void push_event(lua_State *L, const unsb_sse_event *ev) {
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, ev->type, ev->type_len);
  lua_setfield(L, -2, "event");
  lua_pushlstring(L, ev->data, ev->data_len);
  lua_setfield(L, -2, "data");
  if (ev->id_len > 0) {
    lua_pushlstring(L, ev->id, ev->id_len);
    lua_setfield(L, -2, "id");
  }
}

/* Misuse (after finish) raises; a cap or memory failure does not. */
static int fail(lua_State *L, const unsb_error *err) {
  if (err->kind == UNSB_EVALIDATION) return luaL_error(L, "%s", err->message);
  return ub_push_error(L, err);
}

static int l_feed(lua_State *L) {
  unsb_sse *p = check_open(L);
  size_t len, used;
  unsb_sse_event ev;
  unsb_error err;
  const char *s = ub_check_string(L, 2, "bytes", &len);
  lua_Integer n = 0;
  lua_newtable(L);
  for (;;) {
    int rc = unsb_sse_step(p, s, len, &used, &ev, &err);
    if (rc < 0) return fail(L, &err);
    s += used;
    len -= used;
    if (rc == 0) break;
    push_event(L, &ev);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

static int l_finish(lua_State *L) {
  unsb_sse *p = check_open(L);
  unsb_sse_event ev;
  unsb_error err;
  int rc = unsb_sse_finish(p, &ev, &err);
  if (rc < 0) return fail(L, &err);
  lua_newtable(L);
  if (rc == 1) {
    push_event(L, &ev);
    lua_rawseti(L, -2, 1);
  }
  return 1;
}

static int l_retry(lua_State *L) {
  long long ms = unsb_sse_retry(check_open(L));
  if (ms < 0) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)ms);
  return 1;
}

static int l_close(lua_State *L) {
  lsse *u = luaL_checkudata(L, 1, UB_SSE);
  unsb_sse_free(u->p);
  u->p = NULL;
  return 0;
}

static int l_tostring(lua_State *L) {
  lsse *u = luaL_checkudata(L, 1, UB_SSE);
  if (u->p) lua_pushfstring(L, UB_SSE " (%p)", (void *)u);
  else lua_pushliteral(L, UB_SSE " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"feed", l_feed},
  {"finish", l_finish},
  {"retry", l_retry},
  {"close", l_close},
  {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__gc", l_close},
  {"__close", l_close},
  {"__tostring", l_tostring},
  {"__index", NULL},
  {NULL, NULL},
};

void ub_open_sse_parser(lua_State *L) {
  luaL_newmetatable(L, UB_SSE);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "sse_parser");
}
