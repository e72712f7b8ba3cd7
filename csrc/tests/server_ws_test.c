/*
** The server side of RFC 6455 (server/http/ws.h) against the RFC's own
** examples and against a hostile client: every refusal rule of ws.h has
** a frame that breaks it, each split of the bytes (all at once, one byte
** at a time) gives the same messages, and random garbage in random
** pieces never crashes the parser or makes it read past its input (run
** it under ASan: scripts/sanitize.sh).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/ws.h"
#include "tests/tap.h"

#define BAIL_OUT(msg) do { printf("Bail out! %s\n", msg); exit(1); } while (0)

static const unsigned char MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

/* One client frame: b0 is FIN|RSV|opcode, the length in its minimal
** form unless ext forces 2 (126) or 8 (127) length bytes. */
static size_t frame_ext(unsigned char *out, unsigned b0, int masked, const void *data, size_t len,
                        int ext) {
  size_t o = 0;
  out[o++] = (unsigned char)b0;
  unsigned char m = masked ? 0x80 : 0;
  if (ext == 0 && len < 126) {
    out[o++] = (unsigned char)(m | len);
  } else if (ext == 2 || (ext == 0 && len <= 0xFFFF)) {
    out[o++] = m | 126;
    out[o++] = (unsigned char)(len >> 8);
    out[o++] = (unsigned char)len;
  } else {
    out[o++] = m | 127;
    for (int i = 0; i < 8; i++) out[o++] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
  }
  if (masked) {
    memcpy(out + o, MASK, 4);
    o += 4;
  }
  const unsigned char *d = data;
  for (size_t i = 0; i < len && d; i++) out[o + i] = d[i] ^ (masked ? MASK[i & 3] : 0);
  return o + (d ? len : 0);
}

static size_t frame(unsigned char *out, unsigned b0, const void *data, size_t len) {
  return frame_ext(out, b0, 1, data, len, 0);
}

/* Feeds all bytes at once; returns the parser's last answer, *code the
** error's close code (0 when none). */
static int feed(ux_ws_parser *p, const unsigned char *in, size_t len, ux_ws_msg *m, unsigned *code) {
  size_t used = 0;
  int r = ux_ws_parse(p, in, len, &used, m);
  *code = r < 0 ? ux_ws_parser_error(p, NULL) : 0;
  return r;
}

/* Expects the bytes to be refused with code. */
static void refused(const unsigned char *in, size_t len, size_t limit, unsigned code, const char *what) {
  ux_ws_parser *p = ux_ws_parser_new(limit);
  ux_ws_msg m;
  unsigned got = 0;
  size_t used = 0, off = 0;
  int r = 0;
  while (off < len && (r = ux_ws_parse(p, in + off, len - off, &used, &m)) == 1) off += used;
  if (r < 0) got = ux_ws_parser_error(p, NULL);
  ok(r == -1 && got == code, "%s: refused with %u (got %d, %u)", what, code, r, got);
  ok(ux_ws_parse(p, (const unsigned char *)"x", 1, &used, &m) == -1, "%s: the error is sticky", what);
  ux_ws_parser_free(p);
}

static void test_handshake(void) {
  char acc[29];
  ok(ux_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", acc) == 0, "the RFC's key is accepted");
  is_str(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "its Sec-WebSocket-Accept is the RFC's");
  ok(ux_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", acc) == -1 && acc[0] == '\0', "a key without padding: refused");
  ok(ux_ws_accept_key(NULL, acc) == -1, "no key: refused");
  const char *k = "dGhlIHNhbXBsZSBub25jZQ==", *why = NULL;
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", k, &why) == 0 && !why, "a valid handshake");
  ok(ux_ws_handshake_check("GET", "WebSocket", "keep-alive, upgrade", "13", k, NULL) == 0,
     "tokens are case-insensitive and found in a list");
  ok(ux_ws_handshake_check("GET", "websocket", " keep-alive ,\tUpgrade\t", "13", k, NULL) == 0,
     "whitespace around list elements");
  ok(ux_ws_handshake_check("POST", "websocket", "Upgrade", "13", k, &why) == 400 && why, "POST: 400");
  ok(ux_ws_handshake_check(NULL, "websocket", "Upgrade", "13", k, NULL) == 400, "no method: 400");
  ok(ux_ws_handshake_check("GET", NULL, "Upgrade", "13", k, NULL) == 400, "no Upgrade: 400");
  ok(ux_ws_handshake_check("GET", "h2c", "Upgrade", "13", k, NULL) == 400, "Upgrade: h2c: 400");
  ok(ux_ws_handshake_check("GET", "websockets", "Upgrade", "13", k, NULL) == 400, "a longer token: 400");
  ok(ux_ws_handshake_check("GET", "websocket", "keep-alive", "13", k, NULL) == 400, "Connection without upgrade: 400");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade-ish", "13", k, NULL) == 400, "a token prefix: 400");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", NULL, NULL) == 400, "no key: 400");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", "AAAAAAAAAAAAAAAAAAAAAAAA", NULL) == 400,
     "a 24-character key of 18 bytes: 400");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", "!!!!!!!!!!!!!!!!!!!!!!==", NULL) == 400,
     "a key that is not base64: 400");
  char big[70000];
  memset(big, 'A', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "13", big, NULL) == 400, "a 70 KB key: 400");
  ok(ux_ws_accept_key(big, acc) == -1, "and no accept for it");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", "8", k, &why) == 426 && why, "version 8: 426");
  ok(ux_ws_handshake_check("GET", "websocket", "Upgrade", NULL, k, NULL) == 426, "no version: 426");
}

