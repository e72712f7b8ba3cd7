/*
** Argument and option helpers of the binding (see binding.h). Types are
** checked strictly (a number is not a string here) because a silently
** coerced secret or path is a bug waiting to happen.
*/
#include "lua/binding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ub_type_error(lua_State *L, int arg, int idx, const char *name, const char *what) {
  const char *got = luaL_typename(L, idx);   /* before anything is pushed */
  return luaL_argerror(L, arg, lua_pushfstring(L, "%s: %s expected, got %s", name, what, got));
}
#define type_error_at ub_type_error

const char *ub_check_string(lua_State *L, int arg, const char *name, size_t *len) {
  if (lua_type(L, arg) != LUA_TSTRING) type_error_at(L, arg, arg, name, "string");
  return lua_tolstring(L, arg, len);
}

const char *ub_opt_string(lua_State *L, int arg, const char *name, size_t *len) {
  if (lua_isnoneornil(L, arg)) {
    if (len) *len = 0;
    return NULL;
  }
  return ub_check_string(L, arg, name, len);
}

/* The number at idx as whole milliseconds (floats rounded up), or raises. */
static lua_Integer to_ms(lua_State *L, int arg, int idx, const char *name, lua_Integer min) {
  lua_Integer v;
  if (lua_type(L, idx) != LUA_TNUMBER) type_error_at(L, arg, idx, name, "number");
  if (lua_isinteger(L, idx)) {
    v = lua_tointeger(L, idx);
  } else {
    lua_Number n = lua_tonumber(L, idx);
    if (!isfinite(n) || n > 1e15 || n < -1e15)
      luaL_argerror(L, arg, lua_pushfstring(L, "%s: finite number expected", name));
    v = (lua_Integer)ceil(n);
  }
  if (v < min)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s: must be at least " UB_I ", got " UB_I, name,
                                         UB_IARG(min), UB_IARG(v)));
  return v;
}

lua_Integer ub_check_ms(lua_State *L, int arg, const char *name, lua_Integer min) {
  return to_ms(L, arg, arg, name, min);
}

void ub_check_keys(lua_State *L, int t, int arg, const char *const *allowed) {
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    int known = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (const char *const *a = allowed; *a && !known; a++) known = strcmp(k, *a) == 0;
    }
    if (!known) {
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s'", k));
    }
  }
}

const char *ub_field_string(lua_State *L, int t, int arg, const char *field, size_t *len) {
  const char *s = NULL;
  if (len) *len = 0;
  if (lua_getfield(L, t, field) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) type_error_at(L, arg, -1, field, "string");
    s = lua_tolstring(L, -1, len);
  }
  lua_pop(L, 1);   /* the table keeps the string alive */
  return s;
}

lua_Integer ub_field_ms(lua_State *L, int t, int arg, const char *field, lua_Integer dflt) {
  lua_Integer v = dflt;
  if (lua_getfield(L, t, field) != LUA_TNIL) v = to_ms(L, arg, -1, field, 1);
  lua_pop(L, 1);
  return v;
}

lua_Integer ub_field_count(lua_State *L, int t, int arg, const char *field, lua_Integer dflt) {
  lua_Integer v = dflt;
  if (lua_getfield(L, t, field) != LUA_TNIL) {
    if (!lua_isinteger(L, -1)) type_error_at(L, arg, -1, field, "integer");
    v = lua_tointeger(L, -1);
    if (v < 0) luaL_argerror(L, arg, lua_pushfstring(L, "%s: must not be negative", field));
  }
  lua_pop(L, 1);
  return v;
}

/* env= : a table standing in for the environment variables. */
static const char *env_field(lua_State *L, int env, int arg, const char *name) {
  const char *s = NULL;
  if (lua_getfield(L, env, name) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) {
      int v = lua_gettop(L);
      type_error_at(L, arg, v, lua_pushfstring(L, "env.%s", name), "string");
    }
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1);
  return s;
}

