/*
** The WebSocket frame parser (core/ws/frames.c), as unsandboxd reads
** client frames and as the terminal client reads server frames: any
** bytes, cut into pieces whose size the first byte picks, must give the
** same messages (count, opcodes, lengths, content hash) as the same bytes
** in one piece, on both sides, every message within the limit the first
** byte also picks (control frames: 125 bytes), text and close reasons
** valid UTF-8; then the handshake checks (core/ws/handshake.c) on the
** rest: as a client's key (the server's check and accept agree), and as
** the head of a server's reply to the client's upgrade.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "core/ws/ws.h"

typedef struct {
  size_t count;
  uint64_t hash;
  int failed;
  unsigned code;
} outcome;

static outcome run(const uint8_t *in, size_t len, size_t piece, size_t limit, unsb_ws_side side) {
  outcome o = {0, 1469598103934665603ull, 0, 0};
  unsb_ws_parser *p = unsb_ws_parser_new(limit, side);
  if (!p) abort();
  size_t off = 0;
  while (off < len) {
    size_t n = len - off < piece ? len - off : piece, used = 0;
    unsb_ws_msg m;
    int r = unsb_ws_parse(p, in + off, n, &used, &m);
    if (r < 0) {
      o.failed = 1;
      o.code = unsb_ws_parser_error(p, NULL);
      break;
    }
    if (used > n || (r == 0 && used != n)) abort();
    if (r == 1) {
      if (m.opcode == UNSB_WS_CONT || (m.opcode != UNSB_WS_TEXT && m.opcode != UNSB_WS_BINARY && m.len > 125)) abort();
      /* the limit is a data message's; control frames have their own 125 */
      if ((m.opcode == UNSB_WS_TEXT || m.opcode == UNSB_WS_BINARY) && m.len > limit) abort();
      if ((m.opcode == UNSB_WS_TEXT || m.opcode == UNSB_WS_CLOSE) && !unsb_utf8_valid((const char *)m.data, m.len))
        abort();
      o.count++;
      o.hash = (o.hash ^ (uint64_t)m.opcode) * 1099511628211ull;
      for (size_t i = 0; i < m.len; i++) o.hash = (o.hash ^ m.data[i]) * 1099511628211ull;
    }
    off += used;
  }
  unsb_ws_parser_free(p);
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t piece = 1 + (data[0] & 0x0f) * 3, limit = 64 + (size_t)(data[0] >> 4) * 512;
  for (int side = UNSB_WS_SERVER; side <= UNSB_WS_CLIENT; side++) {
    outcome a = run(data + 1, size - 1, size, limit, (unsb_ws_side)side);
    outcome b = run(data + 1, size - 1, piece, limit, (unsb_ws_side)side);
    if (a.count != b.count || a.hash != b.hash || a.failed != b.failed || a.code != b.code) abort();
  }
  char *key = malloc(size);
  if (!key) return 0;
  memcpy(key, data + 1, size - 1);
  key[size - 1] = '\0';
  char acc[29];
  int hs = unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", key, NULL);
  if ((hs == 0) != (unsb_ws_accept_key(key, acc) == 0)) abort();
  if (hs == 0 && strlen(acc) != 28) abort();
  int status = -1;
  const char *why = NULL;
  int reply = unsb_ws_reply_check(key, size - 1, "dGhlIHNhbXBsZSBub25jZQ==", &status, &why);
  if ((reply == 0) != (why == NULL) || (reply == 0 && status != 101) || status < 0 || status > 999)
    abort();
  free(key);
  return 0;
}
