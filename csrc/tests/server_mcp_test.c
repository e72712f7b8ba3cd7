/*
** The MCP endpoint's protocol (cp/mcp/mcp.c, cp/mcp/tools.c) and the file
** operations' mapping (cp/workspaces/files.c) as pure functions: every check of
** §5.4 in its order, the messages of §5.5, the shell tool's argument
** rules, and how REST query strings and bodies become agent requests.
** The same functions answer real requests in the Control Plane specs.
*/
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "server/cp/workspaces/files.h"
#include "server/cp/mcp/mcp.h"
#include "tests/tap.h"

static const ux_mcp_headers good = { "2026-07-28", "tools/call", "shell",
                                     "application/json, text/event-stream" };

/* Plans a body given as text with headers h; returns the kind. */
static int plan(const ux_mcp_headers *h, const char *body, int *status, json_t **reply, ux_mcp_call *c) {
  return ux_mcp_plan(h, body, strlen(body), status, reply, c);
}

static long long err_code(const json_t *reply) {
  return json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static const char *err_msg(const json_t *reply) {
  const char *m = json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
  return m ? m : "";
}

/* A tools/call body for tool with arguments (JSON text). */
static char *call_body(const char *tool, const char *args) {
  char *b;
  if (asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":\"sandbox-client-1-abcdef\",\"method\":\"tools/call\","
               "\"params\":{\"name\":\"%s\",\"arguments\":%s},\"_meta\":{\"io.modelcontextprotocol/"
               "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/client\":{\"name\":"
               "\"sandbox-client\",\"version\":\"0.1.0\"}}}", tool, args) < 0) exit(1);
  return b;
}

/* Plans a shell call: the -32602 message, or "" with *c filled. */
static const char *shell(const char *args, const char *accept, ux_mcp_call *c) {
  static char msg[300];
  ux_mcp_headers h = good;
  h.accept = accept;
  char *b = call_body("shell", args);
  int status;
  json_t *reply;
  int kind = plan(&h, b, &status, &reply, c);
  free(b);
  snprintf(msg, sizeof msg, "%s", kind == UX_MCP_REPLY && err_code(reply) == UX_MCP_BAD_PARAMS &&
           status == 200 ? err_msg(reply) : kind == UX_MCP_CALL ? "" : "(unexpected)");
  json_decref(reply);
  return msg;
}

static void test_envelope(void) {
  int status;
  json_t *reply;
  ux_mcp_call c;
  char *big = malloc(64002);
  memset(big, ' ', 64001);
  big[64001] = '\0';
  memcpy(big, "{}", 2);
  ok(plan(&good, big, &status, &reply, &c) == UX_MCP_REPLY && status == 400 &&
     err_code(reply) == -32600 && json_is_null(json_object_get(reply, "id")), "64001 bytes: 400, -32600");
  json_decref(reply);
  free(big);
  const char *bad[] = { "{", "", "[1]", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}",
                        "{\"jsonrpc\":\"2.0\",\"id\":1}", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
                        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}",
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"x\"}", "\"\\u0000\"" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int kind = plan(&good, bad[i], &status, &reply, &c);
    ok(kind == UX_MCP_REPLY && status == 400 && err_code(reply) == -32600,
       "not a JSON-RPC request: 400, -32600 (%s: %s)", bad[i], err_msg(reply));
    json_decref(reply);
  }
  ok(plan(&good, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &status, &reply, &c)
     == UX_MCP_ACCEPTED && status == 202 && !reply, "a notification: 202, no body");
  ux_mcp_headers none = { NULL, NULL, NULL, NULL };
  ok(plan(&none, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{}}", &status,
          &reply, &c) == UX_MCP_REPLY && status == 200 &&
     !strcmp(json_string_value(json_object_get(json_object_get(reply, "result"), "protocolVersion")),
             "2024-11-05") && json_integer_value(json_object_get(reply, "id")) == 7,
     "initialize needs no version headers, answers 2024-11-05");
  json_decref(reply);
  ok(plan(&good, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":5}", &status, &reply,
          &c) == UX_MCP_REPLY && err_code(reply) == -32602, "params not an object: -32602");
  json_decref(reply);
}

