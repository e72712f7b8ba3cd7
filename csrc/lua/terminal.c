/*
** unsandbox.Terminal: the userdata around a session's terminal
** connection (core/ws/client.h). Shaped like client.c: created closed
** (NULL), then given its connection, so an error in between leaves
** nothing behind; __gc, __close and close() are one idempotent closer.
** The connection copies what it needs from the Client at open (URL,
** credentials, CA file) and has an engine of its own on the state's
** loop, so a Terminal outlives a one-off Client.
**
** Waiting is the loop's, as for every call (loop.c): inside a task the
** open and _service take a token, hand it to the connection and yield; a
** caller outside a task drives the loop until the terminal is ready, in
** slices that check the interrupt flag (and, for `un`, return when a
** signal arrives, so SIGWINCH is acted on at once). The close waits for
** the server's answer by driving the loop, bounded, since __gc cannot
** yield. Marshalling only: the facade (lua/unsandbox/terminal.lua)
** decodes the control messages with cjson, turns failures into
** unsandbox.Error and builds read()/shell() on _service and _next.
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/ws/client.h"

#define UB_TERMINAL "unsandbox.Terminal"

typedef struct {
  unsb_wsc *ws;        /* NULL = closed */
  unsb_token token;    /* a task's wait: its timer's token */
} lterminal;

static lterminal *check_open(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  if (!u->ws) luaL_error(L, "attempt to use a closed Terminal");
  return u;
}

/* nil, kind, message[, status]: the shape of every expected failure here. */
static int push_fail(lua_State *L, const unsb_error *err, int status) {
  int n = ub_push_error(L, err);
  if (status <= 0) return n;
  lua_pushinteger(L, status);
  return n + 1;
}

/* One round of the loop (at most ms) for a caller outside a task. -1
** with err: the loop's own errors, or the interrupt flag. */
static int drive(unsb_wsc *ws, long ms, unsb_error *err) {
  if (unsb_loop_step(unsb_wsc_loop(ws), ms < UNSB_SLICE_MS ? ms : UNSB_SLICE_MS, err) != 0)
    return -1;
  if (unsb_interrupt_take()) return unsb_fail(err, UNSB_EINTERRUPTED, "interrupted");
  return 0;
}

/* ---------------------------------------------------------------------
** open
** ------------------------------------------------------------------- */

static int open_k(lua_State *L);

/* Until the upgrade is done (the Terminal at uidx) or failed. */
static int wait_open(lua_State *L, int uidx) {
  lterminal *u = lua_touserdata(L, uidx);
  for (;;) {
    unsb_error err;
    int status = 0, rc = unsb_wsc_connected(u->ws, &status, &err);
    if (rc == 0 && ub_task_can_yield(L)) {
      unsb_wsc_notify(u->ws, ub_wait(L, 0));
      lua_pushvalue(L, uidx);
      return ub_yield(L, open_k, 1);   /* k(terminal) */
    }
    if (rc == 0 && drive(u->ws, UNSB_SLICE_MS, &err) == 0) continue;
    if (rc == 1) {
      lua_settop(L, uidx);
      return 1;
    }
    unsb_wsc_free(u->ws);
    u->ws = NULL;
    return push_fail(L, &err, status);
  }
}

static int open_k(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  lua_settop(L, 1);
  ub_wait_done(L);
  if (!u->ws) return luaL_error(L, "attempt to use a closed Terminal");
  unsb_wsc_notify(u->ws, 0);
  return wait_open(L, 1);
}

static const char *const OPEN_OPTIONS[] = {"connect_timeout", "max_input", "debug", NULL};

