/*
** The Manager's lease operations (core/lease.h, core/leasecache.h) for
** the facade, which runs the §7.7/§7.8 flows: decide, copy, request, then
** apply. Each method looks the lease up afresh by session id, so no lease
** pointer outlives a call into C; what a request needs (ids, tokens) is
** copied out as Lua strings. Time is the caller's `now` (whole seconds of
** the Manager's clock), so the facade can run these rules on a fake clock.
**
**   m:_ws_decide(sid, owner, refresh, now) -> "create" | "reuse", ws_id, token, owner, created
**   m:_ws_apply(sid, reply, now)           -> true | nil, "protocol", message
**   m:_rt_decide(sid, template, now)       -> "create" | "conflict", message
**                                            | "refresh", sb_id | "reuse", sb_id, token, template
**   m:_rt_apply(sid, reply, now)           -> true | nil, "protocol", message
**   m:_rt_forget(sid) · m:_lease_forget(sid)
**   m:_lease_status(sid, now)              -> {workspace_id=, workspace_ready=, ...}
**
** A reply is the decoded JSON table; fields of the wrong type count as
** absent, so the core's checks turn a bad reply into a protocol error.
*/
#include "lua/binding.h"

#include "core/cpclient.h"
#include "core/lease.h"

static unsb_lease_cache *cache(lua_State *L) { return unsb_cp_leases(ub_manager_check(L, 1)); }

static const char *sid_arg(lua_State *L) { return ub_check_string(L, 2, "session_id", NULL); }

static int64_t now_arg(lua_State *L, int arg) {
  if (!lua_isinteger(L, arg)) ub_type_error(L, arg, arg, "now", "integer");
  return (int64_t)lua_tointeger(L, arg);
}

static unsb_lease *obtain(lua_State *L, const char *sid) {
  unsb_error err;
  unsb_lease *l = unsb_lease_cache_obtain(cache(L), sid, &err);
  if (!l) luaL_argerror(L, 2, err.message);
  return l;
}

/* A string field of the reply at t, or NULL. */
static const char *rstr(lua_State *L, int t, const char *name) {
  const char *s = NULL;
  if (lua_getfield(L, t, name) == LUA_TSTRING) s = lua_tostring(L, -1);
  lua_pop(L, 1);   /* the reply table keeps it alive */
  return s;
}

static long long reply_int(lua_State *L, int t, const char *name) {
  long long v = -1;
  int exact = 0;
  if (lua_getfield(L, t, name) == LUA_TNUMBER) {
    lua_Integer i = lua_tointegerx(L, -1, &exact);
    if (exact && i >= 0) v = (long long)i;
  }
  lua_pop(L, 1);
  return v;
}

