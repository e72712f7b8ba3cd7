/*
** The binding's side of the event loop (core/loop.h): one loop per Lua
** state, shared by every Client and Manager made in it, and what lets a
** call inside a task yield instead of block.
**
** A task is a coroutine the Lua scheduler (lua/unsandbox/tasks.lua) runs
** and registers here (core.task_thread). A C function that has to wait —
** a transfer, a stream step, a sleep — asks ub_task_can_yield: when the
** running thread is registered and may yield, it takes a token
** (ub_wait), hands it to what it waits on, and returns the sentinel
** core.YIELD with a continuation (ub_yield): the facade yields from Lua
** and calls the continuation once resumed, so no C frame is ever
** suspended (5.1 and LuaJIT have no lua_yieldk). Otherwise it blocks as
** it always did. core.loop_step drives the loop and turns the tokens that
** fired into the threads to resume. Only registered threads ever get the
** sentinel: a user's own coroutine inside a task never receives it.
**
** State, all in the Loop userdata kept in the registry (no C globals, so
** two Lua states never interfere): user value 1 maps token -> thread,
** 2 maps thread -> what it waits on (a Transfer, or a timer's token), so
** cancelling a task closes its transfer at once, 3 is the set of threads
** that may yield (weak keys).
*/
#include "lua/binding.h"

#include <poll.h>

#include "core/clock.h"
#include "core/http.h"
#include "core/interrupt.h"

typedef struct {
  unsb_loop *l;
  unsb_token next;
  int calls_from_c;   /* > 0: the binding is calling Lua code (ub_call_lua) */
} lloop;

static const char LOOP_KEY = 'L';   /* its address keys the registry */
static const char YIELD_MARK = 'Y';  /* its address is core.YIELD */

#define TAKE_BATCH 64

/* The state's Loop userdata, pushed. */
static lloop *push_loop(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &LOOP_KEY);
  lloop *lp = luaL_testudata(L, -1, UB_LOOP);
  if (!lp || !lp->l) luaL_error(L, "unsandbox.core: the event loop is gone");
  return lp;
}

unsb_loop *ub_loop(lua_State *L) {
  lloop *lp = push_loop(L);
  lua_pop(L, 1);
  return lp->l;
}

int ub_task_can_yield(lua_State *L) {
  if (!lua_isyieldable(L)) return 0;
  lloop *lp = push_loop(L);
  if (lp->calls_from_c > 0) {
    lua_pop(L, 1);
    return 0;
  }
  lua_getiuservalue(L, -1, 3);
  lua_pushthread(L);
  int yes = lua_rawget(L, -2) == LUA_TBOOLEAN;
  lua_pop(L, 3);
  return yes;
}

unsb_token ub_wait(lua_State *L, int obj_idx) {
  if (obj_idx != 0) obj_idx = lua_absindex(L, obj_idx);
  lloop *lp = push_loop(L);
  unsb_token tok = ++lp->next;
  lua_getiuservalue(L, -1, 1);            /* waits[tok] = thread */
  lua_pushthread(L);
  lua_rawseti(L, -2, (lua_Integer)tok);
  lua_getiuservalue(L, -2, 2);            /* current[thread] = obj (0: the token) */
  lua_pushthread(L);
  if (obj_idx) lua_pushvalue(L, obj_idx);
  else lua_pushinteger(L, (lua_Integer)tok);
  lua_rawset(L, -3);
  lua_pop(L, 3);
  return tok;
}

void ub_wait_done(lua_State *L) {
  push_loop(L);
  lua_getiuservalue(L, -1, 2);
  lua_pushthread(L);
  lua_pushnil(L);
  lua_rawset(L, -3);
  lua_pop(L, 2);
}

int ub_yield(lua_State *L, lua_CFunction k, int nargs) {
  lua_pushlightuserdata(L, (void *)&YIELD_MARK);
  lua_pushcfunction(L, k);
  lua_rotate(L, -(nargs + 2), 2);   /* YIELD, k below the values */
  return nargs + 2;
}

int ub_call_lua(lua_State *L, int nargs, int nresults) {
  lloop *lp = push_loop(L);
  lua_pop(L, 1);
  lp->calls_from_c++;
  int rc = lua_pcall(L, nargs, nresults, 0);
  lp->calls_from_c--;
  return rc;
}

