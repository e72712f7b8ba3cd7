/*
** unsandbox.Transfer: an open Control Plane call that Lua drives itself,
** one round at a time (core/http.h's open/pump/wait), so a stream's
** chunks reach Lua code as they arrive, that code may yield (a coroutine
** iterator), raise, or make other calls on the same Manager meanwhile.
**
**   local t = m:_open(method, path, body, {mode = "sse" | "raw", ...})
**   local pieces, done = t:step(ms)   -- SSE: event data strings; raw: body chunks
**   local resp = t:result()           -- once done: as m:_request's
**   t:close()                         -- aborts a running transfer
**
** No Lua runs inside libcurl: on_data only copies bytes into this
** object's queue (SSE data parsed by the core's parser first). A queue
** over QUEUE_HIGH pauses the transfer until Lua drains it, so a reader
** that falls behind slows the server down instead of filling memory.
**
** A 2xx answer streams (SSE mode: only when it is text/event-stream);
** anything else is buffered and read with result(), so error bodies stay
** whole. User values: 1 the Manager (its engine must outlive the
** transfer), 2 the body (sent from Lua's memory), 3 the capture list.
** Closing the Manager closes its transfers: each use checks it first.
*/
#include "lua/binding.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cpclient.h"
#include "core/interrupt.h"
#include "core/sse.h"

#define QUEUE_HIGH ((size_t)1 << 20)

typedef struct { char *p; size_t n; } piece;

typedef struct {
  unsb_http_xfer *x;       /* NULL = closed */
  int sse;                 /* SSE events, or raw body chunks */
  unsb_sse *parser;
  piece *q;
  size_t qn, qcap, qbytes;
  int finished;            /* the parser saw the end of the stream */
  int failed;              /* a cap or memory: the transfer was cancelled */
  unsb_error err;
} ltransfer;

static int enqueue(ltransfer *t, const char *data, size_t n) {
  char *copy;
  if (t->qn == t->qcap) {
    size_t cap = t->qcap ? 2 * t->qcap : 16;
    piece *q = realloc(t->q, cap * sizeof *q);
    if (!q) return -1;
    t->q = q;
    t->qcap = cap;
  }
  if (!(copy = malloc(n ? n : 1))) return -1;
  memcpy(copy, data, n);
  t->q[t->qn].p = copy;
  t->q[t->qn++].n = n;
  t->qbytes += n;
  return 0;
}

static void drop_queue(ltransfer *t) {
  for (size_t i = 0; i < t->qn; i++) free(t->q[i].p);
  free(t->q);
  t->q = NULL;
  t->qn = t->qcap = t->qbytes = 0;
}

/* ---------------------------------------------------------------------
** engine callbacks (inside libcurl: C only)
** ------------------------------------------------------------------- */

static int on_head(void *ud, long status, const char *ctype) {
  ltransfer *t = ud;
  if (status < 200 || status > 299) return UNSB_HTTP_BUFFER;
  if (!t->sse) return UNSB_HTTP_STREAM;
  return ctype && strcasestr(ctype, "text/event-stream") ? UNSB_HTTP_STREAM : UNSB_HTTP_BUFFER;
}

static int on_event(void *ud, const unsb_sse_event *ev) {
  ltransfer *t = ud;
  if (enqueue(t, ev->data, ev->data_len) != 0) {
    t->failed = 1;
    unsb_fail(&t->err, UNSB_ENOMEM, "out of memory");
    return 1;
  }
  return 0;
}

static int on_data(void *ud, const char *data, size_t len) {
  ltransfer *t = ud;
  if (t->qbytes >= QUEUE_HIGH) return UNSB_HTTP_PAUSE;
  if (!t->sse) {
    if (enqueue(t, data, len) == 0) return 0;
    t->failed = 1;
    unsb_fail(&t->err, UNSB_ENOMEM, "out of memory");
    return 1;
  }
  if (unsb_sse_feed(t->parser, data, len, on_event, t, &t->err) != 0) {
    t->failed = 1;   /* a line or event over the parser's caps, or memory */
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------
** the userdata
** ------------------------------------------------------------------- */

/* The transfer at 1, NULL when it or its Manager was closed. */
static ltransfer *get(lua_State *L, int *manager_open) {
  ltransfer *t = luaL_checkudata(L, 1, UB_TRANSFER);
  lua_getiuservalue(L, 1, 1);
  ub_manager *m = lua_touserdata(L, -1);
  lua_pop(L, 1);
  *manager_open = m && m->c;
  if (!*manager_open) t->x = NULL;   /* freed with the Manager's engine */
  return t;
}

static ltransfer *check_open(lua_State *L) {
  int mo;
  ltransfer *t = get(L, &mo);
  if (!t->x) luaL_error(L, "attempt to use a closed Transfer");
  return t;
}

static int l_close(lua_State *L) {
  int mo;
  ltransfer *t = get(L, &mo);
  if (t->x) unsb_http_close(t->x);
  t->x = NULL;
  unsb_sse_free(t->parser);
  t->parser = NULL;
  drop_queue(t);
  return 0;
}

/* m:_open(method, path, body, opts) */
int ub_transfer_open(lua_State *L) {
  unsb_cp *c = ub_manager_check(L, 1);
  unsb_cp_call call;
  unsb_error err;
  const char *names[UNSB_HTTP_CAPTURE_MAX];
  const char *mode;
  ub_cp_call_args(L, &call, names);
  lua_settop(L, 5);
  mode = lua_istable(L, 5) ? ub_field_string(L, 5, 5, "mode", NULL) : NULL;
  if (mode && strcmp(mode, "sse") != 0 && strcmp(mode, "raw") != 0)
    return luaL_argerror(L, 5, "mode: \"sse\" or \"raw\" expected");
  ltransfer *t = lua_newuserdatauv(L, sizeof *t, 3);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, UB_TRANSFER);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 4);
  lua_setiuservalue(L, -2, 2);
  if (lua_istable(L, 5)) {
    lua_getfield(L, 5, "capture");
    lua_setiuservalue(L, -2, 3);
  }
  t->sse = !mode || strcmp(mode, "sse") == 0;
  if (t->sse && !(t->parser = unsb_sse_new(0, 0))) return luaL_error(L, "not enough memory");
  unsb_http_stream st = {on_head, on_data, NULL, t};
  call.stream = &st;
  if (!(t->x = unsb_cp_open(c, &call, &err))) return ub_push_error(L, &err);
  return 1;
}

