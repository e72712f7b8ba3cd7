/*
** unsandbox.PollTracker: the poll failure policy of core/poll.h as a small
** userdata for the Lua poller.
**
**   local t = core.poll_tracker()
**   t:delay(attempt)            -- ms to sleep before poll `attempt`
**   t:success()                 -- a poll answered 2xx
**   t:failure(status_or_kind)   -- "retry" | "fatal", why
**   t:state()                   -- {not_found=, errors=, after_5xx=, backoff_ms=}
*/
#include "lua/binding.h"

#include <string.h>

#include "core/poll.h"

static unsb_poll_tracker *check_tracker(lua_State *L) {
  return luaL_checkudata(L, 1, UB_TRACKER);
}

static int l_new(lua_State *L) {
  unsb_poll_tracker *t = lua_newuserdatauv(L, sizeof *t, 0);
  unsb_poll_init(t);
  luaL_setmetatable(L, UB_TRACKER);
  return 1;
}

static int l_delay(lua_State *L) {
  unsb_poll_tracker *t = check_tracker(L);
  if (!lua_isinteger(L, 2)) return ub_type_error(L, 2, 2, "attempt", "integer");
  lua_pushinteger(L, unsb_poll_next_delay(t, (long long)lua_tointeger(L, 2)));
  return 1;
}

static int l_success(lua_State *L) {
  unsb_poll_success(check_tracker(L));
  return 0;
}

static unsb_kind kind_of(const char *s) {
  static const unsb_kind kinds[] = {UNSB_ECREDENTIALS, UNSB_ETRANSPORT, UNSB_ETIMEOUT,
                                    UNSB_EPROTOCOL, UNSB_EVALIDATION, UNSB_EINTERRUPTED};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (strcmp(s, unsb_kind_name(kinds[i])) == 0) return kinds[i];
  return UNSB_EPROTOCOL;   /* anything unknown is not retried */
}

static int l_failure(lua_State *L) {
  unsb_poll_tracker *t = check_tracker(L);
  const char *why = NULL;
  int status = 0;
  unsb_kind kind = UNSB_OK;
  if (lua_isinteger(L, 2)) {
    lua_Integer s = lua_tointeger(L, 2);
    if (s < 100 || s > 999)
      return luaL_argerror(L, 2, "status_or_kind: HTTP status out of range");
    status = (int)s;
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    kind = kind_of(lua_tostring(L, 2));
  } else {
    return ub_type_error(L, 2, 2, "status_or_kind", "integer status or string kind");
  }
  if (unsb_poll_failure(t, status, kind, &why) == UNSB_POLL_RETRY) {
    lua_pushliteral(L, "retry");
    return 1;
  }
  lua_pushliteral(L, "fatal");
  lua_pushstring(L, why);
  return 2;
}

static int l_state(lua_State *L) {
  unsb_poll_tracker *t = check_tracker(L);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, t->not_found);
  lua_setfield(L, -2, "not_found");
  lua_pushinteger(L, t->errors);
  lua_setfield(L, -2, "errors");
  lua_pushboolean(L, t->after_5xx);
  lua_setfield(L, -2, "after_5xx");
  lua_pushinteger(L, t->backoff_ms);
  lua_setfield(L, -2, "backoff_ms");
  return 1;
}

static int l_tostring(lua_State *L) {
  unsb_poll_tracker *t = check_tracker(L);
  lua_pushfstring(L, UB_TRACKER " (404s %d, errors %d)", t->not_found, t->errors);
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"delay", l_delay}, {"success", l_success}, {"failure", l_failure}, {"state", l_state},
  {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__tostring", l_tostring}, {"__index", NULL}, {NULL, NULL},
};

void ub_open_tracker(lua_State *L) {
  luaL_newmetatable(L, UB_TRACKER);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "poll_tracker");
}
