/*
** RFC 6455 §5: the peer's frames parsed incrementally, whatever the split
** of the bytes (one at a time or many frames at once), and the headers of
** our own frames. The parser keeps three pieces of state: the header
** being collected (at most 14 bytes), the frame's payload position (for
** the mask, all zero for a server's unmasked frames), and the message
** being assembled from fragments (bounded by the limit, checked against
** the declared length before a byte of payload is stored, so a 2^63-byte
** claim costs nothing). Control frames get their own 125-byte buffer so
** they can arrive between fragments.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "core/ws/ws.h"

struct unsb_ws_parser {
  size_t max;
  int masked;         /* the peer's frames carry a mask (it is a client) */
  unsigned char hdr[14];
  size_t hdr_have, hdr_need;
  /* the frame whose payload is being read */
  int in_payload, opcode, fin;
  uint64_t flen, fpos;
  unsigned char mask[4];
  /* the data message being assembled (opcode 0 when none) */
  int msg_opcode;
  unsigned char *msg;
  size_t msg_len, msg_cap;
  unsigned char ctl[UNSB_WS_CONTROL_MAX];
  /* 1 when a message was returned: drop it at the next call */
  int delivered;
  int closed;
  unsigned err_code;
  const char *err_why;
};

unsb_ws_parser *unsb_ws_parser_new(size_t max_message, unsb_ws_side side) {
  if (max_message == 0) max_message = UNSB_WS_MAX_MESSAGE;
  if (max_message > UNSB_WS_LIMIT_MAX) return NULL;
  unsb_ws_parser *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->max = max_message;
  p->masked = side == UNSB_WS_SERVER;
  p->hdr_need = 2;
  return p;
}

void unsb_ws_parser_free(unsb_ws_parser *p) {
  if (!p) return;
  free(p->msg);
  free(p);
}

unsigned unsb_ws_parser_error(const unsb_ws_parser *p, const char **why) {
  if (why) *why = p->err_why;
  return p->err_code;
}

int unsb_ws_parser_closed(const unsb_ws_parser *p) { return p->closed; }

static int fail(unsb_ws_parser *p, unsigned code, const char *why) {
  p->err_code = code;
  p->err_why = why;
  return -1;
}

static int is_control(int op) { return op >= UNSB_WS_CLOSE; }

/* The header is complete: decode it and apply the rules of ws.h. */
static int header_done(unsb_ws_parser *p) {
  unsigned char b0 = p->hdr[0], b1 = p->hdr[1];
  int op = b0 & 0x0F;
  size_t off = 2;
  uint64_t len = b1 & 0x7F;
  if (len == 126) {
    len = ((uint64_t)p->hdr[2] << 8) | p->hdr[3];
    if (len < 126) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a frame length is not minimally encoded");
    off = 4;
  } else if (len == 127) {
    len = 0;
    for (int i = 0; i < 8; i++) len = (len << 8) | p->hdr[2 + i];
    if (len >> 63) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a frame length has its top bit set");
    if (len < 65536) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a frame length is not minimally encoded");
    off = 10;
  }
  if (p->masked) memcpy(p->mask, p->hdr + off, 4);
  else memset(p->mask, 0, 4);
  if (is_control(op)) {
    if (!(b0 & 0x80)) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a control frame is fragmented");
    if (len > UNSB_WS_CONTROL_MAX) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a control frame is over 125 bytes");
  } else if (op == UNSB_WS_CONT) {
    if (!p->msg_opcode) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a continuation frame starts no message");
  } else if (p->msg_opcode) {
    return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a new message began inside a fragmented one");
  }
  if (!is_control(op) && len > p->max - p->msg_len)
    return fail(p, UNSB_WS_CLOSE_TOO_BIG, "a message is over the size limit");
  if (op == UNSB_WS_TEXT || op == UNSB_WS_BINARY) p->msg_opcode = op;
  p->opcode = op;
  p->fin = (b0 & 0x80) != 0;
  p->flen = len;
  p->fpos = 0;
  p->in_payload = 1;
  return 0;
}

/* One more header byte; returns -1 on an error, 1 when the header is done. */
static int header_byte(unsb_ws_parser *p, unsigned char c) {
  p->hdr[p->hdr_have++] = c;
  if (p->hdr_have == 1) {
    int op = c & 0x0F;
    if (c & 0x70) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a reserved bit is set (no extension was agreed)");
    if (op != UNSB_WS_CONT && op != UNSB_WS_TEXT && op != UNSB_WS_BINARY && op != UNSB_WS_CLOSE &&
        op != UNSB_WS_PING && op != UNSB_WS_PONG)
      return fail(p, UNSB_WS_CLOSE_PROTOCOL, "an unknown opcode");
    return 0;
  }
  if (p->hdr_have == 2) {
    if (p->masked && !(c & 0x80)) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a client frame is not masked");
    if (!p->masked && (c & 0x80)) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a server frame is masked");
    unsigned l = c & 0x7F;
    p->hdr_need = 2 + (l == 126 ? 2 : l == 127 ? 8 : 0) + (p->masked ? 4 : 0);
  }
  if (p->hdr_have < p->hdr_need) return 0;
  return header_done(p) < 0 ? -1 : 1;
}

/* Grows the message buffer to hold need bytes (need <= max). */
static int msg_reserve(unsb_ws_parser *p, size_t need) {
  if (need <= p->msg_cap) return 0;
  size_t cap = p->msg_cap ? p->msg_cap : 256;
  while (cap < need) cap = cap > p->max / 2 ? p->max : cap * 2;
  unsigned char *m = realloc(p->msg, cap);
  if (!m) return fail(p, UNSB_WS_CLOSE_ERROR, "out of memory");
  p->msg = m;
  p->msg_cap = cap;
  return 0;
}

