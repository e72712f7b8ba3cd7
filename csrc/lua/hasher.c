/*
** unsandbox.Sha256: the core's incremental SHA-256 (core/digest.h) as a
** userdata, so a transfer hashes its bytes piece by piece as they pass
** and never holds a whole file to check it.
**
**   local h = core.sha256_stream()
**   h:update(bytes)   -- returns h
**   h:hex()           -- 64 lowercase hex; the hash is then finished
**
** Same shape as SseParser: created closed, then given its hash; __gc,
** __close and close() are one idempotent closer.
*/
#include "lua/binding.h"

#include "core/digest.h"

#define UB_SHA256 "unsandbox.Sha256"

typedef struct {
  unsb_sha256 *h;   /* NULL = closed */
} lsha;

static unsb_sha256 *check_open(lua_State *L) {
  lsha *u = luaL_checkudata(L, 1, UB_SHA256);
  if (!u->h) luaL_error(L, "attempt to use a closed Sha256");
  return u->h;
}

/* core.sha256_stream() */
static int l_new(lua_State *L) {
  lsha *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->h = NULL;
  luaL_setmetatable(L, UB_SHA256);
  u->h = unsb_sha256_new();
  if (!u->h) return luaL_error(L, "not enough memory");
  return 1;
}

static int l_update(lua_State *L) {
  unsb_sha256 *h = check_open(L);
  size_t len;
  const char *s = ub_check_string(L, 2, "bytes", &len);
  if (unsb_sha256_update(h, s, len) != 0)
    return luaL_error(L, "Sha256: update after hex() or a failure of OpenSSL");
  lua_settop(L, 1);
  return 1;
}

static int l_hex(lua_State *L) {
  char hex[UNSB_SHA256_HEX_LEN + 1];
  if (unsb_sha256_final(check_open(L), hex) != 0) return luaL_error(L, "Sha256: OpenSSL failed");
  lua_pushlstring(L, hex, UNSB_SHA256_HEX_LEN);
  return 1;
}

static int l_close(lua_State *L) {
  lsha *u = luaL_checkudata(L, 1, UB_SHA256);
  unsb_sha256_free(u->h);
  u->h = NULL;
  return 0;
}

static int l_tostring(lua_State *L) {
  lsha *u = luaL_checkudata(L, 1, UB_SHA256);
  if (u->h) lua_pushfstring(L, UB_SHA256 " (%p)", (void *)u);
  else lua_pushliteral(L, UB_SHA256 " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"update", l_update},
  {"hex", l_hex},
  {"close", l_close},
  {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__gc", l_close},
  {"__close", l_close},
  {"__tostring", l_tostring},
  {"__index", NULL},
  {NULL, NULL},
};

void ub_open_hasher(lua_State *L) {
  luaL_newmetatable(L, UB_SHA256);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "sha256_stream");
}
