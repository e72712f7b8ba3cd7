/*
** Running an MCP tool call on the runtime and answering (see mcp.h).
**
** Buffered: one agent call, one JSON reply. Streamed (SSE, §5.5): the
** stream opens before the call, every chunk event of the agent becomes a
** notifications/progress frame written at once (the transport's bounded
** buffer gives backpressure all the way to the command), and the final
** frame carries the result with stream_chunks, or the error. The agent
** call's idle tick (every 250 ms) asks the transport whether the client
** is still there; when it has gone the call is cancelled, which closes
** the request socket: the agent then kills a running exec or
** session_exec and abandons a session_wait or session_input (their
** command goes on), exactly the platform's rule.
*/
#include "server/cp/mcp/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/stream.h"

typedef struct sse {
  ux_stream *s;
  const json_t *id;
  long seq;                   /* progress frames sent */
  int gone;                   /* the client left */
} sse;

static int write_frame(sse *c, json_t *msg) {
  size_t len = 0;
  char *frame = ux_mcp_sse_frame(msg, &len);
  json_decref(msg);
  int rc = frame ? ux_stream_write(c->s, frame, len) : -1;
  free(frame);
  return rc;
}

/* on_event of the agent call: a chunk becomes a progress frame; NULL (no
** event for 250 ms) checks that the client is still there. */
static int on_chunk(void *ctx, const json_t *ev) {
  sse *c = ctx;
  if (!ev) {
    if (ux_stream_wait(c->s, 0)) c->gone = 1;
    return c->gone;
  }
  const json_t *data = json_object_get(ev, "data");
  if (json_string_length(data) == 0) return 0;   /* §7.11: never an empty chunk */
  const char *channel = json_string_value(json_object_get(ev, "channel"));
  if (write_frame(c, ux_mcp_progress(c->id, c->seq + 1, channel, data)) != 0) {
    c->gone = 1;
    return 1;
  }
  c->seq++;
  return 0;
}

/* The failure of a buffered call: JSON-RPC errors for what the tool
** said, HTTP errors for a runtime that could not be reached or answer. */
static void reply_failure(ux_cp_call *c, const ux_mcp_call *call, int rc, const char *err) {
  if (rc == UX_RTC_GONE) ux_cp_fail(c, 502, "internal service unavailable: %s", err);
  else if (rc == UX_RTC_TIMEOUT) ux_cp_fail(c, 504, "%s", err);
  else ux_cp_ok(c, 200, ux_mcp_error(call->id, ux_mcp_code(rc), err));
}

static void answer_json(ux_cp_call *c, ux_rt *rt, const char *sb, const char *ws, ux_mcp_call *call) {
  json_t *res = NULL;
  char err[600];
  int rc = ux_rt_call(rt, call->agent_req, 0, call->timeout_ms, NULL, NULL, &res, err, sizeof err);
  if (rc != UX_RTC_OK) { reply_failure(c, call, rc, err); return; }
  json_t *msg = ux_mcp_tool_result(call->id, res, sb, ws, -1);
  if (msg) ux_cp_ok(c, 200, msg);
  else ux_cp_fail(c, 500, "out of memory");
}

static void answer_sse(ux_cp_call *c, ux_rt *rt, const char *sb, const char *ws, ux_mcp_call *call) {
  ux_req *r = c->r;
  r->reply.close = 1;                      /* §5.5: Connection: close */
  ux_stream *s = ux_reply_header(r, "Cache-Control", "no-cache, no-transform") == 0
                 ? ux_reply_stream(r, 200, "text/event-stream; charset=utf-8", -1) : NULL;
  if (!s) { ux_cp_fail(c, 500, "cannot open the event stream"); return; }
  sse st = { s, call->id, 0, 0 };
  json_t *res = NULL;
  char err[600];
  int rc = ux_rt_call(rt, call->agent_req, 0, call->timeout_ms, on_chunk, &st, &res, err, sizeof err);
  if (st.gone) { json_decref(res); ux_stream_abort(s); return; }
  json_t *msg = rc == UX_RTC_OK ? ux_mcp_tool_result(call->id, res, sb, ws, st.seq)
                                : ux_mcp_error(call->id, ux_mcp_code(rc), err);
  if (!msg || write_frame(&st, msg) != 0) { ux_stream_abort(s); return; }
  ux_stream_close(s);
}

void ux_mcp_answer(ux_cp_call *c, const char *sb, const char *ws, ux_mcp_call *call) {
  ux_runtimes *rts = c->cp->rts;
  ux_rt *rt = ux_runtimes_get(rts, sb);
  if (!rt) {
    ux_cp_fail(c, 502, "internal service unavailable: runtime %s is not running", sb);
    return;
  }
  if (call->stream) answer_sse(c, rt, sb, ws, call);
  else answer_json(c, rt, sb, ws, call);
  ux_runtimes_touch(rts, sb);             /* the idle clock runs from the call's end */
  ux_rt_put(rt);
}

int ux_cp_mcp(ux_cp_call *c) {
  const char *sb = c->param[0];
  ux_req *r = c->r;
  ux_rt_info info;
  if (ux_runtimes_info(c->cp->rts, sb, &info) != 0 || info.status != UX_RT_RUNNING)
    return ux_cp_fail(c, 502, "internal service unavailable: runtime %s is not running", sb);
  ux_runtimes_touch(c->cp->rts, sb);
  ux_mcp_headers h = { ux_req_header(r, "MCP-Protocol-Version"), ux_req_header(r, "Mcp-Method"),
                       ux_req_header(r, "Mcp-Name"), ux_req_header(r, "Accept") };
  /* a body over the route's buffer limit was not kept: it is over 64000 */
  size_t len = r->body_overflow ? UX_MCP_BODY_MAX + 1 : r->body_len;
  int status;
  json_t *reply;
  ux_mcp_call call;
  int kind = ux_mcp_plan(&h, r->body, len, &status, &reply, &call);
  if (kind == UX_MCP_ACCEPTED) return ux_reply_empty(r, 202);
  if (kind == UX_MCP_REPLY)
    return reply ? ux_cp_ok(c, status, reply) : ux_cp_fail(c, 500, "out of memory");
  ux_mcp_answer(c, sb, info.ws_id, &call);
  ux_mcp_call_free(&call);
  return 0;
}