static void test_versions(void) {
  const char *list = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\","
                     "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}";
  ux_mcp_headers h = { "2026-07-28", "tools/list", NULL, NULL };
  int status;
  json_t *reply;
  ux_mcp_call c;
  ok(plan(&h, list, &status, &reply, &c) == UX_MCP_REPLY && status == 200 &&
     json_array_size(json_object_get(json_object_get(reply, "result"), "tools")) == 6 &&
     !strcmp(json_string_value(json_object_get(reply, "id")), "a"), "tools/list: six tools");
  json_t *tools = json_object_get(json_object_get(reply, "result"), "tools");
  const char *names[] = { "shell", "file_read", "file_write", "file_edit", "file_glob", "file_grep" };
  int named = 1;
  for (size_t i = 0; i < 6; i++)
    named &= !strcmp(json_string_value(json_object_get(json_array_get(tools, i), "name")) ?: "", names[i]) &&
             json_is_object(json_object_get(json_array_get(tools, i), "inputSchema"));
  ok(named, "the wire tools in order, each with an input schema");
  json_decref(reply);
  struct { ux_mcp_headers h; const char *body, *why; } bad[] = {
    { { NULL, "tools/list", NULL, NULL }, list, "MCP-Protocol-Version" },
    { { "2025-06-18", "tools/list", NULL, NULL }, list, "MCP-Protocol-Version" },
    { { "2026-07-28", "tools/call", NULL, NULL }, list, "Mcp-Method" },
    { { "2026-07-28", NULL, NULL, NULL }, list, "Mcp-Method" },
    { h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "_meta" },
    { h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"_meta\":{\"io.modelcontextprotocol/"
         "protocolVersion\":\"2024-11-05\"}}", "_meta" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int kind = plan(&bad[i].h, bad[i].body, &status, &reply, &c);
    ok(kind == UX_MCP_REPLY && status == 200 && err_code(reply) == -32600 && strstr(err_msg(reply), bad[i].why),
       "mismatch: HTTP 200, -32600 (%s)", err_msg(reply));
    json_decref(reply);
  }
  ok(plan(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
              "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", &status, &reply, &c)
     == UX_MCP_REPLY && !json_object_get(reply, "error"), "params._meta is accepted too");
  json_decref(reply);
  ux_mcp_headers d = { "2026-07-28", "server/discover", NULL, NULL };
  ok(plan(&d, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"_meta\":{\"io."
              "modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}", &status, &reply, &c) == UX_MCP_REPLY &&
     !strcmp(json_string_value(json_object_get(json_object_get(reply, "result"), "protocolVersion")), "2026-07-28") &&
     !strcmp(json_string_value(json_object_get(json_object_get(json_object_get(reply, "result"), "serverInfo"),
                                               "version")), "0.4.0"), "server/discover: 2026-07-28, sandbox-shell 0.4.0");
  json_decref(reply);
  ux_mcp_headers u = { "2026-07-28", "resources/list", NULL, NULL };
  ok(plan(&u, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\",\"_meta\":{\"io."
              "modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}", &status, &reply, &c) == UX_MCP_REPLY &&
     status == 200 && err_code(reply) == -32601 && json_integer_value(json_object_get(reply, "id")) == 3,
     "an unknown method: -32601 with the request's id");
  json_decref(reply);
}

static void test_calls(void) {
  ux_mcp_call c;
  int status;
  json_t *reply;
  ux_mcp_headers h = good;
  h.name = "file_read";
  char *b = call_body("shell", "{\"command\":\"true\"}");
  ok(plan(&h, b, &status, &reply, &c) == UX_MCP_REPLY && err_code(reply) == -32600 &&
     strstr(err_msg(reply), "Mcp-Name"), "Mcp-Name differs from params.name: -32600");
  json_decref(reply);
  free(b);
  h.name = "rm_rf";
  b = call_body("rm_rf", "{}");
  ok(plan(&h, b, &status, &reply, &c) == UX_MCP_REPLY && err_code(reply) == -32602 &&
     strstr(err_msg(reply), "unknown tool"), "an unknown tool: -32602");
  json_decref(reply);
  free(b);
  h.name = "file_read";
  b = call_body("file_read", "{\"path\":\"src/a.txt\",\"offset\":2}");
  ok(plan(&h, b, &status, &reply, &c) == UX_MCP_CALL && !c.stream && c.timeout_ms == 45000 &&
     !strcmp(json_string_value(json_object_get(c.agent_req, "op")), "file_read") &&
     json_integer_value(json_object_get(c.agent_req, "offset")) == 2 && json_object_size(c.agent_req) == 3 &&
     !strcmp(c.tool, "file_read") && !strcmp(json_string_value(c.id), "sandbox-client-1-abcdef"),
     "file_read: the arguments as given, op file_read");
  ux_mcp_call_free(&c);
  free(b);
  b = call_body("file_read", "{\"path\":\"a\",\"op\":\"exec\"}");
  ok(plan(&h, b, &status, &reply, &c) == UX_MCP_REPLY && err_code(reply) == -32602, "an 'op' argument: -32602");
  json_decref(reply);
  free(b);
  b = call_body("file_read", "[1]");
  ok(plan(&h, b, &status, &reply, &c) == UX_MCP_REPLY && err_code(reply) == -32602,
     "arguments not an object: -32602");
  json_decref(reply);
  free(b);
}

static void test_shell(void) {
  ux_mcp_call c;
  const char *sse = "text/event-stream, application/json";
  ok(!strcmp(shell("{\"command\":\"ls\"}", NULL, &c), "") && !c.stream && c.timeout_ms == 45000 &&
     !strcmp(json_string_value(json_object_get(c.agent_req, "op")), "exec") &&
     json_integer_value(json_object_get(c.agent_req, "timeout_seconds")) == 30 &&
     json_object_size(c.agent_req) == 3, "exec is the default action, timeout 30");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"exec_stream\",\"command\":\"ls\",\"timeout_seconds\":5}", sse, &c), "") &&
     c.stream && json_is_true(json_object_get(c.agent_req, "stream")) && c.timeout_ms == 20000,
     "exec_stream with SSE accepted: streamed, the call's timeout is its own + 15 s");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"exec_stream\",\"command\":\"ls\"}", "application/json", &c), "") &&
     !c.stream && !json_object_get(c.agent_req, "stream"), "exec_stream without SSE: buffered");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"exec\",\"command\":\"ls\"}", sse, &c), "") && !c.stream,
     "exec is never streamed");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"session_exec\",\"session_id\":\"s.1_a-b\",\"command\":\"vi\","
                   "\"async\":true,\"timeout_seconds\":5}", sse, &c), "") && c.stream &&
     !strcmp(json_string_value(json_object_get(c.agent_req, "op")), "session_exec") &&
     json_is_true(json_object_get(c.agent_req, "async")), "session_exec: async passes, streamed");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"session_input\",\"session_id\":\"s\",\"input\":\"y\"}", NULL, &c), "") &&
     json_is_true(json_object_get(c.agent_req, "append_newline")) &&
     !json_object_get(c.agent_req, "command"), "session_input: append_newline defaults to true");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"session_wait\",\"session_id\":\"s\",\"timeout_seconds\":120}", NULL, &c), "") &&
     c.timeout_ms == 135000, "session_wait accepts 120 s");
  ux_mcp_call_free(&c);
  ok(!strcmp(shell("{\"action\":\"session_kill\",\"session_id\":\"s\"}", NULL, &c), "") &&
     json_object_size(c.agent_req) == 2, "session_kill: op and session_id only");
  ux_mcp_call_free(&c);
  char *cmd = malloc(8192 + 100);
  snprintf(cmd, 8192 + 100, "{\"command\":\"%08192d\"}", 0);
  ok(!strcmp(shell(cmd, NULL, &c), ""), "a command of 8192 bytes passes");
  ux_mcp_call_free(&c);
  snprintf(cmd, 8192 + 100, "{\"command\":\"%08193d\"}", 0);
  ok(strstr(shell(cmd, NULL, &c), "8192 bytes") != NULL, "8193 bytes: -32602");
  snprintf(cmd, 8192 + 100, "{\"action\":\"session_input\",\"session_id\":\"s\",\"input\":\"%08193d\"}", 0);
  ok(strstr(shell(cmd, NULL, &c), "8192 bytes") != NULL, "input of 8193 bytes: -32602");
  free(cmd);
}

