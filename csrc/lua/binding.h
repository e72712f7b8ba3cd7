/*
** Shared helpers of the unsandbox.core binding. The binding marshals only:
** argument checks that name the argument, core calls, and results pushed
** as Lua values. Expected failures are returned as nil, kind, message;
** misuse raises.
*/
#ifndef UNSB_BINDING_H
#define UNSB_BINDING_H

#include <stddef.h>

#include <lua.h>
#include <lauxlib.h>

#include "core/cpclient.h"
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

/* The Manager userdata (manager.c); other files check it is open. */
typedef struct {
  unsb_cp *c;    /* NULL = closed */
} ub_manager;

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

/* Pushes nil, kind, message; returns 3. Out of memory (UNSB_ENOMEM) is
** not an expected failure: it raises, as lauxlib does. */
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
void ub_open_tracker(lua_State *L);
void ub_open_client(lua_State *L);
void ub_open_cp_functions(lua_State *L);
/* core.form_encode(t[, max_len]) (cp_form.c), registered by cp_functions.c */
int ub_form_encode(lua_State *L);
void ub_open_sse_parser(lua_State *L);
void ub_open_manager(lua_State *L);
void ub_open_transfer(lua_State *L);
void ub_open_sandbox(lua_State *L);

/* The open Manager's client at idx, or raises (closed, wrong type). */
unsb_cp *ub_manager_check(lua_State *L, int idx);
/* manager.c's lease methods (manager_lease.c) into the table on top. */
void ub_lease_methods(lua_State *L);
/* m:_open (transfer.c). */
int ub_transfer_open(lua_State *L);
/* (method, path, body, opts) at 2..5 into call; names has room for
** UNSB_HTTP_CAPTURE_MAX header names (cp_call.c). */
void ub_cp_call_args(lua_State *L, unsb_cp_call *call, const char **names);
/* The response table of _request and Transfer:result(). */
void ub_push_response(lua_State *L, const unsb_http_response *resp, const char **names,
                      size_t n_names);
void ub_open_validate(lua_State *L);

#endif