static int push_status_or_error(lua_State *L, int rc, const unsb_error *err) {
  if (rc != 0) return ub_push_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_ws_decide(lua_State *L) {
  const char *sid = sid_arg(L);
  const char *owner = ub_opt_string(L, 3, "owner", NULL);
  int refresh = lua_toboolean(L, 4);
  int64_t now = now_arg(L, 5);
  unsb_lease *l = obtain(L, sid);
  if (unsb_lease_workspace_action(l, owner, refresh, now, unsb_cp_refresh_period(ub_manager_check(L, 1))) !=
      UNSB_LEASE_REUSE) {
    lua_pushliteral(L, "create");
    return 1;
  }
  lua_pushliteral(L, "reuse");
  lua_pushstring(L, l->workspace_id);
  lua_pushstring(L, l->ws_token);
  if (l->ws_owner) lua_pushstring(L, l->ws_owner);
  else lua_pushnil(L);
  lua_pushboolean(L, l->ws_created);
  return 5;
}

static int l_ws_apply(lua_State *L) {
  const char *sid = sid_arg(L);
  unsb_error err;
  luaL_checktype(L, 3, LUA_TTABLE);
  int64_t now = now_arg(L, 4);
  unsb_workspace_reply r = {
    .workspace_id = rstr(L, 3, "workspace_id"),
    .access_token = rstr(L, 3, "access_token"),
    .owner = rstr(L, 3, "owner"),
    .expires_in = reply_int(L, 3, "access_token_expires_in"),
    .created = -1,
  };
  if (lua_getfield(L, 3, "created") == LUA_TBOOLEAN) r.created = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return push_status_or_error(L, unsb_lease_set_workspace(obtain(L, sid), &r, now, &err), &err);
}

static int l_rt_decide(lua_State *L) {
  const char *sid = sid_arg(L);
  const char *tmpl = ub_opt_string(L, 3, "template", NULL);
  int64_t now = now_arg(L, 4);
  unsb_error err;
  unsb_lease *l = obtain(L, sid);
  switch (unsb_lease_runtime_action(l, tmpl, now, unsb_cp_refresh_period(ub_manager_check(L, 1)), &err)) {
    case UNSB_LEASE_CREATE:
      lua_pushliteral(L, "create");
      return 1;
    case UNSB_LEASE_CONFLICT:
      lua_pushliteral(L, "conflict");
      lua_pushstring(L, err.message);
      return 2;
    case UNSB_LEASE_REFRESH:
      lua_pushliteral(L, "refresh");
      lua_pushstring(L, l->sandbox_id);
      return 2;
    case UNSB_LEASE_REUSE:
      break;
  }
  lua_pushliteral(L, "reuse");
  lua_pushstring(L, l->sandbox_id);
  lua_pushstring(L, l->sb_token);
  lua_pushstring(L, l->template_id[0] ? l->template_id : UNSB_DEFAULT_TEMPLATE);
  return 4;
}

/* reply: a SandboxLease ({id, access_token, template, ...}) or a
** ScopedToken ({id, access_token}: the template is kept). */
static int l_rt_apply(lua_State *L) {
  const char *sid = sid_arg(L);
  unsb_error err;
  luaL_checktype(L, 3, LUA_TTABLE);
  int64_t now = now_arg(L, 4);
  unsb_runtime_reply r = {
    .sandbox_id = rstr(L, 3, "id"),
    .access_token = rstr(L, 3, "access_token"),
    .template_id = rstr(L, 3, "template"),
    .expires_in = reply_int(L, 3, "access_token_expires_in"),
  };
  return push_status_or_error(L, unsb_lease_set_runtime(obtain(L, sid), &r, now, &err), &err);
}

static int l_rt_forget(lua_State *L) {
  unsb_lease *l = unsb_lease_cache_find(cache(L), sid_arg(L));
  if (l) unsb_lease_forget_runtime(l);
  return 0;
}

static int l_lease_forget(lua_State *L) {
  lua_pushboolean(L, unsb_lease_cache_remove(cache(L), sid_arg(L)));
  return 1;
}

static void set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static int l_lease_status(lua_State *L) {
  const char *sid = sid_arg(L);
  int64_t now = now_arg(L, 3);
  unsb_lease *l = unsb_lease_cache_find(cache(L), sid);
  unsb_lease_status st = {0};
  if (l) unsb_lease_get_status(l, now, &st);
  lua_createtable(L, 0, 6);
  set_str(L, "session_id", sid);
  set_str(L, "workspace_id", st.workspace_id);
  set_str(L, "sandbox_id", st.sandbox_id);
  set_str(L, "template", st.template_id);
  lua_pushboolean(L, st.workspace_ready);
  lua_setfield(L, -2, "workspace_ready");
  lua_pushboolean(L, st.runtime_ready);
  lua_setfield(L, -2, "runtime_ready");
  return 1;
}

static int l_lease_count(lua_State *L) {
  unsb_lease_cache *c = cache(L);
  lua_pushinteger(L, (lua_Integer)unsb_lease_cache_count(c));
  lua_pushinteger(L, (lua_Integer)unsb_lease_cache_capacity(c));
  return 2;
}

static const luaL_Reg LEASE_METHODS[] = {
  {"_ws_decide", l_ws_decide},
  {"_ws_apply", l_ws_apply},
  {"_rt_decide", l_rt_decide},
  {"_rt_apply", l_rt_apply},
  {"_rt_forget", l_rt_forget},
  {"_lease_forget", l_lease_forget},
  {"_lease_status", l_lease_status},
  {"_lease_count", l_lease_count},
  {NULL, NULL},
};

void ub_lease_methods(lua_State *L) { luaL_setfuncs(L, LEASE_METHODS, 0); }
