/*
** unsandbox.Transfer: one call of a Client or a Manager as a userdata
** that owns the core transfer (core/http.h). Every call is one: the
** buffered `request` / `_request` make one, wait for it (exchange.c) and
** close it; `_open` hands it to Lua, which steps a stream itself, so a
** stream's chunks reach Lua code as they arrive, and that code may yield,
** raise, or make other calls meanwhile.
**
**   local t = m:_open(method, path, body, {mode = "sse" | "raw", ...})
**   local pieces, done = t:step(ms)   -- SSE: event data strings; raw: body chunks
**   local resp = t:result()           -- once done: as m:_request's
**   local timing = t:timing()         -- so far (nil once closed)
**   t:close()                         -- aborts a running transfer
**
** No Lua runs inside libcurl: on_data only copies bytes into this
** object's queue (SSE data parsed by the core's parser first) and queues
** the waiter's token on the loop. A queue over QUEUE_HIGH pauses the
** transfer until Lua drains it, so a reader that falls behind slows the
** server down instead of filling memory. Inside a task, step waits by
** yielding (loop.c); elsewhere it drives the loop for at most ms.
**
** A 2xx answer streams (SSE mode: only when it is text/event-stream);
** anything else is buffered and read with result(), so error bodies stay
** whole. User values: 1 the Client or Manager (its engine must outlive
** the transfer; both userdata start with their core pointer, NULL once
** closed, and closing one closes its transfers), 2 the body (sent from
** Lua's memory), 3 the capture list.
*/
#include "lua/binding.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/digest.h"
#include "core/file.h"
#include "core/filehash.h"
#include "core/interrupt.h"
#include "core/sse.h"

#define QUEUE_HIGH ((size_t)1 << 20)

typedef struct { char *p; size_t n; } piece;

struct ub_transfer {
  unsb_http_xfer *x;       /* NULL = closed */
  int mode;                /* UB_XFER_* */
  unsb_loop *loop;         /* to queue the waiter's token from on_data */
  unsb_token token;        /* the waiter's, 0 = none */
  unsb_http_stream st;
  unsb_sse *parser;
  piece *q;
  size_t qn, qcap, qbytes;
  int finished;            /* the parser saw the end of the stream */
  int failed;              /* a cap or memory: the transfer was cancelled */
  unsb_error *err;         /* why, made when it failed (an error is 2 KiB:
                           ** not in every call's userdata) */
  /* the result while it is pushed: boxed by this userdata, whose __gc
  ** frees it if pushing raises */
  unsb_http_response resp;
  /* files: the body read from in_fd; a 2xx answer written to out_fd
  ** (mode UB_XFER_FILE) as it arrives and hashed on the way, so no
  ** piece of it reaches Lua; both closed with the transfer */
  int in_fd, out_fd;
  char *out_path;          /* for messages */
  uint64_t out_bytes;      /* written to out_fd */
  unsb_filehash *hash;     /* of out_fd, on its own thread */
};

/* Where a failure inside libcurl's callbacks is written: the transfer's
** own error, made now; when even that fails, a shared one that says out
** of memory (the binding raises on that kind: nothing more is needed). */
static unsb_error no_memory = { UNSB_ENOMEM, "out of memory", 0 };

static unsb_error *failure(ub_transfer *t) {
  t->failed = 1;
  if (!t->err && !(t->err = calloc(1, sizeof *t->err))) return &no_memory;
  return t->err;
}

static int enqueue(ub_transfer *t, const char *data, size_t n) {
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
  if (t->token) unsb_loop_notify(t->loop, t->token);
  return 0;
}

static void drop_queue(ub_transfer *t) {
  for (size_t i = 0; i < t->qn; i++) free(t->q[i].p);
  free(t->q);
  t->q = NULL;
  t->qn = t->qcap = t->qbytes = 0;
}

/* ---------------------------------------------------------------------
** engine callbacks (inside libcurl: C only)
** ------------------------------------------------------------------- */