/* ---------------------------------------------------------------------
** core.* functions for the scheduler
** ------------------------------------------------------------------- */

/* core.task_thread(co, on): co may (on) or may no longer yield to the
** scheduler. */
static int l_task_thread(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  int on = lua_toboolean(L, 2);
  push_loop(L);
  lua_getiuservalue(L, -1, 3);
  lua_pushvalue(L, 1);
  if (on) lua_pushboolean(L, 1);
  else lua_pushnil(L);
  lua_rawset(L, -3);
  return 0;
}

/* Moves the threads whose tokens fired into the table on top. */
static void collect_woken(lua_State *L, lloop *lp, int loop_idx) {
  unsb_token toks[TAKE_BATCH];
  lua_Integer n = 0;
  int out = lua_gettop(L);
  lua_getiuservalue(L, loop_idx, 1);
  int waits = lua_gettop(L);
  size_t got;
  while ((got = unsb_loop_take(lp->l, toks, TAKE_BATCH)) > 0) {
    for (size_t i = 0; i < got; i++) {
      if (lua_rawgeti(L, waits, (lua_Integer)toks[i]) == LUA_TTHREAD) {
        lua_rawseti(L, out, ++n);
        lua_pushnil(L);
        lua_rawseti(L, waits, (lua_Integer)toks[i]);
      } else {
        lua_pop(L, 1);   /* a stale token: its waiter moved on */
      }
    }
  }
  lua_pop(L, 1);
}

/* core.loop_step(ms) -> {threads woken}, interrupted. Waits at most ms in
** slices of UNSB_SLICE_MS (the interrupt flag is checked between them),
** and no longer once a token is queued. */
static int l_loop_step(lua_State *L) {
  lua_Integer ms = ub_check_ms(L, 1, "ms", 0);
  unsb_error err;
  int interrupted = 0;
  lua_settop(L, 1);
  lloop *lp = push_loop(L);
  int64_t end = unsb_monotonic_ms() + ms;
  for (;;) {
    int64_t left = end - unsb_monotonic_ms();
    if (unsb_loop_pending(lp->l) > 0) left = 0;
    if (unsb_loop_step(lp->l, left < 0 ? 0 : left > UNSB_SLICE_MS ? UNSB_SLICE_MS : left, &err) != 0)
      return luaL_error(L, "%s", err.kind == UNSB_ENOMEM ? "not enough memory" : err.message);
    if (unsb_interrupt_take()) {
      interrupted = 1;
      break;
    }
    if (unsb_loop_pending(lp->l) > 0 || unsb_monotonic_ms() >= end) break;
  }
  lua_newtable(L);
  collect_woken(L, lp, 2);
  lua_pushboolean(L, interrupted);
  return 2;
}

/* core.loop_pollfds() -> {{fd=, events="r"|"w"|"rw"}, ...}, timeout_ms
** (-1: nothing scheduled; 0 when tokens are already queued). */
static int l_loop_pollfds(lua_State *L) {
  lloop *lp = push_loop(L);
  size_t n = unsb_loop_fds(lp->l, NULL, 0);
  unsb_loop_fd *fds = lua_newuserdatauv(L, (n ? n : 1) * sizeof *fds, 0);
  n = unsb_loop_fds(lp->l, fds, n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    int r = (fds[i].events & POLLIN) != 0, w = (fds[i].events & POLLOUT) != 0;
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, fds[i].fd);
    lua_setfield(L, -2, "fd");
    lua_pushstring(L, r && w ? "rw" : w ? "w" : "r");
    lua_setfield(L, -2, "events");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, unsb_loop_pending(lp->l) > 0 ? 0 : unsb_loop_timeout(lp->l));
  return 2;
}

/* core.loop_abort(co): what co waits on ends now (a Transfer is closed, a
** timer cancelled), for a task being cancelled. */
static int l_loop_abort(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  lua_settop(L, 1);
  lloop *lp = push_loop(L);
  lua_getiuservalue(L, 2, 2);
  lua_pushvalue(L, 1);
  int t = lua_rawget(L, 3);
  if (t == LUA_TNUMBER) unsb_loop_timer_cancel(lp->l, (unsb_token)lua_tointeger(L, -1));
  else if (luaL_testudata(L, -1, UB_TRANSFER)) ub_transfer_close(L, lua_gettop(L));
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  lua_rawset(L, 3);
  return 0;
}