/* Every rule of the shell's arguments, one refusal each. */
static void test_shell_bad(void) {
  ux_mcp_call c;
  struct { const char *args, *why; } bad[] = {
    { "{\"command\":\"ls\",\"cwd\":\"/\"}", "unknown argument 'cwd'" },
    { "{\"action\":\"rm\",\"command\":\"ls\"}", "action must be one of" },
    { "{\"action\":5,\"command\":\"ls\"}", "action must be a string" },
    { "{}", "command is required" }, { "{\"command\":5}", "command must be a string" },
    { "{\"command\":\"ls\",\"timeout_seconds\":31}", "1 to 30" },
    { "{\"command\":\"ls\",\"timeout_seconds\":0}", "1 to 30" },
    { "{\"command\":\"ls\",\"timeout_seconds\":\"5\"}", "integer" },
    { "{\"command\":\"ls\",\"timeout_seconds\":5.0}", "integer" },
    { "{\"action\":\"session_wait\",\"session_id\":\"s\",\"timeout_seconds\":121}", "1 to 120" },
    { "{\"action\":\"session_exec\",\"command\":\"ls\"}", "session_id is required" },
    { "{\"action\":\"session_exec\",\"session_id\":\"-s\",\"command\":\"ls\"}", "session_id must match" },
    { "{\"action\":\"session_exec\",\"session_id\":\"a b\",\"command\":\"ls\"}", "session_id must match" },
    { "{\"action\":\"session_exec\",\"session_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
      "\"command\":\"ls\"}", "session_id must match" },
    { "{\"action\":\"session_input\",\"session_id\":\"s\"}", "input is required" },
    { "{\"action\":\"session_input\",\"session_id\":\"s\",\"input\":\"x\",\"append_newline\":\"no\"}",
      "append_newline must be a boolean" },
    { "{\"action\":\"session_exec\",\"session_id\":\"s\",\"command\":\"x\",\"async\":1}", "async must be a boolean" },
    { "{\"action\":\"session_exec\",\"session_id\":\"s\\u0000x\",\"command\":\"x\"}", "session_id must match" },
    { "{\"action\":\"exec\\u0000x\",\"command\":\"x\"}", "action must be a string" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *m = shell(bad[i].args, NULL, &c);
    ok(strstr(m, bad[i].why) != NULL, "shell %s: -32602 (%s)", bad[i].args, m);
  }
}

/* NUL bytes: data in commands, never in names that are compared. */
static void test_nul(void) {
  ux_mcp_call c;
  int status;
  json_t *reply;
  ok(!strcmp(shell("{\"command\":\"a\\u0000b\"}", NULL, &c), "") &&
     json_string_length(json_object_get(c.agent_req, "command")) == 3,
     "a NUL in a command reaches the agent whole (which refuses it)");
  ux_mcp_call_free(&c);
  ux_mcp_headers h = { "2026-07-28", "tools/list", NULL, NULL };
  ok(plan(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\\u0000x\"}", &status, &reply, &c) ==
     UX_MCP_REPLY && status == 400 && err_code(reply) == -32600, "a NUL in the method: 400, -32600");
  json_decref(reply);
  char *b = call_body("shell\\u0000x", "{\"command\":\"true\"}");
  ok(plan(&good, b, &status, &reply, &c) == UX_MCP_REPLY && err_code(reply) == -32600,
     "a tool name cut by a NUL does not match Mcp-Name: -32600");
  json_decref(reply);
  free(b);
}

static void test_messages(void) {
  json_t *id = json_string("r-1");
  json_t *res = json_pack("{s:i, s:s}", "exit_code", 0, "stdout", "hi\n");
  json_t *msg = ux_mcp_tool_result(id, res, "sb-0123456789ab", "ws-0123456789ab", 2);
  json_t *result = json_object_get(msg, "result"), *sc = json_object_get(result, "structuredContent");
  json_t *text = json_loads(json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0),
                                                              "text")) ?: "", 0, NULL);
  ok(json_is_false(json_object_get(result, "isError")) && json_equal(text, sc) &&
     !strcmp(json_string_value(json_object_get(sc, "sandbox_id")), "sb-0123456789ab") &&
     !strcmp(json_string_value(json_object_get(sc, "workspace_id")), "ws-0123456789ab") &&
     json_integer_value(json_object_get(sc, "stream_chunks")) == 2 &&
     !strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0"),
     "tool result: content text = structuredContent, with ids and stream_chunks");
  json_decref(text);
  json_decref(msg);
  json_t *chunk = json_string("a\n");
  msg = ux_mcp_progress(id, 3, "stderr", chunk);
  size_t len;
  char *frame = ux_mcp_sse_frame(msg, &len);
  const char *want = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                     "\"params\":{\"progressToken\":\"r-1\",\"progress\":3,\"message\":\"a\\n\",\"_meta\":"
                     "{\"channel\":\"stderr\",\"sequence\":3}}}\n\n";
  ok(frame && len == strlen(want) && !strcmp(frame, want), "a progress frame, byte for byte");
  free(frame);
  json_decref(msg);
  json_decref(chunk);
  msg = ux_mcp_error(NULL, -32001, "all PTY sessions are busy");
  frame = ux_mcp_sse_frame(msg, &len);
  ok(frame && !strcmp(frame, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
                             "{\"code\":-32001,\"message\":\"all PTY sessions are busy\"}}\n\n"), "an error frame");
  free(frame);
  json_decref(msg);
  json_decref(id);
  ok(ux_mcp_code(UX_RTC_INVALID) == -32602 && ux_mcp_code(UX_RTC_BUSY) == -32001 &&
     ux_mcp_code(UX_RTC_INTERNAL) == -32603 && ux_mcp_code(UX_RTC_GONE) == -32603, "agent kinds to codes");
}

