/*
** unsandbox.Client: the userdata around a core client (core/client.h).
** The userdata is created closed (NULL) and only then given its client, so
** an error while reading options leaves nothing to clean up. __gc, __close
** and close() are one idempotent closer that wipes the credentials (and
** closes the client's transfers). Its engine runs on the Lua state's one
** loop (loop.c), so its calls progress with every other client's.
**
** `request` is one buffered call (exchange.c: yields inside a task,
** blocks elsewhere) that raises a refused method, path or header;
** `_request` the same call returning it as nil, "validation", why, {arg}
** (the facade's: it raises at its caller's line); `_open` the call as a
** Transfer Lua steps; `_state` the facade's per-client table (user value 1).
** core.client raises a refused option, core.exec.client returns it.
*/
#include "lua/binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/client.h"

typedef ub_client lclient;

static unsb_client *check_open(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, UB_CLIENT);
  if (!u->c) luaL_error(L, "attempt to use a closed Client");
  return u->c;
}

static const char *const CLIENT_OPTIONS[] = {
  "public_key", "secret_key", "account", "url", "timeout", "connect_timeout",
  "ca_file", "max_response", "home", "cwd", "env", "max_concurrency", NULL,
};

/* core.client{...} */
static int client(lua_State *L, ub_mode mode) {
  unsb_client_config cfg;
  unsb_error err;
  lclient *u;

  if (!lua_isnoneornil(L, 1)) {
    if (!lua_istable(L, 1)) return ub_type_error(L, 1, 1, "opts", "table");
    ub_check_keys(L, 1, 1, CLIENT_OPTIONS);
  } else {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  u = lua_newuserdatauv(L, sizeof *u, 1);
  u->c = NULL;
  luaL_setmetatable(L, UB_CLIENT);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);

  memset(&cfg, 0, sizeof cfg);
  cfg.url = ub_field_string(L, 1, 1, "url", NULL);
  cfg.timeout_ms = (long)ub_field_ms(L, 1, 1, "timeout", UNSB_DEFAULT_TIMEOUT_MS);
  cfg.connect_timeout_ms =
    (long)ub_field_ms(L, 1, 1, "connect_timeout", UNSB_DEFAULT_CONNECT_TIMEOUT_MS);
  cfg.ca_file = ub_field_string(L, 1, 1, "ca_file", NULL);
  lua_Integer max = ub_field_count(L, 1, 1, "max_response", (lua_Integer)UNSB_DEFAULT_MAX_RESPONSE);
  if (max < 1) return ub_bad_value(L, mode, 1, "max_response: must be positive");
  cfg.max_response = (size_t)max;
  ub_cred_opts(L, 1, 1, &cfg.cred);
  lua_Integer conc = ub_field_count(L, 1, 1, "max_concurrency", UNSB_HTTP_DEFAULT_CONCURRENCY);
  if (conc < 1 || conc > UNSB_HTTP_MAX_CONCURRENCY)
    return ub_bad_value(L, mode, 1, lua_pushfstring(L, "max_concurrency: from 1 to %d",
                                                    UNSB_HTTP_MAX_CONCURRENCY));
  cfg.max_concurrency = (int)conc;
  cfg.loop = ub_loop(L);

  u->c = unsb_client_new(&cfg, &err);
  if (!u->c) return ub_bad_error(L, mode, 1, &err);   /* the URL, or UNSANDBOX_URL's */
  return 1;
}
UB_BOTH(client)

static int l_close(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, UB_CLIENT);
  if (u->c) {
    unsb_client_free(u->c);
    u->c = NULL;
  }
  return 0;
}

static int l_tostring(lua_State *L) {
  lclient *u = luaL_checkudata(L, 1, UB_CLIENT);
  if (u->c) lua_pushfstring(L, UB_CLIENT " (%s)", unsb_client_url(u->c));
  else lua_pushliteral(L, UB_CLIENT " (closed)");
  return 1;
}

static int l_url(lua_State *L) {
  lua_pushstring(L, unsb_client_url(check_open(L)));
  return 1;
}

/* c:_info(): which key and where from, the timeout in ms; resolves the
** credentials (nil, kind, message when there are none). The facade's
** c:info() gives seconds and an unsandbox.Error. */
static int l_info(lua_State *L) {
  unsb_client *c = check_open(L);
  const unsb_credentials *cred;
  unsb_error err;
  if (unsb_client_credentials(c, &cred, &err) != 0) return ub_push_error(L, &err);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, unsb_client_url(c));
  lua_setfield(L, -2, "url");
  lua_pushstring(L, cred->public_key);
  lua_setfield(L, -2, "public_key");
  lua_pushstring(L, cred->source);
  lua_setfield(L, -2, "source");
  lua_pushinteger(L, unsb_client_timeout(c));
  lua_setfield(L, -2, "timeout");
  return 1;
}