static int on_head(void *ud, long status, const char *ctype) {
  ub_transfer *t = ud;
  if (status < 200 || status > 299) return UNSB_HTTP_BUFFER;
  if (t->mode == UB_XFER_RAW || t->mode == UB_XFER_FILE) return UNSB_HTTP_STREAM;
  return ctype && strcasestr(ctype, "text/event-stream") ? UNSB_HTTP_STREAM : UNSB_HTTP_BUFFER;
}

static int on_event(void *ud, const unsb_sse_event *ev) {
  ub_transfer *t = ud;
  if (enqueue(t, ev->data, ev->data_len) != 0) {
    unsb_fail(failure(t), UNSB_ENOMEM, "out of memory");
    return 1;
  }
  return 0;
}

/* Mode file: the bytes to out_fd and the hash; a write that fails stops
** the transfer (kind io, naming the file). */
static int to_file(ub_transfer *t, const char *data, size_t len) {
  if (unsb_write_all(t->out_fd, data, len) != 0) {
    unsb_fail(failure(t), UNSB_EIO, "cannot write %s: %s", t->out_path, strerror(errno));
    return 1;
  }
  t->out_bytes += len;
  unsb_filehash_wrote(t->hash, t->out_bytes);
  return 0;
}

static int on_data(void *ud, const char *data, size_t len) {
  ub_transfer *t = ud;
  if (t->mode == UB_XFER_FILE) return to_file(t, data, len);
  if (t->qbytes >= QUEUE_HIGH) return UNSB_HTTP_PAUSE;
  if (t->mode == UB_XFER_RAW) {
    if (enqueue(t, data, len) == 0) return 0;
    unsb_fail(failure(t), UNSB_ENOMEM, "out of memory");
    return 1;
  }
  unsb_error err;
  if (unsb_sse_feed(t->parser, data, len, on_event, t, &err) != 0) {
    /* a line or event over the parser's caps, or memory (an event that
    ** could not be queued has said so already) */
    if (!t->failed) *failure(t) = err;
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------
** the userdata
** ------------------------------------------------------------------- */

/* The transfer at idx; its core transfer is forgotten (NULL) once its
** Client or Manager was closed, which freed it with the engine. */
static ub_transfer *get(lua_State *L, int idx) {
  ub_transfer *t = luaL_checkudata(L, idx, UB_TRANSFER);
  lua_getiuservalue(L, idx, 1);
  void **owner = lua_touserdata(L, -1);   /* ub_client or ub_manager: a pointer first */
  lua_pop(L, 1);
  if (!owner || !*owner) t->x = NULL;
  return t;
}

unsb_http_xfer *ub_transfer_xfer(lua_State *L, int idx) { return get(L, idx)->x; }

int ub_transfer_close(lua_State *L, int idx) {
  ub_transfer *t = get(L, idx);
  if (t->x) {
    /* a step's timer goes with it (a cancelled task never runs step_k);
    ** only while the engine lives, which holds the loop alive */
    if (t->token) unsb_loop_timer_cancel(t->loop, t->token);
    unsb_http_close(t->x);
  }
  t->token = 0;
  t->x = NULL;
  unsb_sse_free(t->parser);
  t->parser = NULL;
  drop_queue(t);
  unsb_http_response_free(&t->resp);
  unsb_filehash_free(t->hash);   /* before its fd is closed */
  t->hash = NULL;
  if (t->in_fd >= 0) close(t->in_fd);
  if (t->out_fd >= 0) close(t->out_fd);
  t->in_fd = t->out_fd = -1;
  free(t->out_path);
  t->out_path = NULL;
  free(t->err);
  t->err = NULL;
  return 0;
}

static int l_close(lua_State *L) { return ub_transfer_close(L, 1); }

ub_transfer *ub_transfer_new(lua_State *L, int owner_idx, int body_idx, int opts_idx, int mode) {
  owner_idx = lua_absindex(L, owner_idx);
  body_idx = lua_absindex(L, body_idx);
  opts_idx = lua_absindex(L, opts_idx);
  ub_transfer *t = lua_newuserdatauv(L, sizeof *t, 3);
  memset(t, 0, sizeof *t);
  t->resp.retry_after = -1;
  t->in_fd = t->out_fd = -1;
  luaL_setmetatable(L, UB_TRANSFER);
  lua_pushvalue(L, owner_idx);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, body_idx);
  lua_setiuservalue(L, -2, 2);
  if (lua_istable(L, opts_idx)) {
    lua_getfield(L, opts_idx, "capture");
    lua_setiuservalue(L, -2, 3);
  }
  t->mode = mode;
  t->loop = ub_loop(L);
  if (mode == UB_XFER_SSE && !(t->parser = unsb_sse_new(0, 0))) luaL_error(L, "not enough memory");
  t->st = (unsb_http_stream){on_head, on_data, t};
  return t;
}

int ub_transfer_to_file(ub_transfer *t, const char *path, unsb_error *err) {
  /* a name of the caller's choosing that must not exist: nothing that
  ** was there is followed or overwritten; open for reading as well, since
  ** the hash reads the bytes back */
  t->out_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (t->out_fd < 0) return unsb_fail(err, UNSB_EIO, "cannot create %s: %s", path, strerror(errno));
  if (!(t->out_path = strdup(path)) || !(t->hash = unsb_filehash_start(t->out_fd)))
    return unsb_fail(err, UNSB_ENOMEM, "out of memory or threads (the download's hash)");
  return 0;
}

int ub_transfer_from_file(ub_transfer *t, const char *path, int *fd, int64_t *len,
                          unsb_error *err) {
  struct stat st;
  /* O_NONBLOCK: a FIFO or a device is refused, never waited on */
  t->in_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (t->in_fd < 0) return unsb_fail(err, UNSB_EIO, "cannot open %s: %s", path, strerror(errno));
  if (fstat(t->in_fd, &st) != 0)
    return unsb_fail(err, UNSB_EIO, "cannot read %s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return unsb_fail(err, UNSB_EIO, "%s is not a regular file", path);
  if (fcntl(t->in_fd, F_SETFL, 0) != 0)
    return unsb_fail(err, UNSB_EIO, "cannot read %s: %s", path, strerror(errno));
  *len = (int64_t)st.st_size;
  *fd = t->in_fd;
  return 0;
}

const unsb_http_stream *ub_transfer_stream(ub_transfer *t) {
  return t->mode == UB_XFER_BUFFER ? NULL : &t->st;
}

void ub_transfer_set(ub_transfer *t, unsb_http_xfer *x) { t->x = x; }

void ub_transfer_watch(lua_State *L, int idx) {
  ub_transfer *t = get(L, idx);
  t->token = ub_wait(L, idx);
  if (t->x) unsb_http_notify(t->x, t->token);
}

/* ---------------------------------------------------------------------
** step
** ------------------------------------------------------------------- */

/* Outside a task: drives the loop unless pieces are waiting, one round,
** then (nothing yet) a round that waits at most ms. */
static int advance(ub_transfer *t, lua_Integer ms, unsb_error *err) {
  if (t->qn > 0 || unsb_http_done(t->x)) return 0;
  if (unsb_loop_step(t->loop, 0, err) != 0) return -1;
  if (t->qn == 0 && !unsb_http_done(t->x) && unsb_loop_step(t->loop, (long)ms, err) != 0)
    return -1;
  if (unsb_interrupt_take())
    return unsb_fail(err, UNSB_EINTERRUPTED, "stream interrupted");
  return 0;
}

/* The pieces received so far and whether the stream is over. */
static int push_pieces(lua_State *L, ub_transfer *t) {
  unsb_sse_event ev;
  unsb_error err;
  if (t->mode == UB_XFER_SSE && unsb_http_done(t->x) && !t->finished && !t->failed) {
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

static ub_transfer *check_open(lua_State *L) {
  ub_transfer *t = get(L, 1);
  if (!t->x) luaL_error(L, "attempt to use a closed Transfer");
  return t;
}

/* Inside a task: woken by a piece, the end, or the ms timer. */
static int step_k(lua_State *L) {
  ub_transfer *t = check_open(L);
  unsb_loop_timer_cancel(t->loop, t->token);
  t->token = 0;
  ub_wait_done(L);
  return push_pieces(L, t);
}

/* t:step([ms]) -> pieces, done | nil, kind, message */
static int l_step(lua_State *L) {
  ub_transfer *t = check_open(L);
  lua_Integer ms = lua_isnoneornil(L, 2) ? 100 : ub_check_ms(L, 2, "ms", 0);
  unsb_error err;
  lua_settop(L, 1);
  if (ms > 0 && t->qn == 0 && !unsb_http_done(t->x) && ub_task_can_yield(L)) {
    ub_transfer_watch(L, 1);
    if (unsb_loop_timer(t->loop, unsb_monotonic_ms() + ms, t->token, &err) != 0)
      return luaL_error(L, "not enough memory");
    return ub_yield(L, step_k, 1);   /* k(t) */
  }
  if (advance(t, ms, &err) != 0) return ub_push_error(L, &err);
  return push_pieces(L, t);
}

/* ---------------------------------------------------------------------
** result
** ------------------------------------------------------------------- */

int ub_transfer_push_result(lua_State *L, int idx) {
  ub_transfer *t = get(L, idx);
  unsb_http_timing timing;
  unsb_error err;
  const char *names[UNSB_HTTP_CAPTURE_MAX];
  size_t n = 0;
  idx = lua_absindex(L, idx);
  if (!t->x) {
    unsb_fail(&err, UNSB_ECANCELLED, "the call was cancelled: its Client or Manager was closed");
    return ub_push_error(L, &err);
  }
  unsb_http_timing_of(t->x, &timing);
  if (t->failed) return ub_push_failure(L, t->err ? t->err : &no_memory, &timing);
  unsb_http_response_free(&t->resp);
  if (unsb_http_result(t->x, &t->resp, &err) != 0) return ub_push_failure(L, &err, &timing);
  int top = lua_gettop(L);
  if (lua_getiuservalue(L, idx, 3) == LUA_TTABLE) {
    for (; n < UNSB_HTTP_CAPTURE_MAX && lua_rawgeti(L, top + 1, (lua_Integer)n + 1) == LUA_TSTRING; n++)
      names[n] = lua_tostring(L, -1);   /* anchored by the capture table */
  }
  lua_settop(L, top + 1);
  ub_push_response(L, &t->resp, names, n);
  lua_remove(L, top + 1);
  if (t->hash && t->resp.status >= 200 && t->resp.status <= 299) {
    char hex[UNSB_SHA256_HEX_LEN + 1];
    if (unsb_filehash_finish(t->hash, hex) != 0)
      return luaL_error(L, "SHA-256 of %s failed (OpenSSL, or the file was cut short)", t->out_path);
    lua_pushstring(L, hex);
    lua_setfield(L, -2, "sha256");   /* of the bytes written to the file */
  }
  unsb_http_response_free(&t->resp);
  return 1;
}

/* t:result() -> resp | nil, kind, message, info (only once done) */
static int l_result(lua_State *L) {
  check_open(L);
  lua_settop(L, 1);
  return ub_transfer_push_result(L, 1);
}

/* t:timing() -> the transfer's timing so far (as a result's), or nil once
** closed: what a stream left early reports of itself. */
static int l_timing(lua_State *L) {
  ub_transfer *t = get(L, 1);
  unsb_http_timing timing;
  if (!t->x) return 0;
  unsb_http_timing_of(t->x, &timing);
  ub_push_timing(L, &timing);
  return 1;
}

static int l_tostring(lua_State *L) {
  ub_transfer *t = get(L, 1);
  if (t->x) lua_pushfstring(L, UB_TRANSFER " (%s)", unsb_http_done(t->x) ? "done" : "running");
  else lua_pushliteral(L, UB_TRANSFER " (closed)");
  return 1;
}

static const luaL_Reg METHODS[] = {
  {"step", l_step},
  {"result", l_result},
  {"timing", l_timing},
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
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -3, "Transfer");   /* core.loop.Transfer: the facade wraps step (tasks.lua) */
  lua_pop(L, 1);
}
