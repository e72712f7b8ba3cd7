/*
** unsandbox.Sandbox: a named sandbox of a Manager (spec §8: the name is
** the session key). The userdata holds the name and its session id and
** keeps its Manager alive through user value 1; the methods are Lua
** (lua/unsandbox/sandbox.lua), added to core.Sandbox.
**
** Closing differs from the house pattern on purpose: `__close` (the end
** of a `local sb <close>` block, also by error) calls the facade's
** `_on_close`, which releases the runtime over the network; `__gc` only
** marks the object closed, because a finalizer may run at any point,
** even while another call of the same Manager is in flight, and must
** never do I/O. Using a closed Sandbox raises "attempt to use a closed
** Sandbox". core.sandbox raises a refused name, core.cp.sandbox returns
** it (binding.h).
*/
#include "lua/binding.h"

#include <string.h>

#include "core/cpids.h"

typedef struct {
  int open;
  char name[UNSB_SANDBOX_NAME_MAX + 1];
  char session_id[UNSB_SESSION_ID_LEN + 1];
} lsandbox;

static lsandbox *check_open(lua_State *L) {
  lsandbox *s = luaL_checkudata(L, 1, UB_SANDBOX);
  if (!s->open) luaL_error(L, "attempt to use a closed Sandbox");
  return s;
}

/* core.sandbox(manager, name): the name's rule is core/cpids.h's */
static int sandbox(lua_State *L, ub_mode mode) {
  size_t len;
  unsb_error err;
  ub_manager_check(L, 1);
  const char *name = ub_check_string(L, 2, "name", &len);
  const char *why = unsb_cp_sandbox_name_check(name, len);
  if (why) return ub_bad_value(L, mode, 2, lua_pushfstring(L, "name: %s", why));
  lsandbox *s = lua_newuserdatauv(L, sizeof *s, 1);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, UB_SANDBOX);
  if (unsb_session_id(name, len, s->session_id, &err) != 0)   /* the name was checked */
    return ub_bad_error(L, mode, 2, &err);
  memcpy(s->name, name, len);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  s->open = 1;
  return 1;
}
UB_BOTH(sandbox)

static int l_name(lua_State *L) {
  lua_pushstring(L, check_open(L)->name);
  return 1;
}

static int l_session_id(lua_State *L) {
  lua_pushstring(L, check_open(L)->session_id);
  return 1;
}

static int l_manager(lua_State *L) {
  check_open(L);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

static int l_is_open(lua_State *L) {
  lsandbox *s = luaL_checkudata(L, 1, UB_SANDBOX);
  lua_pushboolean(L, s->open);
  return 1;
}

/* Marks the object closed; no I/O (see above). */
static int l_mark_closed(lua_State *L) {
  lsandbox *s = luaL_checkudata(L, 1, UB_SANDBOX);
  s->open = 0;
  return 0;
}

/* __close(sb, err): the facade's _on_close(sb, err) releases the runtime. */
static int l_close_meta(lua_State *L) {
  lsandbox *s = luaL_checkudata(L, 1, UB_SANDBOX);
  lua_settop(L, 2);
  if (!s->open) return 0;
  if (lua_getfield(L, 1, "_on_close") != LUA_TFUNCTION) {
    s->open = 0;
    return 0;
  }
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  int rc = ub_call_lua(L, 2, 0);
  s->open = 0;                       /* closed even when the release failed */
  if (rc != LUA_OK) return lua_error(L);
  return 0;
}

static int l_tostring(lua_State *L) {
  lsandbox *s = luaL_checkudata(L, 1, UB_SANDBOX);
  if (s->open) lua_pushfstring(L, UB_SANDBOX " (%s)", s->name);
  else lua_pushliteral(L, UB_SANDBOX " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"name", l_name},
  {"session_id", l_session_id},
  {"manager", l_manager},
  {"is_open", l_is_open},
  {"_mark_closed", l_mark_closed},
  {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__gc", l_mark_closed},
  {"__close", l_close_meta},
  {"__tostring", l_tostring},
  {"__index", NULL},
  {NULL, NULL},
};

void ub_open_sandbox(lua_State *L) {
  luaL_newmetatable(L, UB_SANDBOX);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -3, "Sandbox");
  lua_pop(L, 1);
  static const luaL_Reg FUNCTIONS[] = {{"sandbox", l_sandbox}, {NULL, NULL}};
  static const luaL_Reg RETURNING[] = {{"sandbox", r_sandbox}, {NULL, NULL}};
  ub_register(L, FUNCTIONS, RETURNING);
}
