/*
** luaopen_unsandbox_core: assembles the module from its parts. The only
** state is in the registry (the metatables); nothing is a C global, so two
** Lua states in one process never interfere. libcurl is initialised by
** the first client (unsb_http_new), not here: requiring the module does
** not load the network stack (csrc/lazy/lazy.h).
*/
#include "lua/binding.h"

#include "core/version.h"

LUAMOD_API int luaopen_unsandbox_core(lua_State *L) {
  luaL_checkversion(L);
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
  ub_open_validate(L);
  ub_open_terminal(L);
  ub_open_tty(L);
  lua_pushliteral(L, UNSB_VERSION);
  lua_setfield(L, -2, "VERSION");
  return 1;
}
