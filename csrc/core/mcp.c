/*
** MCP framing helpers (see mcp.h).
*/
#include "core/mcp.h"
#include "core/digest.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void unsb_mcp_ids_init(unsb_mcp_ids *ids) { ids->last = 0; }

int unsb_mcp_format_id(uint64_t n, char out[UNSB_MCP_ID_MAX], unsb_error *err) {
  unsigned char raw[3];
  char hex[7];
  if (n == 0) return unsb_fail(err, UNSB_EVALIDATION, "MCP request numbers start at 1");
  if (unsb_random_bytes(raw, sizeof raw) != 0)
    return unsb_fail(err, UNSB_EPROTOCOL, "random bytes unavailable (OpenSSL RAND_bytes)");
  unsb_hex(raw, sizeof raw, hex);
  snprintf(out, UNSB_MCP_ID_MAX, "sandbox-client-%" PRIu64 "-%s", n, hex);
  return 0;
}

int unsb_mcp_next_id(unsb_mcp_ids *ids, char out[UNSB_MCP_ID_MAX], unsb_error *err) {
  if (ids->last == UINT64_MAX) ids->last = 0;   /* unreachable in practice; never 0 */
  if (unsb_mcp_format_id(ids->last + 1, out, err) != 0) return -1;
  ids->last++;
  return 0;
}

static const char *const TOOLS[] = {
  "shell", "file_read", "file_write", "file_edit", "file_glob", "file_grep", NULL,
};

int unsb_mcp_known_tool(const char *name) {
  for (const char *const *t = TOOLS; name && *t; t++)
    if (strcmp(name, *t) == 0) return 1;
  return 0;
}

const char *unsb_mcp_session_action(const char *action) {
  static const char *const MAP[][2] = {
    {"exec", "session_exec"}, {"wait", "session_wait"},
    {"input", "session_input"}, {"kill", "session_kill"},
  };
  for (size_t i = 0; action && i < sizeof MAP / sizeof *MAP; i++)
    if (strcmp(action, MAP[i][0]) == 0) return MAP[i][1];
  return NULL;
}

static int alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int unsb_mcp_valid_session_id(const char *s, size_t len) {
  if (!s || len == 0 || len > 64 || !alnum(s[0])) return 0;
  for (size_t i = 1; i < len; i++)
    if (!alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-') return 0;
  return 1;
}

int unsb_mcp_progress_ok(const char *token, const char *request_id, const char *channel,
                         int seq_is_integer, long long sequence, size_t chunk_len) {
  if (!token || !request_id || strcmp(token, request_id) != 0) return 0;
  if (!channel || (strcmp(channel, "stdout") != 0 && strcmp(channel, "stderr") != 0)) return 0;
  return seq_is_integer && sequence > 0 && chunk_len > 0;
}