void ub_cred_opts(lua_State *L, int t, int arg, unsb_cred_opts *o) {
  size_t slen = 0;
  unsb_cred_opts_init(o);
  unsb_cred_opts_from_environ(o);
  if (lua_isnoneornil(L, t)) return;
  o->public_key = ub_field_string(L, t, arg, "public_key", NULL);
  o->secret_key = ub_field_string(L, t, arg, "secret_key", &slen);
  o->secret_len = slen;
  o->account = ub_field_count(L, t, arg, "account", -1);
  o->cwd = ub_field_string(L, t, arg, "cwd", NULL);
  /* home: a string, or false for "no home directory" */
  int ht = lua_getfield(L, t, "home");
  if (ht == LUA_TBOOLEAN && !lua_toboolean(L, -1)) o->home = NULL;
  else if (ht == LUA_TSTRING) o->home = lua_tostring(L, -1);
  else if (ht != LUA_TNIL) type_error_at(L, arg, -1, "home", "string or false");
  lua_pop(L, 1);
  int et = lua_getfield(L, t, "env");
  if (et == LUA_TTABLE) {
    int env = lua_gettop(L);
    o->env_public_key = env_field(L, env, arg, "UNSANDBOX_PUBLIC_KEY");
    o->env_secret_key = env_field(L, env, arg, "UNSANDBOX_SECRET_KEY");
    o->env_account = env_field(L, env, arg, "UNSANDBOX_ACCOUNT");
  } else if (et != LUA_TNIL) {
    type_error_at(L, arg, -1, "env", "table");
  }
  lua_pop(L, 1);   /* the options table keeps env and its strings alive */
}

static void push_arg(lua_State *L, int arg) {
  if (arg == UNSB_ARG_ENV) lua_pushliteral(L, "env");
  else lua_pushinteger(L, arg);
}

int ub_push_error(lua_State *L, const unsb_error *err) {
  if (err->kind == UNSB_ENOMEM) return luaL_error(L, "not enough memory");
  lua_pushnil(L);
  lua_pushstring(L, unsb_kind_name(err->kind));
  lua_pushstring(L, err->message);
  if (err->kind != UNSB_EVALIDATION || err->arg == 0) return 3;
  lua_createtable(L, 0, 1);
  push_arg(L, err->arg);
  lua_setfield(L, -2, "arg");
  return 4;
}

int ub_bad_value(lua_State *L, ub_mode mode, int arg, const char *why) {
  if (mode == UB_RAISE) {
    if (arg == UNSB_ARG_ENV) return luaL_error(L, "%s", why);
    return luaL_argerror(L, arg, why);
  }
  lua_pushnil(L);
  lua_pushstring(L, why);
  push_arg(L, arg);
  return 3;
}

int ub_bad_error(lua_State *L, ub_mode mode, int arg, const unsb_error *err) {
  if (err->kind == UNSB_ENOMEM) return luaL_error(L, "not enough memory");
  if (err->kind != UNSB_EVALIDATION) return luaL_error(L, "%s", err->message);
  return ub_bad_value(L, mode, err->arg ? err->arg : arg, err->message);
}

/* ---------------------------------------------------------------------
** registration into the module and its groups
** ------------------------------------------------------------------- */

#define UB_RETURNING "unsandbox.returning"   /* registry: name -> returning form */

void ub_register(lua_State *L, const luaL_Reg *fns, const luaL_Reg *returning) {
  luaL_setfuncs(L, fns, 0);
  if (!returning) return;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, UB_RETURNING);
  luaL_setfuncs(L, returning, 0);
  lua_pop(L, 1);
}

void ub_make_groups(lua_State *L, const ub_group_decl *groups) {
  int module = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, UB_RETURNING);
  int returning = lua_gettop(L);
  for (const ub_group_decl *g = groups; g->group; g++) {
    int n = 0;
    while (g->names[n]) n++;
    lua_createtable(L, 0, n);
    for (const char *const *name = g->names; *name; name++) {
      if (lua_getfield(L, returning, *name) == LUA_TNIL) {
        lua_pop(L, 1);
        if (lua_getfield(L, module, *name) == LUA_TNIL)
          luaL_error(L, "unsandbox.core: group %s names '%s', which no part registered", g->group, *name);
      }
      lua_setfield(L, -2, *name);
    }
    lua_setfield(L, module, g->group);
  }
  lua_settop(L, module);
}

void ub_push_names(lua_State *L, const char *const *names) {
  lua_newtable(L);
  for (; *names; names++) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, *names);
  }
}

/* ---------------------------------------------------------------------
** boxes for malloc'd results
** ------------------------------------------------------------------- */

static int box_gc(lua_State *L) {
  char **box = luaL_checkudata(L, 1, UB_BOX);
  free(*box);
  *box = NULL;
  return 0;
}

char **ub_box_new(lua_State *L) {
  char **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  if (luaL_newmetatable(L, UB_BOX)) {   /* first use in this state */
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return box;
}

void ub_box_push(lua_State *L, char **box, size_t len) {
  int at = lua_gettop(L);               /* the box is on top */
  lua_pushlstring(L, *box ? *box : "", *box ? len : 0);
  free(*box);
  *box = NULL;
  lua_remove(L, at);
}
