/*
** core.form_encode(t[, max_len]): a Lua table as a query string (rules in
** core/form.h). Lua tables have no order, so pairs are sorted by name and
** the same table always gives the same bytes. Values: strings, integers
** (and floats with an exact integer value), booleans as "true"/"false";
** "" is dropped as the spec says for nil. All strings stay anchored in a
** Lua table while the core reads them.
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>

#include "core/form.h"

static int by_key(const void *a, const void *b) {
  const unsb_form_pair *x = a, *y = b;
  size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Pushes the value at idx as query text; NULL, or (nothing pushed) why
** not, naming the key. */
static const char *push_value(lua_State *L, int idx, const char *key) {
  int exact = 0;
  lua_Integer i;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: lua_pushvalue(L, idx); return NULL;
    case LUA_TBOOLEAN: lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false"); return NULL;
    case LUA_TNUMBER:
      i = lua_tointegerx(L, idx, &exact);   /* floats only when exactly an integer */
      if (exact) {
        lua_pushfstring(L, UB_I, UB_IARG(i));
        return NULL;
      }
      return lua_pushfstring(L, "query.%s: an integer expected, got %f", key, lua_tonumber(L, idx));
    default:
      return lua_pushfstring(L, "query.%s: string, integer or boolean expected, got %s", key,
                             luaL_typename(L, idx));
  }
}

static int form_encode(lua_State *L, ub_mode mode) {
  size_t n = 0, len;
  unsb_error err;
  const char *why;
  if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "query", "table");
  lua_Integer max = luaL_optinteger(L, 2, 0);
  if (max < 0) return ub_bad_value(L, mode, 2, "max_len: must not be negative");
  lua_settop(L, 2);
  lua_newtable(L);                                   /* 3: anchor of names and values */
  for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING) return ub_bad_value(L, mode, 1, "query: names must be strings");
    lua_pushvalue(L, -2);
    lua_rawseti(L, 3, (lua_Integer)(2 * n + 1));
    if ((why = push_value(L, lua_gettop(L), lua_tostring(L, -2)))) return ub_bad_value(L, mode, 1, why);
    lua_rawseti(L, 3, (lua_Integer)(2 * n + 2));
    n++;
  }
  unsb_form_pair *pairs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *pairs, 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 3, (lua_Integer)(2 * i + 1));
    pairs[i].key = lua_tolstring(L, -1, &pairs[i].key_len);
    lua_rawgeti(L, 3, (lua_Integer)(2 * i + 2));
    pairs[i].value = lua_tolstring(L, -1, &pairs[i].value_len);
    lua_pop(L, 2);                                   /* both stay in the anchor */
  }
  qsort(pairs, n, sizeof *pairs, by_key);
  char **box = ub_box_new(L);
  *box = unsb_form_encode(pairs, n, (size_t)max, &len, &err);
  if (!*box) return ub_bad_error(L, mode, 1, &err);
  ub_box_push(L, box, len);
  return 1;
}

int ub_form_encode(lua_State *L) { return form_encode(L, UB_RAISE); }
int ub_form_encode_returning(lua_State *L) { return form_encode(L, UB_RETURN); }
