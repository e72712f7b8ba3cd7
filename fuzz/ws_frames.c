/*
** unsandboxd's WebSocket client-frame parser (server/http/ws_frames.c):
** any bytes, cut into pieces whose size the first byte picks, must give
** the same messages (count, opcodes, lengths, content hash) as the same
** bytes in one piece, every message within the limit the first byte also
** picks (control frames: 125 bytes), text and close reasons valid UTF-8; then the handshake checks
** on the rest as a key.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "server/http/ws.h"

typedef struct {
  size_t count;
  uint64_t hash;
  int failed;
  unsigned code;
} outcome;

static outcome run(const uint8_t *in, size_t len, size_t piece, size_t limit) {
  outcome o = {0, 1469598103934665603ull, 0, 0};
  ux_ws_parser *p = ux_ws_parser_new(limit);
  if (!p) abort();
  size_t off = 0;
  while (off < len) {
    size_t n = len - off < piece ? len - off : piece, used = 0;
    ux_ws_msg m;
    int r = ux_ws_parse(p, in + off, n, &used, &m);
    if (r < 0) {
      o.failed = 1;
      o.code = ux_ws_parser_error(p, NULL);
      break;
    }
    if (used > n || (r == 0 && used != n)) abort();
    if (r == 1) {
      if (m.opcode == UX_WS_CONT || (m.opcode != UX_WS_TEXT && m.opcode != UX_WS_BINARY && m.len > 125)) abort();
      /* the limit is a data message's; control frames have their own 125 */
      if ((m.opcode == UX_WS_TEXT || m.opcode == UX_WS_BINARY) && m.len > limit) abort();
      if ((m.opcode == UX_WS_TEXT || m.opcode == UX_WS_CLOSE) && !unsb_utf8_valid((const char *)m.data, m.len))
        abort();
      o.count++;
      o.hash = (o.hash ^ (uint64_t)m.opcode) * 1099511628211ull;
      for (size_t i = 0; i < m.len; i++) o.hash = (o.hash ^ m.data[i]) * 1099511628211ull;
    }
    off += used;
  }
  ux_ws_parser_free(p);
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t piece = 1 + (data[0] & 0x0f) * 3, limit = 64 + (size_t)(data[0] >> 4) * 512;
  outcome a = run(data + 1, size - 1, size, limit), b = run(data + 1, size - 1, piece, limit);
  if (a.count != b.count || a.hash != b.hash || a.failed != b.failed || a.code != b.code) abort();
  char *key = malloc(size);
  if (!key) return 0;
  memcpy(key, data + 1, size - 1);
  key[size - 1] = '\0';
  char acc[29];
  int hs = ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", key, NULL);
  if ((hs == 0) != (ux_ws_accept_key(key, acc) == 0)) abort();
  if (hs == 0 && strlen(acc) != 28) abort();
  free(key);
  return 0;
}
