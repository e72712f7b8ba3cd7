/*
** JSON-RPC 2.0 of the MCP endpoint (see mcp.h). The order of the checks
** is the contract: size and JSON first (HTTP 400: nothing can be answered
** in JSON-RPC terms), then the envelope, notifications (202), the legacy
** initialize (no version checks), then the four header and _meta checks
** (-32600 with HTTP 200), then the method. Messages are built here only,
** so every answer of the endpoint has one shape.
*/
#include "server/cp/mcp/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cp/workspaces/files.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"

/* ---------------------------------------------------------------------
** Messages
** ------------------------------------------------------------------- */

static json_t *id_value(const json_t *id) { return id ? json_incref((json_t *)id) : json_null(); }

json_t *ux_mcp_error(const json_t *id, int code, const char *message) {
  return json_pack("{s:s, s:o, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id_value(id),
                   "error", "code", code, "message", message ? message : "");
}

json_t *ux_mcp_response(const json_t *id, json_t *result) {
  if (!result) return NULL;
  return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", id_value(id), "result", result);
}

json_t *ux_mcp_tool_result(const json_t *id, json_t *result, const char *sb, const char *ws,
                           long stream_chunks) {
  if (!json_is_object(result) || json_object_set_new(result, "sandbox_id", json_string(sb)) ||
      json_object_set_new(result, "workspace_id", json_string(ws)) ||
      (stream_chunks >= 0 && json_object_set_new(result, "stream_chunks", json_integer(stream_chunks)))) {
    json_decref(result);
    return NULL;
  }
  char *text = json_dumps(result, JSON_COMPACT);
  json_t *r = text ? json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                               "structuredContent", result, "isError", 0)
                   : NULL;
  if (!text) json_decref(result);
  free(text);
  return ux_mcp_response(id, r);
}

json_t *ux_mcp_progress(const json_t *id, long seq, const char *channel, const json_t *chunk) {
  return json_pack("{s:s, s:s, s:{s:o, s:i, s:O, s:{s:s, s:i}}}", "jsonrpc", "2.0",
                   "method", "notifications/progress", "params", "progressToken", id_value(id),
                   "progress", (json_int_t)seq, "message", chunk, "_meta", "channel", channel,
                   "sequence", (json_int_t)seq);
}

char *ux_mcp_sse_frame(const json_t *msg, size_t *len) {
  char *data = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
  if (!data) return NULL;
  static const char head[] = "event: message\ndata: ";
  size_t dlen = strlen(data), n = sizeof head - 1 + dlen + 2;
  char *out = malloc(n + 1);
  if (out) {
    memcpy(out, head, sizeof head - 1);
    memcpy(out + sizeof head - 1, data, dlen);
    memcpy(out + n - 2, "\n\n", 3);
    *len = n;
  }
  free(data);
  return out;
}

int ux_mcp_code(int rtc) {
  switch (rtc) {
  case UX_RTC_INVALID: return UX_MCP_BAD_PARAMS;
  case UX_RTC_BUSY: return UX_MCP_BUSY;
  default: return UX_MCP_INTERNAL;
  }
}

/* ---------------------------------------------------------------------
** Plan
** ------------------------------------------------------------------- */

static int answer(int *status, json_t **reply, int http, json_t *msg) {
  *status = http;
  *reply = msg;
  return UX_MCP_REPLY;
}

static json_t *server_info(const char *version) {
  return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion", version,
                   "capabilities", "tools", "listChanged", 0,
                   "serverInfo", "name", UX_MCP_SERVER_NAME, "version", UX_MCP_SERVER_VER);
}

