/*
** The shared request rules (core/validate.h) and the whole-file writer
** (core/file.h) for the facade. The checks return nil or the reason and
** never raise on the value checked: the facade decides whether a bad
** value is the caller's misuse (it raises at the caller's line) or the
** server's (a protocol error). Only a wrong argument type raises here.
*/
#include "lua/binding.h"

#include <errno.h>
#include <string.h>

#include "core/file.h"
#include "core/headers.h"
#include "core/validate.h"

static int push_reason(lua_State *L, const char *why) {
  if (why) lua_pushstring(L, why); else lua_pushnil(L);
  return 1;
}

/* core.env_name_check(name) -> nil | reason */
static int l_env_name_check(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "name", &len);
  return push_reason(L, unsb_env_name_check(s, len));
}

/* core.env_check({NAME = "value", ...}) -> nil | reason, name */
static int l_env_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t n = 0, bad;
  for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
      lua_pushliteral(L, "names and values must be strings");
      return 1;
    }
    if (++n > UNSB_ENV_MAX_VARS) return push_reason(L, "too many variables (at most 256)");
  }
  /* the pointers stay valid: the table anchors its keys and values */
  unsb_env_var *vars = lua_newuserdatauv(L, (n ? n : 1) * sizeof *vars, 0);
  n = 0;
  for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
    vars[n].name = lua_tolstring(L, -2, &vars[n].name_len);
    vars[n].value = lua_tolstring(L, -1, &vars[n].value_len);
    n++;
  }
  const char *why = unsb_env_check(vars, n, &bad);
  push_reason(L, why);
  if (!why || bad >= n) return 1;
  lua_pushlstring(L, vars[bad].name, vars[bad].name_len);
  return 2;
}

/* core.relpath_check(name) -> nil | reason */
static int l_relpath_check(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "name", &len);
  return push_reason(L, unsb_relpath_check(s, len));
}

/* core.paths_conflict({name, ...}) -> nil | reason, i, j (1-based, i < j) */
static int l_paths_conflict(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  if (n < 0 || n > UNSB_FILES_MAX) return luaL_argerror(L, 1, "names: at most 1000");
  const char **names = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *names, 0);
  size_t *lens = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *lens, 0);
  size_t *order = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *order, 0);
  for (lua_Integer k = 1; k <= n; k++) {
    if (lua_rawgeti(L, 1, k) != LUA_TSTRING)
      return luaL_argerror(L, 1, lua_pushfstring(L, "names[" UB_I "]: string expected", UB_IARG(k)));
    names[k - 1] = lua_tolstring(L, -1, &lens[k - 1]);   /* anchored by the table */
    lua_pop(L, 1);
  }
  size_t i, j;
  const char *why = unsb_paths_conflict(names, lens, (size_t)n, order, &i, &j);
  if (!why) { lua_pushnil(L); return 1; }
  lua_pushstring(L, why);
  lua_pushinteger(L, (lua_Integer)(i < j ? i : j) + 1);
  lua_pushinteger(L, (lua_Integer)(i < j ? j : i) + 1);
  return 3;
}

/* core.write_file(path, data[, mode]) -> true | nil, message */
static int l_write_file(lua_State *L) {
  size_t len;
  const char *path = ub_check_string(L, 1, "path", NULL);
  const char *data = ub_check_string(L, 2, "data", &len);
  lua_Integer mode = luaL_optinteger(L, 3, 0666);
  if (mode < 0 || mode > 07777) return luaL_argerror(L, 3, "mode: 0 to 07777 expected");
  const char *step = "write";
  if (unsb_file_write(path, data, len, (mode_t)mode, UNSB_FILE_FSYNC, &step) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: cannot %s: %s", path, step, strerror(errno));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.mkdirs(path) -> true | nil, "path: cannot create directory: why" */
static int l_mkdirs(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  if (unsb_mkdirs(path, 0777) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: cannot create directory: %s", path, strerror(errno));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.url_check(url) -> nil | reason: a service's base URL (both clients' rule) */
static int l_url_check(lua_State *L) {
  return push_reason(L, unsb_url_check(ub_check_string(L, 1, "url", NULL)));
}

/* core.blank(s) -> true when s is empty or only ASCII white space */
static int l_blank(lua_State *L) {
  size_t len;
  const char *s = ub_check_string(L, 1, "s", &len);
  lua_pushboolean(L, unsb_blank(s, len));
  return 1;
}

static const luaL_Reg FUNCTIONS[] = {
  {"url_check", l_url_check},
  {"blank", l_blank},
  {"env_name_check", l_env_name_check},
  {"env_check", l_env_check},
  {"relpath_check", l_relpath_check},
  {"paths_conflict", l_paths_conflict},
  {"write_file", l_write_file},
  {"mkdirs", l_mkdirs},
  {NULL, NULL},
};

void ub_open_validate(lua_State *L) {
  luaL_setfuncs(L, FUNCTIONS, 0);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, UNSB_ENV_MAX_VARS);
  lua_setfield(L, -2, "env_vars");
  lua_pushinteger(L, UNSB_ENV_MAX_BYTES);
  lua_setfield(L, -2, "env_bytes");
  lua_pushinteger(L, UNSB_ENV_MAX_ONE);
  lua_setfield(L, -2, "env_one");
  lua_pushinteger(L, UNSB_FILES_MAX);
  lua_setfield(L, -2, "input_files");
  lua_pushinteger(L, UNSB_RELPATH_MAX);
  lua_setfield(L, -2, "relpath");
  lua_pushinteger(L, UNSB_RETRY_AFTER_MAX);
  lua_setfield(L, -2, "retry_after");
  lua_setfield(L, -2, "LIMITS");
  /* the most transfers a Client or Manager runs at once (core/http.h) */
  lua_pushinteger(L, UNSB_HTTP_MAX_CONCURRENCY);
  lua_setfield(L, -2, "MAX_CONCURRENCY");
}
