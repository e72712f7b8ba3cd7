/*
** 5.4's numbered user values on 5.1, LuaJIT and 5.3 (compat.h): the
** values live in a table that is the userdata's one user value (5.1's
** environment, which must be a table). Nothing here on 5.4.
*/
#include "lua/compat.h"

#if LUA_VERSION_NUM < 504

void *ub_newuserdatauv(lua_State *L, size_t size, int nuv) {
  void *p = lua_newuserdata(L, size);
  if (nuv > 0) {
    lua_createtable(L, nuv, 0);
    lua_setuservalue(L, -2);
  }
  return p;
}

/* Pushes user value n (nil when it has none) and returns its type
** (LUA_TNONE, as 5.4 does, when the userdata has no such value). */
int ub_getiuservalue(lua_State *L, int idx, int n) {
  idx = lua_absindex(L, idx);
  lua_getuservalue(L, idx);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNONE;
  }
  lua_rawgeti(L, -1, n);
  lua_remove(L, -2);
  return lua_type(L, -1);
}

/* Pops a value into user value n; 0 when the userdata has none. */
int ub_setiuservalue(lua_State *L, int idx, int n) {
  idx = lua_absindex(L, idx);
  lua_getuservalue(L, idx);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 2);
    return 0;
  }
  lua_insert(L, -2);
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
  return 1;
}

#endif
