/*
** File-backed functions of unsandbox.core: cache files, credential
** lookup and a file's first bytes (detect_language's shebang). Neither raises for a missing or bad file: a cache is optional and
** missing credentials are an expected failure.
*/
#include "lua/binding.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/file.h"
#include "core/credentials.h"
#include "core/digest.h"

static int l_cache_read(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  if (!lua_isinteger(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
    return ub_type_error(L, 2, 2, "ttl_s", "number");
  int64_t ttl = (int64_t)lua_tonumber(L, 2);
  size_t len;
  char **box = ub_box_new(L);
  unsb_cache_state st = unsb_cache_read(path, ttl, box, &len);
  if (st == UNSB_CACHE_MISSING) {
    lua_pushnil(L);
    lua_pushliteral(L, "missing");
    return 2;
  }
  ub_box_push(L, box, len);
  lua_pushstring(L, st == UNSB_CACHE_FRESH ? "fresh" : "stale");
  return 2;
}

static int l_cache_write(lua_State *L) {
  size_t len;
  char msg[512];
  const char *path = ub_check_string(L, 1, "path", NULL);
  const char *content = ub_check_string(L, 2, "content", &len);
  if (unsb_cache_write(path, content, len, msg, sizeof msg) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const char *const CRED_OPTIONS[] = {
  "public_key", "secret_key", "account", "home", "cwd", "env", NULL,
};

static void free_credentials(void *c) { unsb_credentials_free(c); }

/* core.credentials(opts): which key pair would be used, never the secret. */
static int l_credentials(lua_State *L) {
  unsb_cred_opts o;
  unsb_error err;
  if (!lua_isnoneornil(L, 1)) {
    if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "opts", "table");
    ub_check_keys(L, 1, 1, CRED_OPTIONS);
  }
  ub_cred_opts(L, 1, 1, &o);
  /* the secret is wiped by the box's cleanup however the pushing ends */
  unsb_credentials *c = ub_cbox_new(L, sizeof *c, free_credentials);
  int box = lua_gettop(L);
  if (unsb_credentials_resolve(&o, c, &err) != 0) return ub_push_error(L, &err);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, c->public_key);
  lua_setfield(L, -2, "public_key");
  lua_pushstring(L, c->source);
  lua_setfield(L, -2, "source");
  ub_cbox_done(L, box);
  return 1;
}

#define HEAD_MAX 65536

/* core.file_head(path, max) -> the first bytes (at most max, 1..64 KiB)
** of the regular file at path, or nil, message (missing, not regular,
** unreadable). Never blocks on a FIFO or a device. */
static int l_file_head(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  lua_Integer max = luaL_checkinteger(L, 2);
  luaL_argcheck(L, max >= 1 && max <= HEAD_MAX, 2, "max: 1 to 65536 expected");
  char *buf = lua_newuserdatauv(L, (size_t)max, 0);
  ssize_t n = unsb_file_head(path, buf, (size_t)max);
  if (n < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

#define DIR_MAX 1000000   /* entries of one directory read at once */

typedef struct {
  unsb_dirent *e;
  size_t n;
} dirlist;

static void free_dirlist(void *p) {
  dirlist *d = p;
  unsb_dirents_free(d->e, d->n);
  d->e = NULL;
  d->n = 0;
}

static const char *type_name(char t) {
  switch (t) {
  case 'f': return "file";
  case 'd': return "directory";
  case 'l': return "symlink";
  default: return "other";
  }
}

/* core.read_dir(path) -> {{name=, type=, mode=, size=, mtime=}, ...} in
** readdir's order (lstat: a symlink is "symlink"), or nil, "path: why". */
static int l_read_dir(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  dirlist *d = ub_cbox_new(L, sizeof *d, free_dirlist);
  int box = lua_gettop(L);
  if (unsb_read_dir(path, DIR_MAX, &d->e, &d->n) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_createtable(L, (int)d->n, 0);
  for (size_t i = 0; i < d->n; i++) {
    lua_createtable(L, 0, 5);
    lua_pushstring(L, d->e[i].name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, type_name(d->e[i].type));
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)d->e[i].mode);
    lua_setfield(L, -2, "mode");
    lua_pushinteger(L, (lua_Integer)d->e[i].size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, (lua_Integer)d->e[i].mtime);
    lua_setfield(L, -2, "mtime");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  ub_cbox_done(L, box);
  return 1;
}

/* core.files.sha256_file(path) -> hex, size | nil, "<path>: <why>" */
static int l_sha256_file(lua_State *L) {
  const char *path = ub_check_string(L, 1, "path", NULL);
  char hex[UNSB_SHA256_HEX_LEN + 1];
  long long size;
  if (unsb_sha256_file(path, hex, &size) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, errno == EINVAL ? "not a regular file" : strerror(errno));
    return 2;
  }
  lua_pushstring(L, hex);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

static const luaL_Reg FUNCTIONS[] = {
  {"sha256_file", l_sha256_file},
  {"read_dir", l_read_dir},
  {"file_head", l_file_head},
  {"cache_read", l_cache_read},
  {"cache_write", l_cache_write},
  {"credentials", l_credentials},
  {NULL, NULL},
};

void ub_open_files(lua_State *L) { luaL_setfuncs(L, FUNCTIONS, 0); }
