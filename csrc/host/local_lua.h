/*
** The `unlua.local` module of unlua (local_lua.c): the user's lasting
** local server for the `un local` commands. Its loader's upvalue is the
** directory of unlua.
*/
#ifndef UNLUA_LOCAL_LUA_H
#define UNLUA_LOCAL_LUA_H

#include "lua.h"

int luaopen_unlua_local(lua_State *L);

#endif