/* Drives the engine unless pieces are waiting: one round, then (nothing
** yet) a wait of at most ms and another round. */
static int advance(lua_State *L, ltransfer *t, lua_Integer ms, unsb_error *err) {
  unsb_http *h = unsb_cp_http(ub_manager_check(L, -1));
  if (t->qn > 0 || unsb_http_done(t->x)) return 0;
  if (unsb_http_pump(h, err) != 0) return -1;
  if (t->qn == 0 && !unsb_http_done(t->x)) {
    unsb_http_wait(h, (long)ms);
    if (unsb_http_pump(h, err) != 0) return -1;
  }
  if (unsb_interrupt_take())
    return unsb_fail(err, UNSB_EINTERRUPTED, "stream interrupted");
  return 0;
}

/* t:step([ms]) -> pieces, done | nil, kind, message */
static int l_step(lua_State *L) {
  ltransfer *t = check_open(L);
  lua_Integer ms = lua_isnoneornil(L, 2) ? 100 : ub_check_ms(L, 2, "ms", 0);
  unsb_sse_event ev;
  unsb_error err;
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1);
  if (advance(L, t, ms, &err) != 0) return ub_push_error(L, &err);
  if (t->sse && unsb_http_done(t->x) && !t->finished && !t->failed) {
    int rc = unsb_sse_finish(t->parser, &ev, &err);   /* §7.11: dispatch at EOF */
    t->finished = 1;
    if (rc == 1 && enqueue(t, ev.data, ev.data_len) != 0) return luaL_error(L, "not enough memory");
  }
  lua_createtable(L, (int)t->qn, 0);
  for (size_t i = 0; i < t->qn; i++) {
    lua_pushlstring(L, t->q[i].p, t->q[i].n);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  for (size_t i = 0; i < t->qn; i++) free(t->q[i].p);
  t->qn = t->qbytes = 0;
  unsb_http_resume(t->x);   /* a paused transfer goes on once drained */
  lua_pushboolean(L, unsb_http_done(t->x) && t->qn == 0);
  return 2;
}

/* t:result() -> resp | nil, kind, message (only once done) */
static int l_result(lua_State *L) {
  ltransfer *t = check_open(L);
  unsb_http_response resp;
  unsb_error err;
  const char *names[UNSB_HTTP_CAPTURE_MAX];
  size_t n = 0;
  if (t->failed) return ub_push_error(L, &t->err);
  if (unsb_http_result(t->x, &resp, &err) != 0) return ub_push_error(L, &err);
  lua_settop(L, 1);
  if (lua_getiuservalue(L, 1, 3) == LUA_TTABLE) {
    for (; n < UNSB_HTTP_CAPTURE_MAX && lua_rawgeti(L, 2, (lua_Integer)n + 1) == LUA_TSTRING; n++)
      names[n] = lua_tostring(L, -1);   /* anchored by the table in user value 3 */
    lua_settop(L, 2);
  }
  ub_push_response(L, &resp, names, n);
  unsb_http_response_free(&resp);
  return 1;
}

static int l_tostring(lua_State *L) {
  int mo;
  ltransfer *t = get(L, &mo);
  if (t->x) lua_pushfstring(L, UB_TRANSFER " (%s)", unsb_http_done(t->x) ? "done" : "running");
  else lua_pushliteral(L, UB_TRANSFER " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"step", l_step},
  {"result", l_result},
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

void ub_open_transfer(lua_State *L) {
  luaL_newmetatable(L, UB_TRANSFER);
  luaL_setfuncs(L, META, 0);
  luaL_newlib(L, METHODS);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}
