/*
** luaopen_unsandbox_core: assembles the module from its parts. The only
** state is in the registry (the metatables); nothing is a C global, so two
** Lua states in one process never interfere. libcurl is initialised by
** the first client (unsb_http_new), not here: requiring the module does
** not load the network stack (csrc/lazy/lazy.h).
**
** Every function and constant is in one group by concern (GROUPS below,
** the one list of them): core.exec, core.cp, core.trace, core.rules,
** core.files, core.codec, core.loop, core.term. A group holds a function's
** returning form where it has one (a refused value is nil, why, arg;
** binding.h), which is what the facade calls. Each is also a field of the
** module itself under its own name, raising as lauxlib does: the flat
** names scripts and the specs of the binding call.
*/
#include "lua/binding.h"

#include "core/version.h"

/* the execution API's client, its signing, credentials, polls, languages */
static const char *const EXEC[] = {
  "client", "Client", "CLIENT_OPTIONS", "sign", "credentials", "poll_delay", "poll_tracker",
  "detect_language", "detect_shebang", "extensions", NULL,
};
/* the Control Plane's client, its identifiers and their shapes, MCP */
static const char *const CP[] = {
  "manager", "Manager", "MANAGER_OPTIONS", "sandbox", "Sandbox", "sse_parser",
  "acting_subject", "valid_subject", "session_id", "object_id", "shell_quote",
  "workspace_path", "form_encode", "is_object_call", "refresh_period", "valid_tenant",
  "valid_workspace_id", "valid_sandbox_id", "valid_template", "valid_checkpoint_id",
  "sandbox_name_check", "mcp_request_id", "mcp_progress_ok", "mcp_session_action",
  "mcp_valid_session_id", "MCP", NULL,
};
/* W3C trace context, shared by both clients */
static const char *const TRACE[] = {
  "new_traceparent", "parse_traceparent", "resolve_trace", "trace_from_request_id", NULL,
};
/* the shared request rules (core/validate.h) and the id rule */
static const char *const RULES[] = {
  "valid_id", "env_name_check", "env_check", "relpath_check", "paths_conflict", "url_check",
  "blank", "LIMITS", "MAX_CONCURRENCY", NULL,
};
static const char *const FILES[] = {
  "file_head", "cache_read", "cache_write", "write_file", "mkdirs", "read_dir", "sha256_file", NULL,
};
static const char *const CODEC[] = {"base64_encode", "base64_decode", "sha256", "sha256_stream",
                                      NULL};
/* the event loop, its transfers, tasks, clocks and the interrupt flag */
static const char *const LOOP[] = {
  "Transfer", "task_thread", "loop_step", "loop_pollfds", "loop_abort", "loop_stats", "park", "unpark",
  "can_yield", "YIELD", "sleep", "now", "monotonic_ms", "monotonic_us", "interrupt",
  "interrupt_take", NULL,
};
/* a session's terminal and the tty helpers of `un session attach` */
static const char *const TERM[] = {
  "terminal_open", "Terminal", "TERMINAL_MAX_SIZE", "tty_size", "tty_raw", "tty_restore",
  "tty_signals", "tty_signal_take", "fd_read", "fd_write", "isatty", NULL,
};

static const ub_group_decl GROUPS[] = {
  {"exec", EXEC}, {"cp", CP}, {"trace", TRACE}, {"rules", RULES}, {"files", FILES},
  {"codec", CODEC}, {"loop", LOOP}, {"term", TERM}, {NULL, NULL},
};

/* the one exported symbol; its caller is require, which has no header */
LUAMOD_API int luaopen_unsandbox_core(lua_State *L);

LUAMOD_API int luaopen_unsandbox_core(lua_State *L) {
  luaL_checkversion(L);
  lua_newtable(L);
  ub_open_loop(L);                 /* before anything makes a Client or Manager */
  ub_open_functions(L);
  ub_open_files(L);
  ub_open_hasher(L);
  ub_open_tracker(L);
  ub_open_client(L);
  ub_open_cp_functions(L);
  ub_open_sse_parser(L);
  ub_open_manager(L);
  ub_open_transfer(L);
  ub_open_sandbox(L);
  ub_open_validate(L);
  ub_open_terminal(L);
  ub_open_tty(L);
  lua_pushliteral(L, UNSB_VERSION);
  lua_setfield(L, -2, "VERSION");
  ub_make_groups(L, GROUPS);
  return 1;
}