/* The close frame's payload: empty, or a valid code and a UTF-8 reason. */
static int close_msg(unsb_ws_parser *p, unsb_ws_msg *msg) {
  size_t n = (size_t)p->flen;
  msg->close_code = UNSB_WS_CLOSE_NO_STATUS;
  msg->data = p->ctl;
  msg->len = 0;
  if (n == 1) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a close frame has a 1-byte payload");
  if (n >= 2) {
    unsigned code = ((unsigned)p->ctl[0] << 8) | p->ctl[1];
    int ok = (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
             (code >= 3000 && code <= 4999);
    if (!ok) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "a close frame has an invalid code");
    if (!unsb_utf8_valid((const char *)p->ctl + 2, n - 2))
      return fail(p, UNSB_WS_CLOSE_BAD_DATA, "a close reason is not UTF-8");
    msg->close_code = code;
    msg->data = p->ctl + 2;
    msg->len = n - 2;
  }
  p->closed = 1;
  return 1;
}

/* The frame's payload is complete: 1 when it completes a message. */
static int frame_done(unsb_ws_parser *p, unsb_ws_msg *msg) {
  p->in_payload = 0;
  p->hdr_have = 0;
  p->hdr_need = 2;
  msg->opcode = p->opcode;
  msg->close_code = 0;
  if (p->opcode == UNSB_WS_CLOSE) return close_msg(p, msg);
  if (is_control(p->opcode)) {
    msg->data = p->ctl;
    msg->len = (size_t)p->flen;
    return 1;
  }
  if (!p->fin) return 0;
  msg->opcode = p->msg_opcode;
  msg->data = p->msg ? p->msg : p->ctl;
  msg->len = p->msg_len;
  if (p->msg_opcode == UNSB_WS_TEXT && !unsb_utf8_valid((const char *)msg->data, msg->len))
    return fail(p, UNSB_WS_CLOSE_BAD_DATA, "a text message is not UTF-8");
  p->msg_opcode = 0;
  p->delivered = 1;
  return 1;
}

/* Copies and unmasks payload bytes; returns how many were taken. */
static size_t payload_take(unsb_ws_parser *p, const unsigned char *in, size_t len) {
  uint64_t left = p->flen - p->fpos;
  size_t n = left < len ? (size_t)left : len;
  if (n == 0) return 0; /* an empty frame: the message buffer may not exist yet */
  unsigned char *dst = is_control(p->opcode) ? p->ctl + p->fpos : p->msg + p->msg_len;
  for (size_t i = 0; i < n; i++) dst[i] = in[i] ^ p->mask[(p->fpos + i) & 3];
  p->fpos += n;
  if (!is_control(p->opcode)) p->msg_len += n;
  return n;
}

int unsb_ws_parse(unsb_ws_parser *p, const unsigned char *in, size_t len, size_t *used, unsb_ws_msg *msg) {
  *used = 0;
  if (p->err_code) return -1;
  if (p->delivered) {
    p->delivered = 0;
    p->msg_len = 0;
  }
  size_t i = 0;
  while (i < len || (p->in_payload && p->fpos == p->flen)) {
    if (p->closed) return fail(p, UNSB_WS_CLOSE_PROTOCOL, "bytes after a close frame");
    if (!p->in_payload) {
      if (header_byte(p, in[i++]) < 0) return -1;
      if (!p->in_payload) continue;
      if (!is_control(p->opcode) && msg_reserve(p, p->msg_len + (size_t)p->flen) < 0) return -1;
    }
    i += payload_take(p, in + i, len - i);
    if (p->fpos < p->flen) continue;
    int r = frame_done(p, msg);
    if (r < 0) return -1;
    if (r == 1) {
      *used = i;
      return 1;
    }
  }
  *used = i;
  return 0;
}

size_t unsb_ws_frame_header(unsigned char out[UNSB_WS_HEADER_MAX], int opcode, size_t len,
                            const unsigned char mask[4]) {
  size_t n;
  unsigned char m = mask ? 0x80 : 0;
  if (opcode != UNSB_WS_TEXT && opcode != UNSB_WS_BINARY && !(is_control(opcode) && opcode <= UNSB_WS_PONG))
    return 0;
  if (is_control(opcode) && len > UNSB_WS_CONTROL_MAX) return 0;
  out[0] = (unsigned char)(0x80 | opcode);
  if (len < 126) {
    out[1] = (unsigned char)(m | len);
    n = 2;
  } else if (len <= 0xFFFF) {
    out[1] = m | 126;
    out[2] = (unsigned char)(len >> 8);
    out[3] = (unsigned char)len;
    n = 4;
  } else {
    out[1] = m | 127;
    for (int i = 0; i < 8; i++) out[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
    n = 10;
  }
  if (mask) {
    memcpy(out + n, mask, 4);
    n += 4;
  }
  return n;
}

void unsb_ws_mask(unsigned char *data, size_t len, const unsigned char mask[4]) {
  for (size_t i = 0; i < len; i++) data[i] ^= mask[i & 3];
}

size_t unsb_ws_close_payload(unsigned char out[UNSB_WS_CONTROL_MAX], unsigned code, const char *reason) {
  out[0] = (unsigned char)(code >> 8);
  out[1] = (unsigned char)code;
  size_t n = reason ? strlen(reason) : 0;
  if (n > UNSB_WS_CONTROL_MAX - 2) n = UNSB_WS_CONTROL_MAX - 2;
  /* never cut inside a UTF-8 sequence: drop continuation bytes at the cut */
  while (n > 0 && reason[n] != '\0' && ((unsigned char)reason[n] & 0xC0) == 0x80) n--;
  if (n) memcpy(out + 2, reason, n);
  return 2 + n;
}