/* c:_prepare(): credentials resolved and the signer keyed now rather
** than on the first signed request (the facade's warm_up). true, or nil,
** kind, message. */
static int l_prepare(lua_State *L) {
  unsb_error err;
  if (unsb_client_prepare(check_open(L), &err) != 0) return ub_push_error(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static const char *const REQUEST_OPTIONS[] = {"timeout", "auth", "headers", "traceparent", NULL};

/* The traceparent line of a call, built in the caller's frame (no Lua
** string per request): "traceparent: " and the 55 characters. */
#define TRACEPARENT_LINE 72
typedef struct {
  char line[TRACEPARENT_LINE];
  const char *one[1];
} traceline;

/* opts.headers {name = value} as "Name: value" lines into r, and the
** traceparent line tl when there is one; the strings and the pointer
** array are Lua objects kept on the stack for the call (or tl's, in the
** caller's frame). NULL, or (the lines unset) why the table is refused. */
static const char *header_lines(lua_State *L, int opts, unsb_api_request *r, traceline *tl) {
  const char **lines;
  size_t count = 0, i = 0;
  const char *tp = ub_field_string(L, opts, opts, "traceparent", NULL);
  if (tp) {
    if (strlen(tp) >= TRACEPARENT_LINE - sizeof "traceparent: ") return "traceparent: too long";
    snprintf(tl->line, sizeof tl->line, "traceparent: %s", tp);
    tl->one[0] = tl->line;
  }
  if (lua_getfield(L, opts, "headers") == LUA_TNIL) {
    lua_pop(L, 1);
    if (tp) {
      r->headers = tl->one;
      r->n_headers = 1;
    }
    return NULL;
  }
  if (!lua_istable(L, -1)) ub_type_error(L, 5, -1, "headers", "table");
  int h = lua_gettop(L);
  for (lua_pushnil(L); lua_next(L, h); lua_pop(L, 1)) count++;
  lines = lua_newuserdatauv(L, (count + 1) * sizeof *lines, 0);
  lua_newtable(L);                                /* anchors the lines */
  int anchor = lua_gettop(L);
  if (tp) lines[i++] = tl->line;
  for (lua_pushnil(L); lua_next(L, h); lua_pop(L, 1)) {
    int vt = lua_type(L, -1);
    if (lua_type(L, -2) != LUA_TSTRING) return "headers: names must be strings";
    if (tp && strcasecmp(lua_tostring(L, -2), "traceparent") == 0)
      return "headers: traceparent given twice (opts.traceparent and opts.headers)";
    if (vt != LUA_TSTRING && vt != LUA_TNUMBER)
      return lua_pushfstring(L, "headers: value of %s must be a string", lua_tostring(L, -2));
    lua_pushvalue(L, -2);
    lua_pushliteral(L, ": ");
    lua_pushvalue(L, -3);
    lua_tostring(L, -1);                          /* numbers as text */
    lua_concat(L, 3);
    lines[i] = lua_tostring(L, -1);
    lua_rawseti(L, anchor, (lua_Integer)++i);
  }
  r->headers = lines;
  r->n_headers = i;
  return NULL;
}

/* A refused value of a request (arg as unsb_request_check names the
** inputs, one more than the Lua position: self is #1): raised, or pushed
** as nil, "validation", why, {arg = n} (the position without self). */
static int request_refused(lua_State *L, ub_mode mode, int arg, const char *why) {
  if (mode == UB_RAISE) return luaL_argerror(L, arg + 1, why);
  unsb_error err;
  unsb_invalid(&err, arg, "%s", why);
  return ub_push_error(L, &err);
}

/* (method, path, body, opts) at 2..5 into r. Returns 0 with *sign set
** (whether to sign), or the count of the values a refused request pushed
** (mode UB_RETURN; UB_RAISE raises). Every string stays anchored by the
** arguments. */
static int request_args(lua_State *L, unsb_client *c, unsb_api_request *r,
                        const char *const *allowed, ub_mode mode, int *sign, traceline *tl) {
  unsb_error err;
  const char *why;
  *sign = 1;
  memset(r, 0, sizeof *r);
  r->method = ub_check_string(L, 2, "method", NULL);
  r->path = ub_check_string(L, 3, "path", NULL);
  r->body = ub_opt_string(L, 4, "body", &r->body_len);
  if (!lua_isnoneornil(L, 5)) {
    if (!lua_istable(L, 5)) ub_type_error(L, 5, 5, "opts", "table");
    ub_check_keys(L, 5, 5, allowed);
    r->timeout_ms = (long)ub_field_ms(L, 5, 5, "timeout", 0);
    int at = lua_getfield(L, 5, "auth");
    if (at == LUA_TBOOLEAN) *sign = lua_toboolean(L, -1);
    else if (at != LUA_TNIL) ub_type_error(L, 5, -1, "auth", "boolean");
    lua_pop(L, 1);
    if ((why = header_lines(L, 5, r, tl))) return request_refused(L, mode, UNSB_REQ_HEADERS, why);
  }
  r->timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : unsb_client_timeout(c);
  if (unsb_request_check(r, &err) != 0) return request_refused(L, mode, err.arg, err.message);
  return 0;
}

/* Opens r as the Transfer t (on top of the stack). 0, or pushes the
** failure (nil, kind, message) and returns its count. */
static int open_into(lua_State *L, unsb_client *c, unsb_api_request *r, int sign,
                     ub_transfer *t) {
  unsb_error err;
  unsb_http_xfer *x;
  r->stream = ub_transfer_stream(t);
  if (!(x = unsb_client_open(c, r, sign, &err))) return ub_push_error(L, &err);
  ub_transfer_set(t, x);
  return 0;
}

/* c:request(method, path, body, opts) -> resp | nil, kind, message, info */
static int request(lua_State *L, ub_mode mode) {
  unsb_client *c = check_open(L);
  unsb_api_request r;
  traceline tl;
  int sign;
  lua_settop(L, 5);
  int n = request_args(L, c, &r, REQUEST_OPTIONS, mode, &sign, &tl);
  if (n) return n;
  ub_transfer *t = ub_transfer_new(L, 1, 4, 5, UB_XFER_BUFFER);
  n = open_into(L, c, &r, sign, t);
  if (n) return n;
  return ub_transfer_finish(L, lua_gettop(L));
}
UB_BOTH(request)

static const char *const OPEN_OPTIONS[] = {"timeout", "auth", "headers", "traceparent", "mode",
                                            NULL};

/* c:_open(method, path, body, opts): the call as a Transfer (opts.mode
** "sse" or "raw", default "raw"). */
static int l_open(lua_State *L) {
  unsb_client *c = check_open(L);
  unsb_api_request r;
  traceline tl;
  int sign;
  lua_settop(L, 5);
  request_args(L, c, &r, OPEN_OPTIONS, UB_RAISE, &sign, &tl);
  const char *mode = lua_istable(L, 5) ? ub_field_string(L, 5, 5, "mode", NULL) : NULL;
  if (mode && strcmp(mode, "sse") != 0 && strcmp(mode, "raw") != 0)
    return luaL_argerror(L, 5, "mode: \"sse\" or \"raw\" expected");
  ub_transfer *t = ub_transfer_new(L, 1, 4, 5, mode && !strcmp(mode, "sse") ? UB_XFER_SSE
                                                                             : UB_XFER_RAW);
  int n = open_into(L, c, &r, sign, t);
  return n ? n : 1;
}

/* The facade's per-client table. */
static int l_state(lua_State *L) {
  check_open(L);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"request", l_request},
  {"_request", r_request},
  {"_open", l_open},
  {"_state", l_state},
  {"_info", l_info},
  {"_prepare", l_prepare},   /* the facade's c:info() converts units and errors */
  {"url", l_url},
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

void ub_open_client(lua_State *L) {
  luaL_newmetatable(L, UB_CLIENT);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");   /* methods are __index ... */
  lua_setfield(L, -3, "Client");    /* ... and core.Client, for Lua methods */
  lua_pop(L, 1);
  static const luaL_Reg FUNCTIONS[] = {{"client", l_client}, {NULL, NULL}};
  static const luaL_Reg RETURNING[] = {{"client", r_client}, {NULL, NULL}};
  ub_register(L, FUNCTIONS, RETURNING);
  /* the options core.client takes, the one list the facade's is made from */
  ub_push_names(L, CLIENT_OPTIONS);
  lua_setfield(L, -2, "CLIENT_OPTIONS");
}
