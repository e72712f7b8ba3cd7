/*
** One buffered call of a Client or a Manager, from an open Transfer to
** the values Lua gets: the one path both clients' `request`/`_request`
** take, so "start one transfer, drive until it is done" has no second
** form. Inside a task the call returns core.YIELD and a continuation
** (ub_yield): the facade yields and calls it when the transfer's token
** fires; anywhere else it drives the loop, blocking as calls always did.
** Either way the Transfer is closed before the results are returned.
**
** Results carry `timing` (ms, from core/http.h's unsb_http_timing);
** failures return nil, kind, message and a fourth value {timing=, sent=}
** so the facade can report and retry honestly (sent = some of the
** request left, so the server may have acted on it).
*/
#include "lua/binding.h"

static void set_ms(lua_State *L, const char *field, int64_t us) {
  lua_pushnumber(L, (lua_Number)us / 1000.0);
  lua_setfield(L, -2, field);
}

void ub_push_timing(lua_State *L, const unsb_http_timing *t) {
  lua_createtable(L, 0, 12);
  set_ms(L, "queue_ms", t->queue_us);
  set_ms(L, "resolve_ms", t->resolve_us);
  set_ms(L, "connect_ms", t->connect_us);
  set_ms(L, "tls_ms", t->tls_us);
  set_ms(L, "server_ms", t->server_us);
  set_ms(L, "transfer_ms", t->transfer_us);
  set_ms(L, "total_ms", t->total_us);
  if (t->first_data_us >= 0) set_ms(L, "stream_first_byte_ms", t->first_data_us);
  lua_pushinteger(L, (lua_Integer)t->bytes_out);
  lua_setfield(L, -2, "bytes_out");
  lua_pushinteger(L, (lua_Integer)t->bytes_in);
  lua_setfield(L, -2, "bytes_in");
  lua_pushinteger(L, t->new_connections);
  lua_setfield(L, -2, "new_connections");
}

int ub_push_failure(lua_State *L, const unsb_error *err, const unsb_http_timing *t) {
  if (err->kind == UNSB_ENOMEM) return luaL_error(L, "not enough memory");
  lua_pushnil(L);
  lua_pushstring(L, unsb_kind_name(err->kind));
  lua_pushstring(L, err->message);
  lua_createtable(L, 0, 2);
  ub_push_timing(L, t);
  lua_setfield(L, -2, "timing");
  lua_pushboolean(L, t->sent);
  lua_setfield(L, -2, "sent");
  return 4;
}

static int finish_k(lua_State *L);

/* woken: the thread is back from a wait on this Transfer */
static int finish_at(lua_State *L, int tidx, int woken) {
  unsb_http_xfer *x = ub_transfer_xfer(L, tidx);
  if (woken) ub_wait_done(L);
  if (x && !unsb_http_done(x)) {
    if (ub_task_can_yield(L)) {
      ub_transfer_watch(L, tidx);
      lua_pushvalue(L, tidx);
      return ub_yield(L, finish_k, 1);
    }
    unsb_error err;
    if (unsb_http_drive(unsb_http_of(x), x, &err) != 0) {
      unsb_http_timing t;
      unsb_http_timing_of(x, &t);
      ub_transfer_close(L, tidx);   /* an interrupted call is aborted */
      return ub_push_failure(L, &err, &t);
    }
  }
  int n = ub_transfer_push_result(L, tidx);
  ub_transfer_close(L, tidx);
  return n;
}

/* The continuation: k(transfer). */
static int finish_k(lua_State *L) {
  luaL_checkudata(L, 1, UB_TRANSFER);
  return finish_at(L, 1, 1);
}

int ub_transfer_finish(lua_State *L, int tidx) {
  return finish_at(L, lua_absindex(L, tidx), 0);
}