/* ---------------------------------------------------------------------
** files.c
** ------------------------------------------------------------------- */

static const char *q_path, *q_offset, *q_limit, *q_ci, *q_regex;
static const char *query(void *ctx, const char *name) {
  (void)ctx;
  if (!strcmp(name, "path")) return q_path;
  if (!strcmp(name, "offset")) return q_offset;
  if (!strcmp(name, "limit")) return q_limit;
  if (!strcmp(name, "case_insensitive")) return q_ci;
  if (!strcmp(name, "regex")) return q_regex;
  if (!strcmp(name, "junk")) return "x";
  return NULL;
}

static void test_files(void) {
  const char *map[][2] = { { "list", "file_list" }, { "read", "file_read" }, { "read-binary", "file_read_binary" },
                           { "glob", "file_glob" }, { "grep", "file_grep" }, { "write", "file_write" },
                           { "write-binary", "file_write_binary" }, { "edit", "file_edit" },
                           { "file_read", "file_read" }, { "file_grep", "file_grep" } };
  int all = 1;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) all &= !strcmp(ux_files_op(map[i][0]) ?: "", map[i][1]);
  ok(all && !ux_files_op("file_list") && !ux_files_op("delete") && !ux_files_op(NULL),
     "routes and tools map to agent ops; nothing else does");
  ok(ux_files_writes("write") && ux_files_writes("edit") && !ux_files_writes("read"), "which routes write");
  char err[200] = "";
  q_path = "src/a.txt"; q_offset = "3"; q_limit = "";
  json_t *req = ux_files_request("read", query, NULL, NULL, err, sizeof err);
  ok(req && json_object_size(req) == 3 && json_integer_value(json_object_get(req, "offset")) == 3 &&
     !json_object_get(req, "limit") && !json_object_get(req, "junk"),
     "read: listed keys only, integers converted, an empty value is absent");
  json_decref(req);
  const char *bad_ints[] = { "abc", "1e3", " 5", "5 ", "0x10", "99999999999999999999", "+" };
  for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
    q_offset = bad_ints[i];
    req = ux_files_request("read", query, NULL, NULL, err, sizeof err);
    ok(!req && !strcmp(err, "offset must be an integer"), "offset '%s': 400 (%s)", bad_ints[i], err);
  }
  q_offset = "-2";
  req = ux_files_request("read", query, NULL, NULL, err, sizeof err);
  ok(req && json_integer_value(json_object_get(req, "offset")) == -2, "a negative integer passes (the agent refuses it)");
  json_decref(req);
  const char *flags[][2] = { { "1", "t" }, { "true", "t" }, { "YES", "t" }, { "0", "f" }, { "no", "f" }, { "on", "f" } };
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    q_ci = flags[i][0];
    q_regex = flags[i][0];
    req = ux_files_request("grep", query, NULL, NULL, err, sizeof err);
    int want = flags[i][1][0] == 't';
    ok(req && json_is_boolean(json_object_get(req, "case_insensitive")) &&
       json_is_true(json_object_get(req, "case_insensitive")) == want &&
       json_is_true(json_object_get(req, "regex")) == want, "flag '%s' is %s", flags[i][0], want ? "true" : "false");
    json_decref(req);
  }
}

