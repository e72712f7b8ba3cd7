/*
** Workspace file operations (spec §4.2, §5.6), one implementation for
** both ways in: the REST routes `…/files/<route>` and the MCP file tools.
** Both become the same request to the runtime's agent, which does the
** work inside the sandbox and enforces every path rule and limit of §5.6
** (docs/internals.md, "unsandboxd-agent"); this module only chooses which
** arguments pass, converts query strings, calls the runtime, and shapes
** the answer. Nothing here ever creates a runtime.
*/
#ifndef UX_CP_FILES_H
#define UX_CP_FILES_H

#include <stddef.h>
#include <jansson.h>

#include "server/cp/cp.h"
#include "server/runtime/runtime.h"

#define UX_FILES_TIMEOUT_MS 45000   /* the platform's upstream timeout */
#define UX_FILES_BINARY_READ_MAX (4 << 20)   /* read-binary's bytes (the agent's limit) */

/* The agent op of a REST route ("list", "read", "read-binary", "glob",
** "grep", "write", "write-binary", "edit") or of an MCP file tool
** ("file_read", "file_write", "file_edit", "file_glob", "file_grep");
** NULL for anything else. */
const char *ux_files_op(const char *route_or_tool);

/* 1 for the routes that write (POST, workspace token only). */
int ux_files_writes(const char *route);

/* The agent request of a REST route: for a GET route from its query
** arguments (query(ctx, name) returns a value or NULL), for a POST route
** from its JSON body. Only the keys the route lists pass; query integers
** (offset, limit, context) must be decimal integers, query flags
** (case_insensitive, regex) are true for 1, true or yes. NULL with err
** (a 400 message) otherwise. */
json_t *ux_files_request(const char *route, const char *(*query)(void *ctx, const char *name),
                         void *ctx, const json_t *body, char *err, size_t errlen);

/* The agent request of an MCP file tool from its arguments object: the
** arguments pass as given (the agent refuses unknown keys and wrong
** types); NULL with err for a non-object or an "op" key. */
json_t *ux_files_tool_request(const char *tool, const json_t *args, char *err, size_t errlen);

/* Calls the runtime with req (UX_FILES_TIMEOUT_MS), and data_fd beside
** it when > 0: a UX_RTC_* code and, on success, the agent's result in
** *result. */
int ux_files_call(ux_rt *rt, const json_t *req, int data_fd, json_t **result, char *err, size_t errlen);

/* The REST answer to a failed call: the HTTP status, and {"error": text}
** in *body. INVALID 400 with the agent's message, BUSY 503, INTERNAL 500,
** GONE 502 ("internal service unavailable: ..."), TIMEOUT 504. */
int ux_files_http_error(int rtc, const char *err, json_t **body);

/* 409 {"error":"<route> requires a running Runtime for <ws>","hint":...}. */
json_t *ux_files_no_runtime(const char *route, const char *ws_id);

/* The reply to a call's outcome: the error (ux_files_http_error), or 200
** with res (stolen) plus workspace_id. */
int ux_files_answer(ux_cp_call *c, int rc, json_t *res, const char *err);

/* read-binary and write-binary (files_binary.c): the call with the
** content beside the frame, in a memfd (write-binary's content_base64
** text; read-binary's bytes, encoded here into the reply), and the reply.
** req is the route's agent request (not stolen; write-binary's loses its
** content_base64). */
int ux_files_binary_call(ux_cp_call *c, ux_rt *rt, const char *route, json_t *req, char *err, size_t errlen);

/* The handler of the REST file routes `…/files/<route>` (the route is
** the path's last segment; the frame has authenticated the request and,
** for reads, checked that the workspace is the caller's): the ready
** runtime of the workspace (else the 409), the request (query for GET,
** c->body for POST), the call, and the reply: 200 with the result plus
** workspace_id, or the error. */
int ux_cp_files(ux_cp_call *c);

#endif
