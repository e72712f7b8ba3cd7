/*
** The one place where the Lua versions the binding is built for differ:
** 5.4 (the reference), 5.3, 5.1 and LuaJIT 2.1 (the 5.1 API). Every other
** file of csrc/lua includes this (through binding.h) instead of lua.h and
** is written against the 5.4 API, with no version test of its own.
**
** 5.1 and LuaJIT get the 5.2/5.3 API (lua_rawgetp, luaL_setfuncs,
** luaL_testudata, typed lua_getfield / lua_rawgeti results, ...) from
** Debian's lua-compat53 (compat-5.3.h), whose functions come in as static
** code of each file that uses them. What it lacks, 5.4's numbered user
** values, is emulated below for 5.1, LuaJIT and 5.3 alike: a userdata
** made with user values holds them in a table, its single user value
** (5.1's environment). The binding never yields from C (calls inside a
** task return core.YIELD and the facade yields), so no continuation API
** is needed; lua_isyieldable, which 5.1 lacks, answers yes there: the
** scheduler's registration of the thread decides, and the binding's own
** calls into Lua (ub_call_lua, loop.c) never wait as a task.
*/
#ifndef UNSB_LUA_COMPAT_H
#define UNSB_LUA_COMPAT_H

#include <stddef.h>

#include <lua.h>
#include <lauxlib.h>

#if LUA_VERSION_NUM == 501 && defined(__has_include)
#  if __has_include(<luajit.h>)
#    include <luajit.h>
#  endif
#endif
#if LUA_VERSION_NUM < 503
#  include <compat-5.3.h>
#endif

/* 5.1 and LuaJIT: lua_Integer is ptrdiff_t (numbers are doubles) */
#if LUA_VERSION_NUM < 503
#  include <stdint.h>
#  define LUA_MININTEGER PTRDIFF_MIN
#  define LUA_MAXINTEGER PTRDIFF_MAX
#  define LUA_INTEGER_FMT "%td"
#endif

/* lua_pushfstring's conversion of a lua_Integer: "%I" from 5.3 on; 5.1
** has none, and its "%f" of the value as a number prints an integral one
** the same way (LUA_NUMBER_FMT, "%.14g"). */
#if LUA_VERSION_NUM >= 503
#  define UB_I "%I"
#  define UB_IARG(v) ((lua_Integer)(v))
#else
#  define UB_I "%f"
#  define UB_IARG(v) ((lua_Number)(v))
#endif

#ifndef LUAMOD_API
#  define LUAMOD_API LUALIB_API
#endif

#if LUA_VERSION_NUM < 504
void *ub_newuserdatauv(lua_State *L, size_t size, int nuv);
int ub_getiuservalue(lua_State *L, int idx, int n);
int ub_setiuservalue(lua_State *L, int idx, int n);
#  define lua_newuserdatauv ub_newuserdatauv
#  define lua_getiuservalue ub_getiuservalue
#  define lua_setiuservalue ub_setiuservalue
#endif

/* PUC 5.1 (LuaJIT's lua.h declares lua_isyieldable) */
#if LUA_VERSION_NUM == 501 && !defined(LUAJIT_VERSION)
#  define UB_NO_ISYIELDABLE 1
#  define lua_isyieldable(L) ((void)(L), 1)
#endif

#endif
