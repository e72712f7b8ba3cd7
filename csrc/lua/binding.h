/*
** Shared helpers of the unsandbox.core binding. The binding marshals only:
** argument checks that name the argument, core calls, and results pushed
** as Lua values. Expected failures are returned as nil, kind, message.
**
** A value the core refuses (a short salt, a path outside /workspace, a bad
** URL) is reported two ways by the same code (ub_mode): the flat function
** (core.acting_subject) raises it as lauxlib does, "bad argument #n to
** 'f' (reason)", for scripts that call the binding themselves; the form in
** the function's group (core.cp.acting_subject) returns nil, reason, arg,
** which the facade raises through check.lua at its caller's line. Which
** argument it was comes from the core (unsb_error.arg), never from the
** message. A wrong type raises in both forms: the facade checks types
** before it calls.
*/
#ifndef UNSB_BINDING_H
#define UNSB_BINDING_H

#include <stddef.h>

#include "lua/compat.h"

#include "core/client.h"
#include "core/cpclient.h"
#include "core/loop.h"
#include "core/credentials.h"
#include "core/error.h"
#include "core/http.h"

#define UB_CLIENT "unsandbox.Client"
#define UB_TRACKER "unsandbox.PollTracker"
#define UB_SSE "unsandbox.SseParser"
#define UB_BOX "unsandbox.Box"
#define UB_MANAGER "unsandbox.Manager"
#define UB_TRANSFER "unsandbox.Transfer"
#define UB_SANDBOX "unsandbox.Sandbox"
#define UB_LOOP "unsandbox.Loop"

/* The Client (client.c) and Manager (manager.c) userdata. Both start
** with their core pointer, NULL once closed: a Transfer tells whether its
** owner is still open by that alone. User values: 1 the facade's state
** table (hooks, retry policy). */
typedef struct {
  unsb_client *c;   /* NULL = closed */
} ub_client;

typedef struct {
  unsb_cp *c;    /* NULL = closed */
} ub_manager;

/* How a refused value is reported: raised, or returned as nil, why, arg. */
typedef enum { UB_RAISE = 0, UB_RETURN = 1 } ub_mode;

/* A value refused: UB_RAISE raises "bad argument #arg to 'f' (why)" (arg
** UNSB_ARG_ENV: why alone, since no argument was wrong); UB_RETURN pushes
** nil, why, arg (the integer, or "env") and returns 3. Out of memory
** (UNSB_ENOMEM) raises in both. */
int ub_bad_value(lua_State *L, ub_mode mode, int arg, const char *why);
/* The same for a core failure: validation as ub_bad_value(err->arg, or
** arg when the core named none), memory raises, anything else raises
** its message. */
int ub_bad_error(lua_State *L, ub_mode mode, int arg, const unsb_error *err);

/* The two entry points of f(L, mode): l_<f> (UB_RAISE) and r_<f> (UB_RETURN). */
#define UB_BOTH(f) \
  static int l_##f(lua_State *L) { return f(L, UB_RAISE); } \
  static int r_##f(lua_State *L) { return f(L, UB_RETURN); }

/* Registers fns into the module table on top of the stack, and returning
** (NULL, or the returning forms of some of them, by the same names) where
** ub_make_groups finds them. */
void ub_register(lua_State *L, const luaL_Reg *fns, const luaL_Reg *returning);
/* The module table's groups (module.c declares which names each holds):
** core[group][name] is the returning form of name when there is one, else
** core[name]. */
typedef struct {
  const char *group;
  const char *const *names;   /* NULL-terminated */
} ub_group_decl;
void ub_make_groups(lua_State *L, const ub_group_decl *groups);
/* A NULL-terminated list of names as a set {name = true} on the stack. */
void ub_push_names(lua_State *L, const char *const *names);

/* Raises "bad argument #arg to 'f' (name: <what> expected, got <type>)"
** about the value at stack index idx. */
int ub_type_error(lua_State *L, int arg, int idx, const char *name, const char *what);