static void test_rfc_examples(void) {
  ux_ws_parser *p = ux_ws_parser_new(0);
  ux_ws_msg m;
  unsigned code;
  /* RFC 6455 §5.7: a single-frame masked text message */
  const unsigned char hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
  ok(feed(p, hello, sizeof hello, &m, &code) == 1 && m.opcode == UX_WS_TEXT && m.len == 5 &&
         memcmp(m.data, "Hello", 5) == 0, "the RFC's masked \"Hello\"");
  /* a fragmented text message, a ping between its fragments */
  unsigned char buf[64];
  size_t n = frame(buf, 0x01, "Hel", 3);
  n += frame(buf + n, 0x89, "Hello", 5);
  n += frame(buf + n, 0x80, "lo", 2);
  size_t used = 0, off = 0;
  ok(ux_ws_parse(p, buf, n, &used, &m) == 1 && m.opcode == UX_WS_PING && m.len == 5, "a ping between fragments");
  off += used;
  ok(ux_ws_parse(p, buf + off, n - off, &used, &m) == 1 && m.opcode == UX_WS_TEXT && m.len == 5 &&
         memcmp(m.data, "Hello", 5) == 0 && off + used == n, "then the whole message");
  n = frame(buf, 0x8A, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UX_WS_PONG && m.len == 0, "an empty pong");
  n = frame(buf, 0x82, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UX_WS_BINARY && m.len == 0, "an empty binary message");
  ok(!ux_ws_parser_closed(p), "not closed yet");
  n = frame(buf, 0x88, "\x03\xe8" "bye", 5);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UX_WS_CLOSE && m.close_code == 1000 && m.len == 3 &&
         memcmp(m.data, "bye", 3) == 0 && ux_ws_parser_closed(p), "a close with code and reason");
  ok(feed(p, buf, 0, &m, &code) == 0, "nothing more after it: no error");
  ux_ws_parser_free(p);
  p = ux_ws_parser_new(0);
  n = frame(buf, 0x88, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.close_code == UX_WS_CLOSE_NO_STATUS, "an empty close: 1005");
  ux_ws_parser_free(p);
}

/* The same stream of frames, whole and byte by byte, gives the same messages. */
static size_t stream_messages(const unsigned char *in, size_t len, size_t step, int *ops, size_t *lens) {
  ux_ws_parser *p = ux_ws_parser_new(128 * 1024);
  size_t count = 0, off = 0;
  ux_ws_msg m;
  while (off < len && count < 16) {
    size_t chunk = len - off < step ? len - off : step, used = 0;
    int r = ux_ws_parse(p, in + off, chunk, &used, &m);
    if (r < 0) break;
    if (r == 1) {
      ops[count] = m.opcode;
      lens[count] = m.len;
      int good = 1;
      for (size_t i = 0; i < m.len && m.opcode == UX_WS_BINARY; i++) good &= m.data[i] == (unsigned char)(i * 7);
      if (!good) lens[count] = (size_t)-1;
      count++;
    }
    off += used;
  }
  ux_ws_parser_free(p);
  return count;
}

