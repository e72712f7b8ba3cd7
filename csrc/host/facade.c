/*
** The searcher of the built-in facade (see facade.h). It is the last of
** package.searchers: only a module that no path has is taken from here.
*/
#include "host/facade.h"

#include <string.h>

#include "lauxlib.h"

static int search(lua_State *L) {
  const char *module = luaL_checkstring(L, 1);
  for (const ul_facade_file *f = ul_facade; f->module; f++) {
    if (strcmp(f->module, module) != 0) continue;
    const char *chunk = lua_pushfstring(L, "=[unlua]/unsandbox/%s.lua", f->name);
    if (luaL_loadbufferx(L, f->src, (size_t)f->len, chunk, "t") != LUA_OK)
      return luaL_error(L, "error loading built-in module '%s':\n\t%s", module, lua_tostring(L, -1));
    lua_pushstring(L, chunk + 1);   /* the loader's second argument, as for a file */
    return 2;
  }
  lua_pushfstring(L, "no built-in module '%s' in unlua", module);
  return 1;
}

void ul_facade_install(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  lua_pushcfunction(L, search);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 2);
}
