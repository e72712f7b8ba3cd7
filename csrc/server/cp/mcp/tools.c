/*
** The MCP tools (see mcp.h): their descriptions for tools/list, and each
** call's arguments turned into one request for the runtime's agent. The
** shell tool is checked here, completely (§5.4: known keys only, its
** action, session id shape, timeouts, sizes), because its arguments are
** rearranged into several agent ops; the file tools go through files.h,
** the mapping the REST routes use, and the agent checks them.
*/
#include "server/cp/mcp/mcp.h"

#include <stdio.h>
#include <string.h>

#include "core/mcp.h"
#include "server/cp/workspaces/files.h"

#define SHELL_TEXT_MAX   8192     /* command and input, bytes */
#define CALL_MARGIN_MS   15000    /* beyond the tool's own timeout */
#define FILE_CALL_MS     45000

/* ---------------------------------------------------------------------
** tools/list
** ------------------------------------------------------------------- */

static json_t *tool(const char *name, const char *description, json_t *props, const char *req1,
                    const char *req2, const char *req3) {
  json_t *required = json_array();
  const char *req[] = { req1, req2, req3 };
  for (int i = 0; i < 3 && required; i++)
    if (req[i]) json_array_append_new(required, json_string(req[i]));
  return json_pack("{s:s, s:s, s:{s:s, s:o, s:o, s:b}}", "name", name, "description", description,
                   "inputSchema", "type", "object", "properties", props, "required", required,
                   "additionalProperties", 0);
}

static json_t *shell_tool(void) {
  return tool("shell",
    "Run a command in the sandbox with bash (cwd /workspace): exec, exec_stream (output streamed "
    "as progress notifications), or a PTY session (session_exec, session_wait, session_input, "
    "session_kill).",
    json_pack("{s:{s:s, s:[s,s,s,s,s,s]}, s:{s:s, s:i}, s:{s:s, s:s}, s:{s:s, s:i},"
              " s:{s:s}, s:{s:s}, s:{s:s, s:i, s:i}}",
              "action", "type", "string", "enum", "exec", "exec_stream", "session_exec",
              "session_wait", "session_input", "session_kill",
              "command", "type", "string", "maxLength", SHELL_TEXT_MAX,
              "session_id", "type", "string", "pattern", "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
              "input", "type", "string", "maxLength", SHELL_TEXT_MAX,
              "append_newline", "type", "boolean", "async", "type", "boolean",
              "timeout_seconds", "type", "integer", "minimum", 1, "maximum", 120),
    NULL, NULL, NULL);
}

json_t *ux_mcp_tools_list(void) {
  json_t *str = json_pack("{s:s}", "type", "string");
  json_t *list = json_pack("{s:[o, o, o, o, o, o]}", "tools", shell_tool(),
    tool("file_read", "Read a UTF-8 text file of /workspace by lines.",
         json_pack("{s:O, s:{s:s, s:i}, s:{s:s, s:i}}", "path", str, "offset", "type", "integer",
                   "minimum", 1, "limit", "type", "integer", "minimum", 0), "path", NULL, NULL),
    tool("file_write", "Write a UTF-8 text file (atomically, parents created).",
         json_pack("{s:O, s:O}", "path", str, "content", str), "path", "content", NULL),
    tool("file_edit", "Replace the one occurrence of old with new in a file.",
         json_pack("{s:O, s:O, s:O}", "path", str, "old", str, "new", str), "path", "old", "new"),
    tool("file_glob", "Find files by pattern, newest first.",
         json_pack("{s:O, s:O, s:{s:s, s:i}}", "path", str, "pattern", str, "limit", "type",
                   "integer", "minimum", 0), "pattern", NULL, NULL),
    tool("file_grep", "Search file contents (literal, or POSIX extended regex).",
         json_pack("{s:O, s:O, s:O, s:{s:s, s:[s,s,s]}, s:{s:s}, s:{s:s, s:i, s:i}, s:{s:s},"
                   " s:{s:s, s:i}}", "path", str, "pattern", str, "glob", str,
                   "mode", "type", "string", "enum", "files_with_matches", "content", "count",
                   "case_insensitive", "type", "boolean", "context", "type", "integer", "minimum", 0,
                   "maximum", 5, "regex", "type", "boolean", "limit", "type", "integer", "minimum", 0),
         "pattern", NULL, NULL));
  json_decref(str);
  return list;
}

/* ---------------------------------------------------------------------
** shell
** ------------------------------------------------------------------- */

static const char *const shell_keys[] = {
  "action", "command", "session_id", "input", "append_newline", "async", "timeout_seconds", NULL,
};

/* A string argument: 0 and *out (NULL when absent and not required), or -1. */
static int text_arg(const json_t *args, const char *key, int required, const char **out,
                    size_t *len, char *err, size_t errlen) {
  const json_t *v = json_object_get(args, key);
  *out = NULL;
  if (!v && !required) return 0;
  if (!json_is_string(v)) {
    snprintf(err, errlen, v ? "%s must be a string" : "%s is required", key);
    return -1;
  }
  *out = json_string_value(v);
  if (len) *len = json_string_length(v);
  return 0;
}

static int bool_arg(const json_t *args, const char *key, char *err, size_t errlen) {
  const json_t *v = json_object_get(args, key);
  if (v && !json_is_boolean(v)) { snprintf(err, errlen, "%s must be a boolean", key); return -1; }
  return 0;
}

