/*
** MCP framing of the Control Plane client (spec §5.4, §5.5, §7.10-§7.11)
** without JSON: the constants the binding puts into the JSON-RPC body, the
** per-Manager request id sequence, the local checks of tool calls, and the
** rule that decides whether a progress notification reaches on_chunk. The
** body itself is encoded and decoded with cjson by the binding.
*/
#ifndef UNSB_MCP_H
#define UNSB_MCP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define UNSB_MCP_PROTOCOL_VERSION "2026-07-28"
#define UNSB_MCP_CLIENT_NAME "sandbox-client"
#define UNSB_MCP_CLIENT_VERSION "0.1.0"
#define UNSB_MCP_METHOD "tools/call"
#define UNSB_MCP_ID_MAX 48      /* "sandbox-client-<20 digits>-<6 hex>" + NUL fits */

/* Request ids "sandbox-client-<n>-<6 hex>", n = 1, 2, ... per Manager;
** the hex part is random so ids of two Managers (or processes) differ. */
typedef struct { uint64_t last; } unsb_mcp_ids;

void unsb_mcp_ids_init(unsb_mcp_ids *ids);
int unsb_mcp_next_id(unsb_mcp_ids *ids, char out[UNSB_MCP_ID_MAX], unsb_error *err);
/* The id for a given n >= 1 (for callers that keep the counter). */
int unsb_mcp_format_id(uint64_t n, char out[UNSB_MCP_ID_MAX], unsb_error *err);

/* 1 for the six wire tools: shell, file_read, file_write, file_edit,
** file_glob, file_grep. */
int unsb_mcp_known_tool(const char *name);

/* shell_session's action (exec, wait, input, kill) as the wire action
** ("session_exec", ...), or NULL for anything else. */
const char *unsb_mcp_session_action(const char *action);

/* A PTY session id: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$. */
int unsb_mcp_valid_session_id(const char *s, size_t len);

/* §7.11: a progress notification goes to on_chunk only if its token is
** this request's id, the channel is stdout or stderr, the sequence is a
** positive integer (seq_is_integer says the JSON number had no fraction)
** and the chunk is non-empty. */
int unsb_mcp_progress_ok(const char *token, const char *request_id, const char *channel,
                         int seq_is_integer, long long sequence, size_t chunk_len);

#endif