static void test_files_body(void) {
  char err[200] = "";
  json_t *req;
  json_t *body = json_pack("{s:s, s:s, s:i}", "path", "a", "content", "x", "mode", 7);
  req = ux_files_request("write", NULL, NULL, body, err, sizeof err);
  ok(req && json_object_size(req) == 3 && !json_object_get(req, "mode"), "write: path and content from the body");
  json_decref(req);
  ok(!ux_files_request("write", NULL, NULL, NULL, err, sizeof err), "write without a body: refused");
  ok(!ux_files_request("chmod", query, NULL, NULL, err, sizeof err), "an unknown route: refused");
  json_decref(body);
  json_t *e = ux_files_no_runtime("read", "ws-0123456789ab");
  char *s = json_dumps(e, JSON_COMPACT);
  ok(s && !strcmp(s, "{\"error\":\"read requires a running Runtime for ws-0123456789ab\","
                     "\"hint\":\"create a sandbox for this workspace first\"}"), "the 409 body");
  free(s);
  json_decref(e);
  int st[] = { ux_files_http_error(UX_RTC_INVALID, "path 'x': bad", &e), 0 };
  ok(st[0] == 400 && !strcmp(json_string_value(json_object_get(e, "error")), "path 'x': bad"), "invalid: 400, the message");
  json_decref(e);
  ok(ux_files_http_error(UX_RTC_GONE, "gone", &e) == 502 &&
     strstr(json_string_value(json_object_get(e, "error")), "internal service unavailable"), "gone: 502");
  json_decref(e);
  ok(ux_files_http_error(UX_RTC_TIMEOUT, "slow", &e) == 504, "timeout: 504");
  json_decref(e);
  ok(ux_files_http_error(UX_RTC_BUSY, "busy", &e) == 503, "busy: 503");
  json_decref(e);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_envelope();
  test_versions();
  test_calls();
  test_shell();
  test_shell_bad();
  test_nul();
  test_messages();
  test_files();
  test_files_body();
  return tap_done();
}
