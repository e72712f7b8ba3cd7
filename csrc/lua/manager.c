/*
** unsandbox.Manager: the userdata around a core Control Plane client
** (core/cpclient.h), shaped like unsandbox.Client: created closed, then
** given its client, so an error while reading options leaves nothing to
** clean up; __gc, __close and close() are one idempotent closer that
** wipes the token and the leases.
**
** core.manager raises a refused option (or environment variable: then
** without "bad argument"), core.cp.manager returns it (binding.h).
** The C methods are the facade's building blocks and start with '_':
** `_request` (one buffered call: exchange.c, yielding inside a task),
** `_open` (the call as a Transfer Lua steps), the lease operations
** (manager_lease.c). Its engine runs on the Lua state's one loop. The public methods are Lua
** (lua/unsandbox/manager.lua and friends) and are added to core.Manager.
** The userdata's user value is a table where the facade keeps per-Manager
** Lua state (the clock, the acting subjects bound per coroutine).
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>

#include "core/cpclient.h"

unsb_cp *ub_manager_check(lua_State *L, int idx) {
  ub_manager *u = luaL_checkudata(L, idx, UB_MANAGER);
  if (!u->c) luaL_error(L, "attempt to use a closed Manager");
  return u->c;
}

static const char *const OPTIONS[] = {
  "url", "token", "session", "refresh", "tenant", "timeout", "connect_timeout", "ca_file",
  "max_response", "lease_capacity", "env", "max_concurrency", NULL,
};

/* env= : a table standing in for the environment's SANDBOX_* variables. */
static void env_opts(lua_State *L, int t, unsb_cp_config *cfg) {
  static const char *const NAMES[] = {UNSB_ENV_CP_URL, UNSB_ENV_CP_TOKEN, UNSB_ENV_CP_SESSION,
                                      UNSB_ENV_CP_REFRESH};
  const char **dest[] = {&cfg->env_url, &cfg->env_token, &cfg->env_session, &cfg->env_refresh};
  if (lua_getfield(L, t, "env") == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (!lua_istable(L, -1)) ub_type_error(L, 1, -1, "env", "table");
  for (size_t i = 0; i < 4; i++) {
    int vt = lua_getfield(L, -1, NAMES[i]);
    if (vt != LUA_TNIL && vt != LUA_TSTRING)
      ub_type_error(L, 1, -1, lua_pushfstring(L, "env.%s", NAMES[i]), "string");
    *dest[i] = vt == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);   /* the env table keeps it alive */
  }
  lua_pop(L, 1);     /* the options table keeps env alive */
}

/* The options at 1 into cfg: NULL, or why a value is refused (a wrong
** type raises). */
static const char *read_options(lua_State *L, unsb_cp_config *cfg) {
  unsb_cp_config_from_environ(cfg);
  env_opts(L, 1, cfg);
  cfg->url = ub_field_string(L, 1, 1, "url", NULL);
  cfg->token = ub_field_string(L, 1, 1, "token", NULL);
  cfg->session = ub_field_string(L, 1, 1, "session", NULL);
  cfg->tenant = ub_field_string(L, 1, 1, "tenant", NULL);
  cfg->ca_file = ub_field_string(L, 1, 1, "ca_file", NULL);
  cfg->timeout_ms = (long)ub_field_ms(L, 1, 1, "timeout", UNSB_CP_DEFAULT_TIMEOUT_MS);
  cfg->connect_timeout_ms = (long)ub_field_ms(L, 1, 1, "connect_timeout", 10000);
  lua_Integer max = ub_field_count(L, 1, 1, "max_response", (lua_Integer)UNSB_CP_DEFAULT_MAX_RESPONSE);
  if (max < 1) return "max_response: must be positive";
  cfg->max_response = (size_t)max;
  cfg->lease_capacity = (size_t)ub_field_count(L, 1, 1, "lease_capacity", 0);
  lua_Integer conc = ub_field_count(L, 1, 1, "max_concurrency", UNSB_HTTP_DEFAULT_CONCURRENCY);
  if (conc < 1 || conc > UNSB_HTTP_MAX_CONCURRENCY)
    return lua_pushfstring(L, "max_concurrency: from 1 to %d", UNSB_HTTP_MAX_CONCURRENCY);
  cfg->max_concurrency = (int)conc;
  cfg->loop = ub_loop(L);
  /* refresh: whole seconds, through the same rule as the environment's;
  ** the text stays on the stack (the caller returns its userdata by index) */
  if (lua_getfield(L, 1, "refresh") != LUA_TNIL) {
    if (!lua_isinteger(L, -1)) ub_type_error(L, 1, -1, "refresh", "integer");
    cfg->refresh = lua_pushfstring(L, UB_I, UB_IARG(lua_tointeger(L, -1)));
  }
  return NULL;
}

/* core.manager{...} (the facade copies the caller's table first) */
static int manager(lua_State *L, ub_mode mode) {
  unsb_cp_config cfg;
  unsb_error err;
  ub_manager *u;
  const char *why;
  if (!lua_isnoneornil(L, 1)) {
    if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "opts", "table");
    ub_check_keys(L, 1, 1, OPTIONS);
    lua_settop(L, 1);
  } else {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  u = lua_newuserdatauv(L, sizeof *u, 1);   /* at index 2 */
  u->c = NULL;
  luaL_setmetatable(L, UB_MANAGER);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);
  if ((why = read_options(L, &cfg))) return ub_bad_value(L, mode, 1, why);
  /* a refused option, or a variable of the environment (err.arg) */
  if (!(u->c = unsb_cp_new(&cfg, &err))) return ub_bad_error(L, mode, 1, &err);
  lua_pushvalue(L, 2);
  return 1;
}
UB_BOTH(manager)