static void test_splits(void) {
  size_t big = 70000;
  unsigned char *data = malloc(big), *in = malloc(2 * big + 512);
  if (!data || !in) BAIL_OUT("out of memory");
  for (size_t i = 0; i < big; i++) data[i] = (unsigned char)(i * 7);
  size_t n = frame(in, 0x81, "hi", 2);
  n += frame(in + n, 0x02, data, 200);             /* 126-length first fragment */
  n += frame(in + n, 0x89, "p", 1);
  n += frame(in + n, 0x80, data + 200, 100);       /* last fragment */
  n += frame(in + n, 0x82, data, big);             /* 127-length frame */
  n += frame(in + n, 0x88, "\x03\xe8", 2);
  int ops1[16], ops2[16];
  size_t l1[16], l2[16];
  size_t c1 = stream_messages(in, n, n, ops1, l1), c2 = stream_messages(in, n, 1, ops2, l2);
  ok(c1 == 5 && c2 == 5, "five messages both ways (%zu, %zu)", c1, c2);
  ok(c1 == 5 && ops1[0] == UX_WS_TEXT && l1[0] == 2 && ops1[1] == UX_WS_PING && ops1[2] == UX_WS_BINARY &&
         l1[2] == 300 && ops1[3] == UX_WS_BINARY && l1[3] == big && ops1[4] == UX_WS_CLOSE,
     "in order, with the right lengths and bytes");
  ok(c2 == c1 && memcmp(ops1, ops2, c1 * sizeof *ops1) == 0 && memcmp(l1, l2, c1 * sizeof *l1) == 0,
     "byte by byte: the same");
  free(data);
  free(in);
}

static void test_hostile_headers(void) {
  unsigned char b[64];
  size_t n;
  n = frame(b, 0x81 | 0x40, "x", 1);
  refused(b, n, 0, 1002, "RSV1 set");
  n = frame(b, 0x81 | 0x10, "x", 1);
  refused(b, n, 0, 1002, "RSV3 set");
  n = frame(b, 0x83, "x", 1);
  refused(b, n, 0, 1002, "opcode 3");
  n = frame(b, 0x8B, "x", 1);
  refused(b, n, 0, 1002, "opcode 0xB");
  n = frame_ext(b, 0x81, 0, "Hello", 5, 0);
  refused(b, n, 0, 1002, "an unmasked frame");
  n = frame_ext(b, 0x82, 1, "abc", 3, 2);
  refused(b, n, 0, 1002, "a 3-byte length in 16 bits");
  n = frame_ext(b, 0x82, 1, "abc", 3, 8);
  refused(b, n, 0, 1002, "a 3-byte length in 64 bits");
  n = frame_ext(b, 0x82, 1, NULL, (size_t)1 << 63, 8);
  refused(b, n, 0, 1002, "a length with the top bit");
  n = frame_ext(b, 0x82, 1, NULL, (size_t)1 << 62, 8);
  refused(b, n, 0, 1009, "a 2^62-byte frame, refused before any allocation");
  n = frame_ext(b, 0x82, 1, NULL, 70000, 8);
  refused(b, n, 0, 1009, "70000 bytes over the 64 KiB default");
  n = frame_ext(b, 0x89, 1, NULL, 126, 2);
  refused(b, n, 0, 1002, "a 126-byte ping");
  n = frame(b, 0x09, "x", 1);
  refused(b, n, 0, 1002, "a fragmented ping");
  n = frame(b, 0x80, "x", 1);
  refused(b, n, 0, 1002, "a continuation that starts nothing");
  n = frame(b, 0x01, "a", 1);
  n += frame(b + n, 0x81, "b", 1);
  refused(b, n, 0, 1002, "a text frame inside a fragmented message");
}

static void test_hostile_payloads(void) {
  unsigned char b[256], chunk[60];
  memset(chunk, 'a', sizeof chunk);
  size_t n = frame(b, 0x02, chunk, 60);
  n += frame(b + n, 0x80, chunk, 60);
  refused(b, n, 100, 1009, "fragments adding up over the limit");
  n = frame(b, 0x81, "\xff\xfe", 2);
  refused(b, n, 0, 1007, "a text message that is not UTF-8");
  n = frame(b, 0x81, "\xed\xa0\x80", 3);
  refused(b, n, 0, 1007, "a text message with a surrogate");
  n = frame(b, 0x88, "\x03", 1);
  refused(b, n, 0, 1002, "a 1-byte close");
  n = frame(b, 0x88, "\x03\xed", 2);
  refused(b, n, 0, 1002, "close code 1005 on the wire");
  n = frame(b, 0x88, "\x03\xe7", 2);
  refused(b, n, 0, 1002, "close code 999");
  n = frame(b, 0x88, "\x13\x88", 2);
  refused(b, n, 0, 1002, "close code 5000");
  n = frame(b, 0x88, "\x03\xe8\xc3", 3);
  refused(b, n, 0, 1007, "a close reason cut inside a character");
  n = frame(b, 0x88, "\x03\xe8", 2);
  n += frame(b + n, 0x82, "x", 1);
  refused(b, n, 0, 1002, "a frame after the close");
  /* a character split between fragments is fine once whole */
  ux_ws_parser *p = ux_ws_parser_new(0);
  ux_ws_msg m;
  unsigned code;
  n = frame(b, 0x01, "\xc3", 1);
  n += frame(b + n, 0x80, "\xa9", 1);
  ok(feed(p, b, n, &m, &code) == 1 && m.len == 2 && memcmp(m.data, "\xc3\xa9", 2) == 0,
     "UTF-8 split between fragments is accepted whole");
  ux_ws_parser_free(p);
  ok(ux_ws_parser_new((size_t)65 * 1024 * 1024) == NULL, "a limit over 64 MiB is refused");
}

