/*
** local_lua.c: package.preload["unlua.local"], the user's lasting local
** server (local_server.h) for `un local start|stop|status|env`. Only unlua
** has it (the `un` CLI always runs under unlua); the module's functions
** return nil, message on failure, as the library's do. The upvalue of the
** loader is the directory of unlua, where a build tree keeps unsandboxd.
*/
#include "host/local_lua.h"
#include "host/local_server.h"

#include "lauxlib.h"

/* The settings a status shows: never a key. */
static void push_state(lua_State *L, const local_server *s, int running) {
  lua_createtable(L, 0, 8);
  lua_pushboolean(L, running);
  lua_setfield(L, -2, "running");
  if (running) {
    lua_pushinteger(L, s->pid);
    lua_setfield(L, -2, "pid");
    lua_pushstring(L, s->a.url);
    lua_setfield(L, -2, "url");
    if (s->a.cp_url[0]) {
      lua_pushstring(L, s->a.cp_url);
      lua_setfield(L, -2, "cp_url");
    }
  }
  lua_pushstring(L, s->dir);
  lua_setfield(L, -2, "dir");
  lua_pushstring(L, s->data);
  lua_setfield(L, -2, "data");
  lua_pushstring(L, s->log);
  lua_setfield(L, -2, "log");
  lua_pushstring(L, s->env);
  lua_setfield(L, -2, "env_file");
}

static int fail(lua_State *L, const char *err) {
  lua_pushnil(L);
  lua_pushstring(L, err);
  return 2;
}

/* status() -> {running, pid, url, cp_url, dir, data, log, env_file} */
static int l_status(lua_State *L) {
  local_server s;
  char err[512];
  int r = local_server_probe(&s, err, sizeof err);
  if (r < 0) return fail(L, err);
  push_state(L, &s, r == 1);
  local_server_wipe(&s);
  return 1;
}

/* start() -> state with started = true (false: it was running) */
static int l_start(lua_State *L) {
  local_server s;
  char err[512];
  int r = local_server_start(&s, "un local start", lua_tostring(L, lua_upvalueindex(1)), err,
                             sizeof err);
  if (r < 0) { local_server_wipe(&s); return fail(L, err); }
  push_state(L, &s, 1);
  lua_pushboolean(L, r == 1);
  lua_setfield(L, -2, "started");
  local_server_wipe(&s);
  return 1;
}

/* stop() -> true (stopped) or false (it was not running) */
static int l_stop(lua_State *L) {
  local_server s;
  char err[512];
  int r = local_server_stop(&s, err, sizeof err);
  if (r < 0) return fail(L, err);
  lua_pushboolean(L, r == 1);
  return 1;
}

/* settings() -> {NAME = value} of the running server, keys included (for
** `eval "$(un local env)"`), or nil, message. */
static int l_settings(lua_State *L) {
  local_server s;
  char err[512];
  int r = local_server_probe(&s, err, sizeof err);
  if (r < 0) return fail(L, err);
  if (r == 0) return fail(L, "no local unsandboxd runs (un local start starts one)");
  lua_createtable(L, 0, 6);
  lua_pushstring(L, s.a.url); lua_setfield(L, -2, "UNSANDBOX_URL");
  lua_pushstring(L, s.a.pub); lua_setfield(L, -2, "UNSANDBOX_PUBLIC_KEY");
  lua_pushstring(L, s.a.sec); lua_setfield(L, -2, "UNSANDBOX_SECRET_KEY");
  if (s.a.cp_url[0] && s.a.cp_token[0]) {
    lua_pushstring(L, s.a.cp_url); lua_setfield(L, -2, "SANDBOX_CONTROL_PLANE_URL");
    lua_pushstring(L, s.a.cp_token); lua_setfield(L, -2, "SANDBOX_TOKEN");
  }
  lua_pushstring(L, s.a.pid); lua_setfield(L, -2, "UNSANDBOXD_PID");
  local_server_wipe(&s);
  return 1;
}

int luaopen_unlua_local(lua_State *L) {
  static const luaL_Reg fns[] = {
    { "status", l_status }, { "start", l_start }, { "stop", l_stop },
    { "settings", l_settings }, { NULL, NULL }
  };
  const char *exedir = lua_tostring(L, lua_upvalueindex(1));
  luaL_newlibtable(L, fns);
  lua_pushstring(L, exedir ? exedir : "");
  luaL_setfuncs(L, fns, 1);
  return 1;
}