static int l_close(lua_State *L) {
  ub_manager *u = luaL_checkudata(L, 1, UB_MANAGER);
  if (u->c) {
    unsb_cp_free(u->c);   /* also closes its open transfers */
    u->c = NULL;
  }
  return 0;
}

static int l_tostring(lua_State *L) {
  ub_manager *u = luaL_checkudata(L, 1, UB_MANAGER);
  if (u->c) lua_pushfstring(L, UB_MANAGER " (%s)", unsb_cp_url(u->c));
  else lua_pushliteral(L, UB_MANAGER " (closed)");
  return 1;
}

static int l_url(lua_State *L) {
  lua_pushstring(L, unsb_cp_url(ub_manager_check(L, 1)));
  return 1;
}

/* is_configured(): a URL (always) and a token (§3). */
static int l_is_configured(lua_State *L) {
  lua_pushboolean(L, unsb_cp_has_token(ub_manager_check(L, 1)));
  return 1;
}

static int l_session_id(lua_State *L) {
  const char *s = unsb_cp_session_id(ub_manager_check(L, 1));
  if (s) lua_pushstring(L, s);
  else lua_pushnil(L);
  return 1;
}

static int l_config(lua_State *L) {
  unsb_cp *c = ub_manager_check(L, 1);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)unsb_cp_refresh_period(c));
  lua_setfield(L, -2, "refresh");
  lua_pushinteger(L, unsb_cp_timeout(c));
  lua_setfield(L, -2, "timeout");
  if (unsb_cp_tenant(c)) {
    lua_pushstring(L, unsb_cp_tenant(c));
    lua_setfield(L, -2, "tenant");
  }
  lua_pushboolean(L, unsb_cp_has_token(c));
  lua_setfield(L, -2, "has_token");
  return 1;
}

/* The facade's per-Manager table (user value 1). */
static int l_state(lua_State *L) {
  ub_manager_check(L, 1);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* The next MCP request id of this Manager. */
static int l_next_mcp_id(lua_State *L) {
  char id[UNSB_MCP_ID_MAX];
  unsb_error err;
  if (unsb_mcp_next_id(unsb_cp_mcp_ids(ub_manager_check(L, 1)), id, &err) != 0)
    return luaL_error(L, "%s", err.message);
  lua_pushstring(L, id);
  return 1;
}

/* The call at 2..5 opened as a new Transfer (pushed) of mode; 0, or
** pushes the failure and returns its count. */
static int open_call(lua_State *L, int mode) {
  unsb_cp *c = ub_manager_check(L, 1);
  unsb_cp_call call;
  unsb_error err;
  const char *names[UNSB_HTTP_CAPTURE_MAX];
  unsb_http_xfer *x;
  ub_cp_call_args(L, &call, names);
  lua_settop(L, 5);
  const char *from = lua_istable(L, 5) ? ub_field_string(L, 5, 5, "from", NULL) : NULL;
  const char *to = lua_istable(L, 5) ? ub_field_string(L, 5, 5, "to", NULL) : NULL;
  if (from && call.body) return luaL_argerror(L, 5, "from: a body is given already");
  if (to && mode != UB_XFER_BUFFER) return luaL_argerror(L, 5, "to: for _request only");
  ub_transfer *t = ub_transfer_new(L, 1, 4, 5, to ? UB_XFER_FILE : mode);
  if (to && ub_transfer_to_file(t, to, &err) != 0) return ub_push_error(L, &err);
  if (from && ub_transfer_from_file(t, from, &call.body_fd, &call.body_fd_len, &err) != 0)
    return ub_push_error(L, &err);
  call.has_body_fd = from != NULL;
  call.large = to != NULL;   /* files are what is large */
  call.stream = ub_transfer_stream(t);
  if (!(x = unsb_cp_open(c, &call, &err))) return ub_push_error(L, &err);
  ub_transfer_set(t, x);
  return 0;
}

/* m:_request(method, path, body, opts) -> resp | nil, kind, message, info */
static int l_request(lua_State *L) {
  int n = open_call(L, UB_XFER_BUFFER);
  return n ? n : ub_transfer_finish(L, lua_gettop(L));
}

/* m:_open(method, path, body, opts): opts.mode "sse" (default) or "raw" */
static int l_open(lua_State *L) {
  const char *mode = lua_istable(L, 5) ? ub_field_string(L, 5, 5, "mode", NULL) : NULL;
  if (mode && strcmp(mode, "sse") != 0 && strcmp(mode, "raw") != 0)
    return luaL_argerror(L, 5, "mode: \"sse\" or \"raw\" expected");
  int n = open_call(L, mode && !strcmp(mode, "raw") ? UB_XFER_RAW : UB_XFER_SSE);
  return n ? n : 1;
}

static const luaL_Reg METHODS[] = {
  {"_request", l_request},
  {"_open", l_open},
  {"_state", l_state},
  {"_next_mcp_id", l_next_mcp_id},
  {"_config", l_config},
  {"url", l_url},
  {"is_configured", l_is_configured},
  {"session_id", l_session_id},
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

void ub_open_manager(lua_State *L) {
  luaL_newmetatable(L, UB_MANAGER);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  ub_lease_methods(L);               /* the lease operations join the methods */
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -3, "Manager");    /* core.Manager, for the facade's methods */
  lua_pop(L, 1);
  static const luaL_Reg FUNCTIONS[] = {{"manager", l_manager}, {NULL, NULL}};
  static const luaL_Reg RETURNING[] = {{"manager", r_manager}, {NULL, NULL}};
  ub_register(L, FUNCTIONS, RETURNING);
  /* the options core.manager takes, the one list the facade's is made from */
  ub_push_names(L, OPTIONS);
  lua_setfield(L, -2, "MANAGER_OPTIONS");
}
