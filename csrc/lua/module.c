/*
** luaopen_unsandbox_core: assembles the module from its parts. The only
** state is in the registry (the metatables); nothing is a C global, so two
** Lua states in one process never interfere.
*/
#include "lua/binding.h"

#include "core/http.h"

LUAMOD_API int luaopen_unsandbox_core(lua_State *L) {
  luaL_checkversion(L);
  /* once per process, before any Lua state uses libcurl */
  if (unsb_http_global_init() != 0) return luaL_error(L, "libcurl initialisation failed");
  lua_newtable(L);
  ub_open_loop(L);                 /* before anything makes a Client or Manager */
  ub_open_functions(L);
  ub_open_files(L);
  ub_open_tracker(L);
  ub_open_client(L);
  ub_open_cp_functions(L);
  ub_open_sse_parser(L);
  ub_open_manager(L);
  ub_open_transfer(L);
  ub_open_sandbox(L);
  lua_pushliteral(L, "0.1.0");
  lua_setfield(L, -2, "VERSION");
  return 1;
}
