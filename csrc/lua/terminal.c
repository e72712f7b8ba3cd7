/*
** unsandbox.Terminal: the userdata around a session's terminal
** connection (core/ws_client.h). Shaped like client.c: created closed
** (NULL), then given its connection, so an error in between leaves
** nothing behind; __gc, __close and close() are one idempotent closer.
** The connection copies what it needs from the Client at open (URL,
** credentials, CA file), so a Terminal outlives a one-off Client.
**
** Marshalling only: the facade (lua/unsandbox/terminal.lua) decodes the
** control messages with cjson, turns failures into unsandbox.Error and
** builds read()/shell() on _service and _next. Waiting blocks the calling
** thread (libwebsockets has its own loop; a task does not yield here).
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>

#include "core/ws_client.h"

#define UB_TERMINAL "unsandbox.Terminal"

typedef struct {
  unsb_ws *ws;   /* NULL = closed */
} lterminal;

static unsb_ws *check_open(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  if (!u->ws) luaL_error(L, "attempt to use a closed Terminal");
  return u->ws;
}

/* nil, kind, message[, status]: the shape of every expected failure here. */
static int push_fail(lua_State *L, const unsb_error *err, int status) {
  int n = ub_push_error(L, err);
  if (status <= 0) return n;
  lua_pushinteger(L, status);
  return n + 1;
}

static const char *const OPEN_OPTIONS[] = {"connect_timeout", "max_input", "debug", NULL};

/* core.terminal_open(client, id[, {connect_timeout = ms, max_input = n,
** debug = bool}]) -> Terminal | nil, kind, message[, http status] */
static int l_open(lua_State *L) {
  ub_client *c = luaL_checkudata(L, 1, UB_CLIENT);
  const char *id = ub_check_string(L, 2, "id", NULL);
  const unsb_credentials *cred;
  unsb_ws_config cfg;
  unsb_error err;
  int status = 0;
  lterminal *u;

  if (!c->c) return luaL_error(L, "attempt to use a closed Client");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    ub_check_keys(L, 3, 3, OPEN_OPTIONS);
  } else {
    lua_settop(L, 2);
    lua_newtable(L);
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.connect_timeout_ms =
    (long)ub_field_ms(L, 3, 3, "connect_timeout", unsb_client_connect_timeout(c->c));
  lua_Integer max = ub_field_count(L, 3, 3, "max_input", UNSB_WS_DEFAULT_MAX_INPUT);
  if (max < 1) return luaL_argerror(L, 3, "max_input: must be positive");
  cfg.max_input = (size_t)max;
  lua_getfield(L, 3, "debug");
  cfg.debug = lua_toboolean(L, -1);
  lua_pop(L, 1);

  u = lua_newuserdatauv(L, sizeof *u, 0);
  u->ws = NULL;
  luaL_setmetatable(L, UB_TERMINAL);
  if (unsb_client_credentials(c->c, &cred, &err) != 0) return push_fail(L, &err, 0);
  cfg.base_url = unsb_client_url(c->c);
  cfg.session_id = id;
  cfg.cred = cred;
  cfg.ca_file = unsb_client_ca_file(c->c);
  if (!(u->ws = unsb_ws_open(&cfg, &status, &err))) return push_fail(L, &err, status);
  return 1;
}

/* t:_send(bytes) -> true | nil, kind, message */
static int l_send(lua_State *L) {
  unsb_ws *ws = check_open(L);
  size_t len;
  const char *s = ub_check_string(L, 2, "bytes", &len);
  unsb_error err;
  if (unsb_ws_send(ws, s, len, &err) != 0) return push_fail(L, &err, 0);
  lua_pushboolean(L, 1);
  return 1;
}

/* t:_resize(cols, rows) -> true | nil, kind, message */
static int l_resize(lua_State *L) {
  unsb_ws *ws = check_open(L);
  lua_Integer cols = luaL_checkinteger(L, 2), rows = luaL_checkinteger(L, 3);
  unsb_error err;
  luaL_argcheck(L, cols >= UNSB_WS_MIN_SIZE && cols <= UNSB_WS_MAX_SIZE, 2, "cols: 1..1000");
  luaL_argcheck(L, rows >= UNSB_WS_MIN_SIZE && rows <= UNSB_WS_MAX_SIZE, 3, "rows: 1..1000");
  if (unsb_ws_resize(ws, (int)cols, (int)rows, &err) != 0) return push_fail(L, &err, 0);
  lua_pushboolean(L, 1);
  return 1;
}

/* t:_service(timeout_ms[, fd]) -> ready, fd_ready | nil, kind, message */
static int l_service(lua_State *L) {
  unsb_ws *ws = check_open(L);
  lua_Integer ms = luaL_checkinteger(L, 2);
  lua_Integer fd = luaL_optinteger(L, 3, -1);
  int extra = 0, rc;
  unsb_error err;
  luaL_argcheck(L, ms >= 0 && ms <= 24 * 3600 * 1000, 2, "timeout out of range");
  luaL_argcheck(L, fd >= -1 && fd <= 1 << 20, 3, "bad file descriptor");
  rc = unsb_ws_service(ws, (int)ms, (int)fd, &extra, &err);
  if (rc < 0) return push_fail(L, &err, 0);
  lua_pushboolean(L, rc);
  lua_pushboolean(L, extra);
  return 2;
}

/* t:_next() -> data, is_text | nil (nothing queued) */
static int l_next(lua_State *L) {
  unsb_ws *ws = check_open(L);
  char **box = ub_box_new(L);
  size_t len;
  int text;
  if (!unsb_ws_next(ws, box, &len, &text)) return 0;
  ub_box_push(L, box, len);
  lua_pushboolean(L, text);
  return 2;
}

/* t:_ended() -> false | true | nil, kind, message, close code */
static int l_ended(lua_State *L) {
  unsb_ws *ws = check_open(L);
  unsb_error err;
  int rc = unsb_ws_ended(ws, &err);
  if (rc >= 0) {
    lua_pushboolean(L, rc);
    return 1;
  }
  ub_push_error(L, &err);
  lua_pushinteger(L, unsb_ws_close_code(ws));
  return 4;
}

static int l_pending(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)unsb_ws_pending_input(check_open(L)));
  return 1;
}

/* close([wait_ms]): the closer of __gc and __close too (they pass no
** number, so they wait the default second for the server's close). */
static int l_close(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  lua_Integer ms = lua_isinteger(L, 2) ? lua_tointeger(L, 2) : 1000;
  if (ms < 0) ms = 0;
  if (ms > 60000) ms = 60000;
  if (u->ws) {
    unsb_ws *ws = u->ws;
    u->ws = NULL;
    unsb_ws_close(ws, (int)ms);
  }
  return 0;
}

static int l_tostring(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  lua_pushstring(L, u->ws ? UB_TERMINAL : UB_TERMINAL " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"_send", l_send}, {"_resize", l_resize}, {"_service", l_service}, {"_next", l_next},
  {"_ended", l_ended}, {"_pending", l_pending}, {"close", l_close}, {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL},
  {NULL, NULL},
};

void ub_open_terminal(lua_State *L) {
  luaL_newmetatable(L, UB_TERMINAL);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  /* core.Terminal: the facade adds its Lua methods (read, send, ...) here */
  lua_setfield(L, -3, "Terminal");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_open);
  lua_setfield(L, -2, "terminal_open");
  lua_pushinteger(L, UNSB_WS_MAX_SIZE);
  lua_setfield(L, -2, "TERMINAL_MAX_SIZE");
}