/* Checks everything but the action-specific requirements. */
static int shell_common(const json_t *args, const char *action, long *timeout, char *err, size_t errlen) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)args, key, v) {
    int known = 0;
    for (const char *const *k = shell_keys; *k && !known; k++) known = !strcmp(*k, key);
    if (!known) { snprintf(err, errlen, "unknown argument '%.100s' for shell", key); return -1; }
  }
  if (bool_arg(args, "append_newline", err, errlen) || bool_arg(args, "async", err, errlen)) return -1;
  long hi = !strcmp(action, "session_wait") ? 120 : 30;
  v = json_object_get(args, "timeout_seconds");
  *timeout = 30;
  if (v && (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > hi)) {
    snprintf(err, errlen, "timeout_seconds must be an integer from 1 to %ld for %s", hi, action);
    return -1;
  }
  if (v) *timeout = (long)json_integer_value(v);
  return 0;
}

/* The agent request of a shell call. */
static json_t *shell_request(const json_t *args, const char *action, long timeout, char *err, size_t errlen) {
  const char *cmd = NULL, *sid = NULL, *input = NULL;
  size_t cmd_len = 0, input_len = 0, sid_len = 0;
  int needs_cmd = !strcmp(action, "exec") || !strcmp(action, "exec_stream") || !strcmp(action, "session_exec");
  int session = !strncmp(action, "session_", 8), is_input = !strcmp(action, "session_input");
  if (text_arg(args, "command", needs_cmd, &cmd, &cmd_len, err, errlen) ||
      text_arg(args, "session_id", session, &sid, &sid_len, err, errlen) ||
      text_arg(args, "input", is_input, &input, &input_len, err, errlen)) return NULL;
  if (cmd && cmd_len > SHELL_TEXT_MAX) { snprintf(err, errlen, "command must be at most 8192 bytes"); return NULL; }
  if (input && input_len > SHELL_TEXT_MAX) { snprintf(err, errlen, "input must be at most 8192 bytes"); return NULL; }
  if (session && !unsb_mcp_valid_session_id(sid, sid_len)) {
    snprintf(err, errlen, "session_id must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
    return NULL;
  }
  const char *op = session ? action : "exec";
  json_t *req = json_pack("{s:s}", "op", op);
  if (!req) return NULL;
  if (session) json_object_set_new(req, "session_id", json_stringn(sid, sid_len));
  if (needs_cmd) json_object_set_new(req, "command", json_stringn(cmd, cmd_len));
  if (is_input) {
    json_object_set_new(req, "input", json_stringn(input, input_len));
    json_object_set(req, "append_newline", json_object_get(args, "append_newline") ?: json_true());
  }
  if (!strcmp(action, "session_exec") && json_object_get(args, "async"))
    json_object_set(req, "async", json_object_get(args, "async"));
  if (strcmp(action, "session_kill") != 0) json_object_set_new(req, "timeout_seconds", json_integer(timeout));
  return req;
}

static int shell(const json_t *args, int sse, json_t **req, int *stream, int *timeout_ms,
                 char *err, size_t errlen) {
  const json_t *a = json_object_get(args, "action");
  const char *action = json_string_value(a);
  if (a && (!action || strlen(action) != json_string_length(a))) {
    snprintf(err, errlen, "action must be a string");
    return -1;
  }
  if (!action) action = "exec";
  static const char *const actions[] = { "exec", "exec_stream", "session_exec", "session_wait",
                                         "session_input", "session_kill", NULL };
  int known = 0;
  for (const char *const *k = actions; *k && !known; k++) known = !strcmp(*k, action);
  if (!known) {
    snprintf(err, errlen, "action must be one of exec, exec_stream, session_exec, session_wait, "
             "session_input, session_kill");
    return -1;
  }
  long timeout;
  if (shell_common(args, action, &timeout, err, errlen) != 0) return -1;
  if (!(*req = shell_request(args, action, timeout, err, errlen))) return -1;
  *stream = sse && strcmp(action, "exec") != 0;
  if (*stream) json_object_set_new(*req, "stream", json_true());
  *timeout_ms = (int)timeout * 1000 + CALL_MARGIN_MS;
  return 0;
}

int ux_mcp_tool_request(const char *name, const json_t *args, int sse, json_t **req, int *stream,
                        int *timeout_ms, char *err, size_t errlen) {
  *req = NULL;
  *stream = 0;
  *timeout_ms = FILE_CALL_MS;
  json_t *empty = NULL;
  if (!args) args = empty = json_object();
  int rc;
  if (!json_is_object(args)) {
    snprintf(err, errlen, "params.arguments must be an object");
    rc = -1;
  } else if (!strcmp(name, "shell")) {
    rc = shell(args, sse, req, stream, timeout_ms, err, errlen);
  } else if (unsb_mcp_known_tool(name)) {
    rc = (*req = ux_files_tool_request(name, args, err, errlen)) ? 0 : -1;
  } else {
    snprintf(err, errlen, "unknown tool: %.100s", name);
    rc = -1;
  }
  json_decref(empty);
  if (rc == 0 && !*req) { snprintf(err, errlen, "out of memory"); rc = -1; }
  return rc;
}
