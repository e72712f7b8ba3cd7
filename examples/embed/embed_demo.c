/*
** embed_demo: unsandbox inside your own C program (a game engine, an
** editor, a server) that already owns a lua_State.
**
** What an embedder has to do, all of it below:
**   1. link the core and binding objects (see the Makefile's rule for this
**      file) and lua-cjson (-llua5.4-cjson);
**   2. make the C modules reachable by `require`: either eagerly with
**      luaL_requiref, or lazily through package.preload;
**   3. let `require "unsandbox"` find the Lua facade: put the directory
**      that holds unsandbox/init.lua on package.path.
** Configuration then comes from the usual places (UNSANDBOX_URL,
** UNSANDBOX_PUBLIC_KEY, UNSANDBOX_SECRET_KEY, ~/.unsandbox/accounts.csv).
**
** Usage: embed_demo [lua-dir]     (default: UNSANDBOX_LUA_DIR, "lua")
** Run it from the repository root, or pass the path of its lua/ directory.
*/
#include <stdio.h>
#include <stdlib.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "lua-cjson.h"

#ifndef UNSANDBOX_LUA_DIR
#define UNSANDBOX_LUA_DIR "lua"
#endif

/* The binding's entry point (csrc/lua/). */
extern int luaopen_unsandbox_core(lua_State *L);

/* The "game logic": plain Lua, as a script of the engine would be. */
static const char script[] =
  "local unsandbox = require 'unsandbox'\n"
  "print('x.py is ' .. unsandbox.detect_language('x.py'))\n"
  "if os.getenv('UNSANDBOX_URL') then\n"
  "  local r = assert(unsandbox.execute_code('python', 'print(6*7)'))\n"
  "  io.write('python printed: ', r.stdout)\n"
  "else\n"
  "  print('(set UNSANDBOX_URL and keys to run code remotely)')\n"
  "end\n";

/* Message handler: adds a traceback to whatever the script raised. */
static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : luaL_tolstring(L, 1, NULL), 1);
  return 1;
}

/* Step 2: unsandbox.core is loaded on first `require` (the facade does
** that); cjson is opened at once and kept out of the globals (glb = 0). */
static void open_unsandbox(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_unsandbox_core);
  lua_setfield(L, -2, "unsandbox.core");
  lua_pop(L, 1);
  luaL_requiref(L, "cjson", luaopen_cjson, 0);
  lua_pop(L, 1);
}

/* Step 3: package.path = "<dir>/?.lua;<dir>/?/init.lua;" .. package.path */
static void add_lua_dir(lua_State *L, const char *dir) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

int main(int argc, char **argv) {
  int status;
  lua_State *L = luaL_newstate();   /* the engine owns its state */
  if (L == NULL) return EXIT_FAILURE;
  luaL_openlibs(L);
  open_unsandbox(L);
  add_lua_dir(L, argc > 1 ? argv[1] : UNSANDBOX_LUA_DIR);

  /* Never let an error escape unprotected: run the chunk with lua_pcall.
  ** (An engine that wants Ctrl-C to stop a running request can call
  ** unsb_interrupt_request() from core/interrupt.h in its signal handler.) */
  lua_pushcfunction(L, traceback);
  status = luaL_loadbuffer(L, script, sizeof script - 1, "=embed_demo");
  if (status == LUA_OK) status = lua_pcall(L, 0, 0, -2);
  if (status != LUA_OK) fprintf(stderr, "embed_demo: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
