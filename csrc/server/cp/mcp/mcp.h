/*
** The MCP endpoint of a runtime, `POST /v1/sandboxes/{sb}/mcp` (spec
** §5.4, §5.5), in three parts:
**
**   mcp.c         JSON-RPC 2.0 as the platform speaks it: the body and
**                 header checks, the methods that need no runtime
**                 (tools/list, server/discover, initialize), and the
**                 messages (results, errors, progress, SSE frames);
**   cp/mcp/tools.c   the tools: their list, and each call's arguments
**                 checked and turned into a request for the runtime's
**                 agent (file tools through files.h, the same mapping as
**                 the REST file routes);
**   cp/mcp/answer.c  the route's handler: running a tool call on the
**                 runtime and answering with JSON, or with Server-Sent
**                 Events as the command writes.
**
** The agent enforces paths, sizes and the PTY rules inside the sandbox;
** this layer enforces the wire contract, so nothing malformed reaches it.
*/
#ifndef UX_CP_MCP_H
#define UX_CP_MCP_H

#include <stddef.h>
#include <jansson.h>

#include "server/cp/cp.h"
#include "server/runtime/runtime.h"

#define UX_MCP_BODY_MAX     64000
#define UX_MCP_VERSION      "2026-07-28"
#define UX_MCP_LEGACY       "2024-11-05"   /* what initialize answers */
#define UX_MCP_SERVER_NAME  "sandbox-shell"
#define UX_MCP_SERVER_VER   "0.4.0"

/* JSON-RPC error codes used (§5.5) */
#define UX_MCP_PARSE        -32700
#define UX_MCP_BAD_REQUEST  -32600
#define UX_MCP_NO_METHOD    -32601
#define UX_MCP_BAD_PARAMS   -32602
#define UX_MCP_INTERNAL     -32603
#define UX_MCP_BUSY         -32001

/* The four headers the proxy forwards. */
typedef struct ux_mcp_headers {
  const char *version;        /* MCP-Protocol-Version */
  const char *method;         /* Mcp-Method */
  const char *name;           /* Mcp-Name */
  const char *accept;         /* Accept */
} ux_mcp_headers;

/* A tool call that needs the runtime. */
typedef struct ux_mcp_call {
  json_t *doc;                /* the parsed body (owned) */
  const json_t *id;           /* the request's id, inside doc */
  const char *tool;           /* inside doc */
  json_t *agent_req;          /* the request for the agent (owned) */
  int stream;                 /* answer with SSE (shell, streaming action,
                                 Accept has text/event-stream) */
  int timeout_ms;             /* for the agent call */
} ux_mcp_call;

enum { UX_MCP_REPLY = 1, UX_MCP_ACCEPTED, UX_MCP_CALL };

/* What a request asks: UX_MCP_REPLY with *status and *reply (a JSON-RPC
** message to send as JSON; HTTP 400 for a body over UX_MCP_BODY_MAX,
** bad JSON or a body that is not a JSON-RPC request, else 200),
** UX_MCP_ACCEPTED for a notification (HTTP 202, no body), UX_MCP_CALL
** with *call filled (ux_mcp_call_free). */
int ux_mcp_plan(const ux_mcp_headers *h, const char *body, size_t len, int *status,
                json_t **reply, ux_mcp_call *call);
void ux_mcp_call_free(ux_mcp_call *c);

/* Messages. id may be NULL (JSON null). */
json_t *ux_mcp_error(const json_t *id, int code, const char *message);
json_t *ux_mcp_response(const json_t *id, json_t *result);     /* result stolen */
/* The tool result {content:[{type:"text",text:<JSON>}], structuredContent,
** isError:false} of an agent result (stolen), with sandbox_id and
** workspace_id added, and stream_chunks when >= 0. */
json_t *ux_mcp_tool_result(const json_t *id, json_t *result, const char *sb, const char *ws,
                           long stream_chunks);
/* notifications/progress for chunk number seq (from 1). */
json_t *ux_mcp_progress(const json_t *id, long seq, const char *channel, const json_t *chunk);
/* "event: message\ndata: <compact JSON>\n\n", malloc'd. */
char *ux_mcp_sse_frame(const json_t *msg, size_t *len);
/* The JSON-RPC code of a failed agent call (UX_RTC_*). */
int ux_mcp_code(int rtc);

/* cp/mcp/tools.c */
json_t *ux_mcp_tools_list(void);
/* The agent request of a tools/call: 0 with *req (and *stream, *timeout_ms),
** or -1 with err for JSON-RPC -32602. sse: the client accepts SSE. */
int ux_mcp_tool_request(const char *tool, const json_t *args, int sse, json_t **req, int *stream,
                        int *timeout_ms, char *err, size_t errlen);

/* cp/mcp/answer.c: runs a planned call on runtime sb (of workspace ws) and
** answers: a JSON reply, or an SSE stream of progress frames and the
** final frame; a client that leaves a stream cancels the call. */
void ux_mcp_answer(ux_cp_call *c, const char *sb, const char *ws, ux_mcp_call *call);

/* The handler of POST /v1/sandboxes/{sb}/mcp (the frame has checked the
** sandbox token; the body is read here, with the endpoint's own rules):
** 502 when the runtime is not running, else the plan and its answer.
** Every request refreshes the runtime's idle clock. */
int ux_cp_mcp(ux_cp_call *c);

#endif