/* core.terminal_open(client, id[, {connect_timeout = ms, max_input = n,
** debug = bool}]) -> Terminal | nil, kind, message[, http status] */
static int l_open(lua_State *L) {
  ub_client *c = luaL_checkudata(L, 1, UB_CLIENT);
  const char *id = ub_check_string(L, 2, "id", NULL);
  const unsb_credentials *cred;
  unsb_wsc_config cfg;
  unsb_error err;
  lterminal *u;

  if (!c->c) return luaL_error(L, "attempt to use a closed Client");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    ub_check_keys(L, 3, 3, OPEN_OPTIONS);
  } else {
    lua_settop(L, 2);
    lua_newtable(L);
  }
  lua_settop(L, 3);
  memset(&cfg, 0, sizeof cfg);
  cfg.connect_timeout_ms =
    (long)ub_field_ms(L, 3, 3, "connect_timeout", unsb_client_connect_timeout(c->c));
  lua_Integer max = ub_field_count(L, 3, 3, "max_input", UNSB_WSC_DEFAULT_MAX_INPUT);
  if (max < 1) return luaL_argerror(L, 3, "max_input: must be positive");
  cfg.max_input = (size_t)max;
  lua_getfield(L, 3, "debug");
  cfg.debug = lua_toboolean(L, -1);
  lua_pop(L, 1);

  u = lua_newuserdatauv(L, sizeof *u, 0);
  u->ws = NULL;
  u->token = 0;
  luaL_setmetatable(L, UB_TERMINAL);
  if (unsb_client_credentials(c->c, &cred, &err) != 0) return push_fail(L, &err, 0);
  cfg.base_url = unsb_client_url(c->c);
  cfg.session_id = id;
  cfg.cred = cred;
  cfg.ca_file = unsb_client_ca_file(c->c);
  cfg.loop = ub_loop(L);
  if (!(u->ws = unsb_wsc_open(&cfg, &err))) return push_fail(L, &err, 0);
  return wait_open(L, lua_gettop(L));
}

/* ---------------------------------------------------------------------
** service: wait until something can be read
** ------------------------------------------------------------------- */

/* ready, fd_ready; the caller's fd is no longer watched. */
static int push_service(lua_State *L, lterminal *u) {
  unsb_error err;
  int ready = unsb_wsc_ready(u->ws), fd_ready = unsb_wsc_fd_ready(u->ws);
  unsb_wsc_watch_fd(u->ws, -1, &err);
  lua_pushboolean(L, ready);
  lua_pushboolean(L, fd_ready);
  return 2;
}

static int service_k(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  ub_wait_done(L);
  if (!u->ws) return luaL_error(L, "attempt to use a closed Terminal");
  unsb_loop_timer_cancel(unsb_wsc_loop(u->ws), u->token);
  unsb_wsc_notify(u->ws, 0);
  u->token = 0;
  return push_service(L, u);
}

/* t:_service(timeout_ms[, fd]) -> ready, fd_ready | nil, kind, message:
** returns once a message is queued or the terminal ended (ready), fd is
** readable, the time is up, or (outside a task) a signal arrived. */
static int l_service(lua_State *L) {
  lterminal *u = check_open(L);
  lua_Integer ms = luaL_checkinteger(L, 2);
  lua_Integer fd = luaL_optinteger(L, 3, -1);
  unsb_error err;
  luaL_argcheck(L, ms >= 0 && ms <= 24 * 3600 * 1000, 2, "timeout out of range");
  luaL_argcheck(L, fd >= -1 && fd <= 1 << 20, 3, "bad file descriptor");
  lua_settop(L, 1);
  if (fd >= 0 && unsb_wsc_watch_fd(u->ws, (int)fd, &err) != 0) return push_fail(L, &err, 0);
  if (unsb_wsc_ready(u->ws) || unsb_wsc_fd_ready(u->ws) || ms == 0) return push_service(L, u);
  if (ub_task_can_yield(L)) {
    u->token = ub_wait(L, 0);
    unsb_wsc_notify(u->ws, u->token);
    if (unsb_loop_timer(unsb_wsc_loop(u->ws), unsb_monotonic_ms() + ms, u->token, &err) != 0)
      return luaL_error(L, "not enough memory");
    return ub_yield(L, service_k, 1);   /* k(terminal) */
  }
  int64_t end = unsb_monotonic_ms() + ms;
  unsb_loop_signalled(unsb_wsc_loop(u->ws));   /* only the signals of this wait count */
  for (;;) {
    int64_t left = end - unsb_monotonic_ms();
    if (left <= 0) break;
    if (drive(u->ws, (long)left, &err) != 0) {
      unsb_wsc_watch_fd(u->ws, -1, &err);
      return push_fail(L, &err, 0);
    }
    if (unsb_wsc_ready(u->ws) || unsb_wsc_fd_ready(u->ws)) break;
    if (unsb_loop_signalled(unsb_wsc_loop(u->ws))) break;
  }
  return push_service(L, u);
}