/* A string argument (no number coercion). */
const char *ub_check_string(lua_State *L, int arg, const char *name, size_t *len);
/* An optional string argument: NULL for nil/none. */
const char *ub_opt_string(lua_State *L, int arg, const char *name, size_t *len);
/* A number of milliseconds (integer or float, rounded up), >= min. */
lua_Integer ub_check_ms(lua_State *L, int arg, const char *name, lua_Integer min);

/* Raises when the table at t has a key not in allowed (NULL-terminated). */
void ub_check_keys(lua_State *L, int t, int arg, const char *const *allowed);

/* Fields of the options table at t (argument arg); nil/absent = default.
** The strings stay valid while the table is alive and unchanged. */
const char *ub_field_string(lua_State *L, int t, int arg, const char *field, size_t *len);
lua_Integer ub_field_ms(lua_State *L, int t, int arg, const char *field, lua_Integer dflt);
lua_Integer ub_field_count(lua_State *L, int t, int arg, const char *field, lua_Integer dflt);

/* Fills credential options from the table at t (public_key, secret_key,
** account, home, cwd, env) with the process environment as default. */
void ub_cred_opts(lua_State *L, int t, int arg, unsb_cred_opts *o);

/* Pushes nil, kind, message; returns 3. A validation error that names an
** input (err->arg) also pushes {arg = n} (or "env"): returns 4. Out of
** memory (UNSB_ENOMEM) is not an expected failure: it raises, as lauxlib
** does. */
int ub_push_error(lua_State *L, const unsb_error *err);

/* A slot for one malloc'd result of a core call, made BEFORE the call: a
** userdata whose __gc frees what it holds, left on the stack. So a Lua
** error while the result is pushed (out of memory) leaks nothing.
** ub_box_push (the box on top of the stack) pushes *box as a string in
** its place and frees it. */
char **ub_box_new(lua_State *L);
void ub_box_push(lua_State *L, char **box, size_t len);

/* A box for a C resource that is more than one string (cbox.c): size
** zeroed bytes inside a userdata left on the stack, whose __gc runs
** cleanup(obj) once. Make it before the core call that fills obj; then a
** Lua error while results are pushed still frees (and wipes) it.
** ub_cbox_done runs the cleanup now and removes the box at idx. */
typedef void (*ub_cleanup)(void *obj);
void *ub_cbox_new(lua_State *L, size_t size, ub_cleanup cleanup);
void ub_cbox_done(lua_State *L, int idx);

/* Registration of each part into the module table at the top. */
void ub_open_functions(lua_State *L);
void ub_open_files(lua_State *L);
void ub_open_hasher(lua_State *L);
void ub_open_tracker(lua_State *L);
void ub_open_client(lua_State *L);
void ub_open_cp_functions(lua_State *L);
/* core.form_encode(t[, max_len]) (cp_form.c) and its returning form,
** registered by cp_functions.c */
int ub_form_encode(lua_State *L);
int ub_form_encode_returning(lua_State *L);
void ub_open_sse_parser(lua_State *L);
void ub_open_manager(lua_State *L);
void ub_open_transfer(lua_State *L);
void ub_open_sandbox(lua_State *L);

/* The open Manager's client at idx, or raises (closed, wrong type). */
unsb_cp *ub_manager_check(lua_State *L, int idx);
/* manager.c's lease methods (manager_lease.c) into the table on top. */
void ub_lease_methods(lua_State *L);