static void test_encoder(void) {
  unsigned char h[UX_WS_HEADER_MAX];
  ok(ux_ws_frame_header(h, UX_WS_BINARY, 0) == 2 && h[0] == 0x82 && h[1] == 0, "empty binary: 2 bytes");
  ok(ux_ws_frame_header(h, UX_WS_TEXT, 125) == 2 && h[1] == 125, "125: 2 bytes");
  ok(ux_ws_frame_header(h, UX_WS_TEXT, 126) == 4 && h[1] == 126 && h[2] == 0 && h[3] == 126, "126: 4 bytes");
  ok(ux_ws_frame_header(h, UX_WS_BINARY, 65535) == 4 && h[2] == 0xFF && h[3] == 0xFF, "65535: 4 bytes");
  ok(ux_ws_frame_header(h, UX_WS_BINARY, 65536) == 10 && h[1] == 127 && h[7] == 1 && h[8] == 0, "65536: 10 bytes");
  ok(ux_ws_frame_header(h, UX_WS_CLOSE, 126) == 0, "a 126-byte close: refused");
  ok(ux_ws_frame_header(h, UX_WS_CONT, 1) == 0 && ux_ws_frame_header(h, 3, 1) == 0 &&
         ux_ws_frame_header(h, 0xB, 1) == 0, "continuation and unknown opcodes: refused");
  ok(ux_ws_frame_header(h, UX_WS_PING, 125) == 2 && h[0] == 0x89, "a 125-byte ping");
  unsigned char c[UX_WS_CONTROL_MAX];
  ok(ux_ws_close_payload(c, 1000, NULL) == 2 && c[0] == 0x03 && c[1] == 0xE8, "a close without reason");
  char reason[300];
  memset(reason, 'a', 122);
  strcpy(reason + 122, "\xc3\xa9 and more");
  size_t n = ux_ws_close_payload(c, 1002, reason);
  ok(n == 124, "a long reason is cut before a split character (%zu)", n);
  memset(reason, 'b', sizeof reason - 1);
  reason[sizeof reason - 1] = '\0';
  ok(ux_ws_close_payload(c, 1009, reason) == UX_WS_CONTROL_MAX, "an ASCII reason fills 125 bytes");
}

/* Random bytes in random pieces: bounded, seeded, never a crash. */
static void test_garbage(void) {
  srand(14);
  unsigned char buf[512];
  int bad = 0, errors = 0;
  for (int round = 0; round < 3000; round++) {
    size_t len = (size_t)(rand() % (int)sizeof buf);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)rand();
    /* half the rounds start with a plausible masked header */
    if (round % 2 && len > 6) buf[0] = (unsigned char)(0x80 | (rand() % 3)), buf[1] |= 0x80;
    ux_ws_parser *p = ux_ws_parser_new(256 + (size_t)(rand() % 1024));
    if (!p) BAIL_OUT("out of memory");
    size_t off = 0;
    int r = 0, steps = 0;
    while (off < len && steps++ < 1000) {
      size_t piece = 1 + (size_t)(rand() % 64), used = 0;
      if (piece > len - off) piece = len - off;
      ux_ws_msg m;
      r = ux_ws_parse(p, buf + off, piece, &used, &m);
      if (r < 0) { errors++; break; }
      if (used > piece || (r == 0 && used != piece) || (r == 1 && m.len > 1280)) bad++;
      off += used;
    }
    ux_ws_parser_free(p);
  }
  ok(bad == 0, "3000 rounds of garbage: answers always within bounds");
  ok(errors > 1000, "and most of them refused (%d)", errors);
}

int main(void) {
  test_handshake();
  test_rfc_examples();
  test_splits();
  test_hostile_headers();
  test_hostile_payloads();
  test_encoder();
  test_garbage();
  return tap_done();
}