/* ---------------------------------------------------------------------
** the rest of the methods
** ------------------------------------------------------------------- */

/* t:_send(bytes) -> true | nil, kind, message */
static int l_send(lua_State *L) {
  lterminal *u = check_open(L);
  size_t len;
  const char *s = ub_check_string(L, 2, "bytes", &len);
  unsb_error err;
  if (unsb_wsc_send(u->ws, s, len, &err) != 0) return push_fail(L, &err, 0);
  lua_pushboolean(L, 1);
  return 1;
}

/* t:_resize(cols, rows) -> true | nil, kind, message */
static int l_resize(lua_State *L) {
  lterminal *u = check_open(L);
  lua_Integer cols = luaL_checkinteger(L, 2), rows = luaL_checkinteger(L, 3);
  unsb_error err;
  luaL_argcheck(L, cols >= UNSB_WSC_MIN_SIZE && cols <= UNSB_WSC_MAX_SIZE, 2, "cols: 1..1000");
  luaL_argcheck(L, rows >= UNSB_WSC_MIN_SIZE && rows <= UNSB_WSC_MAX_SIZE, 3, "rows: 1..1000");
  if (unsb_wsc_resize(u->ws, (int)cols, (int)rows, &err) != 0) return push_fail(L, &err, 0);
  lua_pushboolean(L, 1);
  return 1;
}

/* t:_next() -> data, is_text | nil (nothing queued) */
static int l_next(lua_State *L) {
  lterminal *u = check_open(L);
  char **box = ub_box_new(L);
  size_t len;
  int text;
  if (!unsb_wsc_next(u->ws, box, &len, &text)) return 0;
  ub_box_push(L, box, len);
  lua_pushboolean(L, text);
  return 2;
}

/* t:_ended() -> false | true | nil, kind, message, close code */
static int l_ended(lua_State *L) {
  lterminal *u = check_open(L);
  unsb_error err;
  int rc = unsb_wsc_ended(u->ws, &err);
  if (rc >= 0) {
    lua_pushboolean(L, rc);
    return 1;
  }
  ub_push_error(L, &err);
  lua_pushinteger(L, unsb_wsc_close_code(u->ws));
  return 4;
}

static int l_pending(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)unsb_wsc_pending_input(check_open(L)->ws));
  return 1;
}

/* close([wait_ms]): the closer of __gc and __close too (they pass no
** number, so they wait the default second for the server's close). */
static int l_close(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  lua_Integer ms = lua_isinteger(L, 2) ? lua_tointeger(L, 2) : 1000;
  unsb_error err;
  if (ms < 0) ms = 0;
  if (ms > 60000) ms = 60000;
  if (u->ws) {
    unsb_wsc *ws = u->ws;
    int64_t end = unsb_monotonic_ms() + ms;
    u->ws = NULL;
    if (u->token) unsb_loop_timer_cancel(unsb_wsc_loop(ws), u->token);
    unsb_wsc_close_start(ws);
    while (!unsb_wsc_ended(ws, &err) && unsb_monotonic_ms() < end) {
      long left = (long)(end - unsb_monotonic_ms());
      if (unsb_loop_step(unsb_wsc_loop(ws), left < UNSB_SLICE_MS ? left : UNSB_SLICE_MS, &err) != 0)
        break;
    }
    unsb_wsc_free(ws);
  }
  return 0;
}

static int l_tostring(lua_State *L) {
  lterminal *u = luaL_checkudata(L, 1, UB_TERMINAL);
  lua_pushstring(L, u->ws ? UB_TERMINAL : UB_TERMINAL " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"_send", l_send}, {"_resize", l_resize}, {"_service", l_service}, {"_next", l_next},
  {"_ended", l_ended}, {"_pending", l_pending}, {"close", l_close}, {NULL, NULL},
};

static const luaL_Reg META[] = {
  {"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {"__index", NULL},
  {NULL, NULL},
};

void ub_open_terminal(lua_State *L) {
  luaL_newmetatable(L, UB_TERMINAL);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  /* core.Terminal: the facade adds its Lua methods (read, send, ...) here */
  lua_setfield(L, -3, "Terminal");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_open);
  lua_setfield(L, -2, "terminal_open");
  lua_pushinteger(L, UNSB_WSC_MAX_SIZE);
  lua_setfield(L, -2, "TERMINAL_MAX_SIZE");
}