static int park_k(lua_State *L) {
  ub_wait_done(L);
  return 0;
}

/* core.park([ms]): the running task waits until core.unpark(its thread)
** or ms pass (none: no timer). Raises outside a task's own thread. */
static int l_park(lua_State *L) {
  lua_Integer ms = lua_isnoneornil(L, 1) ? 0 : ub_check_ms(L, 1, "ms", 0);
  unsb_error err;
  if (!ub_task_can_yield(L)) return luaL_error(L, "only a task can wait here");
  unsb_token tok = ub_wait(L, 0);
  if (ms > 0 && unsb_loop_timer(ub_loop(L), unsb_monotonic_ms() + ms, tok, &err) != 0)
    return luaL_error(L, "not enough memory");
  return ub_yield(L, park_k, 0);
}

/* core.unpark(co): a parked thread is woken at the next loop step. */
static int l_unpark(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  lua_settop(L, 1);
  lloop *lp = push_loop(L);
  lua_getiuservalue(L, 2, 2);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, 3) == LUA_TNUMBER) {
    unsb_token tok = (unsb_token)lua_tointeger(L, -1);
    unsb_loop_timer_cancel(lp->l, tok);
    unsb_loop_notify(lp->l, tok);
  }
  return 0;
}

/* core.can_yield(): the running thread is a task's and may yield. */
static int l_can_yield(lua_State *L) {
  lua_pushboolean(L, ub_task_can_yield(L));
  return 1;
}

/* core.loop_stats() -> {timers=, pending=, watched=}: for tests. */
static int l_loop_stats(lua_State *L) {
  lloop *lp = push_loop(L);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)unsb_loop_timers(lp->l));
  lua_setfield(L, -2, "timers");
  lua_pushinteger(L, (lua_Integer)unsb_loop_pending(lp->l));
  lua_setfield(L, -2, "pending");
  lua_pushinteger(L, (lua_Integer)unsb_loop_fds(lp->l, NULL, 0));
  lua_setfield(L, -2, "watched");
  return 1;
}

static int l_monotonic_us(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)unsb_monotonic_us());
  return 1;
}

static int l_gc(lua_State *L) {
  lloop *lp = luaL_checkudata(L, 1, UB_LOOP);
  unsb_loop_unref(lp->l);   /* engines still open keep it alive */
  lp->l = NULL;
  return 0;
}

static const luaL_Reg FUNCTIONS[] = {
  {"task_thread", l_task_thread},
  {"loop_step", l_loop_step},
  {"loop_pollfds", l_loop_pollfds},
  {"loop_abort", l_loop_abort},
  {"loop_stats", l_loop_stats},
  {"park", l_park},
  {"unpark", l_unpark},
  {"can_yield", l_can_yield},
  {"monotonic_us", l_monotonic_us},
  {NULL, NULL},
};

static void weak_table(lua_State *L, const char *mode) {
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushstring(L, mode);
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
}

/* One Loop per state: a second luaopen (a spec that reloads the module)
** keeps the first, so clients made before and after share it. */
static void make_loop(lua_State *L) {
  unsb_error err;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &LOOP_KEY) != LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  luaL_newmetatable(L, UB_LOOP);
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lloop *lp = lua_newuserdatauv(L, sizeof *lp, 3);
  lp->l = NULL;
  lp->next = 0;
  lp->calls_from_c = 0;
  luaL_setmetatable(L, UB_LOOP);
  lua_newtable(L);                /* token -> thread */
  lua_setiuservalue(L, -2, 1);
  weak_table(L, "k");             /* thread -> what it waits on */
  lua_setiuservalue(L, -2, 2);
  weak_table(L, "k");             /* threads that may yield */
  lua_setiuservalue(L, -2, 3);
  if (!(lp->l = unsb_loop_new(&err))) luaL_error(L, "not enough memory");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &LOOP_KEY);
}

void ub_open_loop(lua_State *L) {
  make_loop(L);
  luaL_setfuncs(L, FUNCTIONS, 0);
  lua_pushlightuserdata(L, (void *)&YIELD_MARK);
  lua_setfield(L, -2, "YIELD");
}