/* ---- the event loop and tasks (loop.c) ---- */
void ub_open_loop(lua_State *L);
/* The state's loop, shared by every Client and Manager made in it. */
unsb_loop *ub_loop(lua_State *L);
/* 1 when the running thread is a task's (core.task_thread) and may yield:
** never while the binding calls Lua code itself (ub_call_lua). */
int ub_task_can_yield(lua_State *L);
/* lua_pcall for the binding's own calls into Lua (a __close that runs
** the facade's release): calls inside it block rather than wait as a
** task, since no C frame can be suspended (5.4 and LuaJIT know this by
** lua_isyieldable; 5.1 has no such question, so it is said here). */
int ub_call_lua(lua_State *L, int nargs, int nresults);
/* A new token that wakes the running thread, which waits on the value at
** obj_idx (a Transfer), or with obj_idx 0 on a timer of that token: what
** cancelling the task ends. */
unsb_token ub_wait(lua_State *L, int obj_idx);
/* The running thread no longer waits on anything. */
void ub_wait_done(lua_State *L);
/* How a call inside a task waits: returns core.YIELD, k and the nargs
** values on top of the stack. The facade (tasks.lua) yields to the
** scheduler and, once the loop woke the thread, calls k(values...): the
** call goes on there (k may wait again). The binding never yields from
** C, so this works on every Lua the binding is built for. */
int ub_yield(lua_State *L, lua_CFunction k, int nargs);

/* ---- transfers (transfer.c) and buffered calls (exchange.c) ---- */
enum { UB_XFER_BUFFER = 0, UB_XFER_SSE = 1, UB_XFER_RAW = 2, UB_XFER_FILE = 3 };
typedef struct ub_transfer ub_transfer;
/* A new Transfer, not yet open, pushed: owned by the Client or Manager at
** owner_idx, sending the body at body_idx, keeping opts.capture of the
** table at opts_idx (if it is one). */
ub_transfer *ub_transfer_new(lua_State *L, int owner_idx, int body_idx, int opts_idx, int mode);
/* Its stream callbacks for the core's open (NULL for a buffered call). */
const unsb_http_stream *ub_transfer_stream(ub_transfer *t);
/* Mode file: a 2xx body goes to path, created here (O_EXCL | O_NOFOLLOW),
** hashed on the way (the result's sha256). 0, or -1 with err (io). */
int ub_transfer_to_file(ub_transfer *t, const char *path, unsb_error *err);
/* The request body from the regular file at path (its fd in *fd, its
** size in *len), kept open by the transfer. 0, or -1 with err (io). */
int ub_transfer_from_file(ub_transfer *t, const char *path, int *fd, int64_t *len,
                          unsb_error *err);
void ub_transfer_set(ub_transfer *t, unsb_http_xfer *x);
/* The core transfer of the Transfer at idx; NULL once it or its owner closed. */
unsb_http_xfer *ub_transfer_xfer(lua_State *L, int idx);
/* The running thread waits for the Transfer at idx (ub_wait + notify). */
void ub_transfer_watch(lua_State *L, int idx);
int ub_transfer_close(lua_State *L, int idx);
/* Pushes the response table (with timing), or nil, kind, message, info. */
int ub_transfer_push_result(lua_State *L, int idx);
/* Waits for the Transfer at idx (yielding in a task, else blocking),
** pushes its result as ub_transfer_push_result does, and closes it. */
int ub_transfer_finish(lua_State *L, int tidx);
/* {queue_ms, ..., total_ms, bytes_in, bytes_out, ...} */
void ub_push_timing(lua_State *L, const unsb_http_timing *t);
/* nil, kind, message, {timing=, sent=}; raises for ENOMEM. Returns 4. */
int ub_push_failure(lua_State *L, const unsb_error *err, const unsb_http_timing *t);
/* (method, path, body, opts) at 2..5 into call; names has room for
** UNSB_HTTP_CAPTURE_MAX header names (cp_call.c). */
void ub_cp_call_args(lua_State *L, unsb_cp_call *call, const char **names);
/* The response table of _request and Transfer:result(). */
void ub_push_response(lua_State *L, const unsb_http_response *resp, const char **names,
                      size_t n_names);
void ub_open_validate(lua_State *L);
/* A session's terminal (terminal.c) and the tty helpers of `un session
** attach` (tty.c). */
void ub_open_terminal(lua_State *L);
void ub_open_tty(lua_State *L);

#endif