static int same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* A string value without NUL bytes (bodies may carry them: \u0000 is
** valid JSON, and commands and inputs may hold one), else NULL: names
** that are compared must never be cut short by a NUL. */
static const char *text(const json_t *v) {
  const char *s = json_string_value(v);
  return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* The _meta protocol version: top-level _meta (the platform's SDK), or
** params._meta (other MCP clients). */
static const char *meta_version(const json_t *doc) {
  const json_t *meta = json_object_get(doc, "_meta");
  if (!meta) meta = json_object_get(json_object_get(doc, "params"), "_meta");
  return text(json_object_get(meta, META_VERSION));
}

/* The four checks of §5.4; NULL when they pass, else the message. */
static const char *header_mismatch(const ux_mcp_headers *h, const json_t *doc, const char *method) {
  if (!same(h->version, UX_MCP_VERSION)) return "MCP-Protocol-Version header must be " UX_MCP_VERSION;
  if (!same(meta_version(doc), UX_MCP_VERSION))
    return "_meta." META_VERSION " must be " UX_MCP_VERSION;
  if (!same(h->method, method)) return "Mcp-Method header does not match the request method";
  if (!strcmp(method, "tools/call") &&
      !same(h->name, text(json_object_get(json_object_get(doc, "params"), "name"))))
    return "Mcp-Name header does not match the tool name";
  return NULL;
}

/* tools/call: the tool's agent request, or a -32602 reply. */
static int plan_call(const ux_mcp_headers *h, json_t *doc, const json_t *id, int *status,
                     json_t **reply, ux_mcp_call *call) {
  const json_t *params = json_object_get(doc, "params");
  const char *tool = text(json_object_get(params, "name"));
  const json_t *args = json_object_get(params, "arguments");
  char err[300];
  if (!tool) return answer(status, reply, 200, ux_mcp_error(id, UX_MCP_BAD_PARAMS, "params.name must be a string"));
  int sse = h->accept && strstr(h->accept, "text/event-stream") != NULL;
  if (ux_mcp_tool_request(tool, args, sse, &call->agent_req, &call->stream, &call->timeout_ms,
                          err, sizeof err) != 0)
    return answer(status, reply, 200, ux_mcp_error(id, UX_MCP_BAD_PARAMS, err));
  call->doc = json_incref(doc);
  call->id = id;
  call->tool = tool;
  return UX_MCP_CALL;
}

/* The envelope: NULL when it is a request or notification, else why not. */
static const char *bad_envelope(const json_t *doc) {
  if (!json_is_object(doc)) return "request body must be a JSON-RPC request object";
  if (!same(text(json_object_get(doc, "jsonrpc")), "2.0")) return "jsonrpc must be \"2.0\"";
  if (!text(json_object_get(doc, "method"))) return "method must be a string without NUL";
  const json_t *id = json_object_get(doc, "id");
  if (id && !json_is_string(id) && !json_is_integer(id)) return "id must be a string or an integer";
  return NULL;
}

static int plan_doc(const ux_mcp_headers *h, json_t *doc, int *status, json_t **reply,
                    ux_mcp_call *call) {
  const char *why = bad_envelope(doc);
  if (why) return answer(status, reply, 400, ux_mcp_error(NULL, UX_MCP_BAD_REQUEST, why));
  const char *method = text(json_object_get(doc, "method"));
  const json_t *id = json_object_get(doc, "id"), *params = json_object_get(doc, "params");
  if (!id) { *status = 202; return UX_MCP_ACCEPTED; }     /* a notification */
  if (params && !json_is_object(params))
    return answer(status, reply, 200, ux_mcp_error(id, UX_MCP_BAD_PARAMS, "params must be an object"));
  if (!strcmp(method, "initialize"))
    return answer(status, reply, 200, ux_mcp_response(id, server_info(UX_MCP_LEGACY)));
  if ((why = header_mismatch(h, doc, method)))
    return answer(status, reply, 200, ux_mcp_error(id, UX_MCP_BAD_REQUEST, why));
  if (!strcmp(method, "tools/list"))
    return answer(status, reply, 200, ux_mcp_response(id, ux_mcp_tools_list()));
  if (!strcmp(method, "server/discover"))
    return answer(status, reply, 200, ux_mcp_response(id, server_info(UX_MCP_VERSION)));
  if (!strcmp(method, "tools/call")) return plan_call(h, doc, id, status, reply, call);
  char msg[200];
  snprintf(msg, sizeof msg, "method not found: %.100s", method);
  return answer(status, reply, 200, ux_mcp_error(id, UX_MCP_NO_METHOD, msg));
}

int ux_mcp_plan(const ux_mcp_headers *h, const char *body, size_t len, int *status,
                json_t **reply, ux_mcp_call *call) {
  memset(call, 0, sizeof *call);
  *reply = NULL;
  if (len > UX_MCP_BODY_MAX)
    return answer(status, reply, 400, ux_mcp_error(NULL, UX_MCP_BAD_REQUEST,
                                                   "request body is larger than 64000 bytes"));
  json_t *doc = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL) : NULL;
  if (!doc)
    return answer(status, reply, 400, ux_mcp_error(NULL, UX_MCP_BAD_REQUEST, "request body must be valid JSON"));
  int rc = plan_doc(h, doc, status, reply, call);
  json_decref(doc);                      /* a call keeps its own reference */
  if (rc == UX_MCP_REPLY && !*reply) *status = 500;   /* out of memory */
  return rc;
}

void ux_mcp_call_free(ux_mcp_call *c) {
  json_decref(c->agent_req);
  json_decref(c->doc);
  memset(c, 0, sizeof *c);
}
