/*
** RFC 6455 (core/ws/ws.h) from both ends, against the RFC's own examples
** and against a hostile peer. The server's side: every refusal rule of
** ws.h has a client frame that breaks it, each split of the bytes (all at
** once, one byte at a time) gives the same messages, and random garbage in
** random pieces never crashes the parser or makes it read past its input
** (run it under ASan: scripts/sanitize.sh). The client's side: unmasked
** server frames, a masked one refused, its own masked frames read back by
** a server's parser, its key, and every way a reply to its upgrade can be
** wrong.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ws/ws.h"
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
static int feed(unsb_ws_parser *p, const unsigned char *in, size_t len, unsb_ws_msg *m, unsigned *code) {
  size_t used = 0;
  int r = unsb_ws_parse(p, in, len, &used, m);
  *code = r < 0 ? unsb_ws_parser_error(p, NULL) : 0;
  return r;
}

/* Expects the bytes to be refused with code. */
static void refused(const unsigned char *in, size_t len, size_t limit, unsigned code, const char *what) {
  unsb_ws_parser *p = unsb_ws_parser_new(limit, UNSB_WS_SERVER);
  unsb_ws_msg m;
  unsigned got = 0;
  size_t used = 0, off = 0;
  int r = 0;
  while (off < len && (r = unsb_ws_parse(p, in + off, len - off, &used, &m)) == 1) off += used;
  if (r < 0) got = unsb_ws_parser_error(p, NULL);
  ok(r == -1 && got == code, "%s: refused with %u (got %d, %u)", what, code, r, got);
  ok(unsb_ws_parse(p, (const unsigned char *)"x", 1, &used, &m) == -1, "%s: the error is sticky", what);
  unsb_ws_parser_free(p);
}

static void test_handshake(void) {
  char acc[29];
  ok(unsb_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", acc) == 0, "the RFC's key is accepted");
  is_str(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "its Sec-WebSocket-Accept is the RFC's");
  ok(unsb_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", acc) == -1 && acc[0] == '\0', "a key without padding: refused");
  ok(unsb_ws_accept_key(NULL, acc) == -1, "no key: refused");
  const char *k = "dGhlIHNhbXBsZSBub25jZQ==", *why = NULL;
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", k, &why) == 0 && !why, "a valid handshake");
  ok(unsb_ws_handshake_check("GET", "WebSocket", "keep-alive, upgrade", "13", k, NULL) == 0,
     "tokens are case-insensitive and found in a list");
  ok(unsb_ws_handshake_check("GET", "websocket", " keep-alive ,\tUpgrade\t", "13", k, NULL) == 0,
     "whitespace around list elements");
  ok(unsb_ws_handshake_check("POST", "websocket", "Upgrade", "13", k, &why) == 400 && why, "POST: 400");
  ok(unsb_ws_handshake_check(NULL, "websocket", "Upgrade", "13", k, NULL) == 400, "no method: 400");
  ok(unsb_ws_handshake_check("GET", NULL, "Upgrade", "13", k, NULL) == 400, "no Upgrade: 400");
  ok(unsb_ws_handshake_check("GET", "h2c", "Upgrade", "13", k, NULL) == 400, "Upgrade: h2c: 400");
  ok(unsb_ws_handshake_check("GET", "websockets", "Upgrade", "13", k, NULL) == 400, "a longer token: 400");
  ok(unsb_ws_handshake_check("GET", "websocket", "keep-alive", "13", k, NULL) == 400, "Connection without upgrade: 400");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade-ish", "13", k, NULL) == 400, "a token prefix: 400");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", NULL, NULL) == 400, "no key: 400");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", "AAAAAAAAAAAAAAAAAAAAAAAA", NULL) == 400,
     "a 24-character key of 18 bytes: 400");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", "!!!!!!!!!!!!!!!!!!!!!!==", NULL) == 400,
     "a key that is not base64: 400");
  char big[70000];
  memset(big, 'A', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", big, NULL) == 400, "a 70 KB key: 400");
  ok(unsb_ws_accept_key(big, acc) == -1, "and no accept for it");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "8", k, &why) == 426 && why, "version 8: 426");
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", NULL, k, NULL) == 426, "no version: 426");
}

static void test_rfc_examples(void) {
  unsb_ws_parser *p = unsb_ws_parser_new(0, UNSB_WS_SERVER);
  unsb_ws_msg m;
  unsigned code;
  /* RFC 6455 §5.7: a single-frame masked text message */
  const unsigned char hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
  ok(feed(p, hello, sizeof hello, &m, &code) == 1 && m.opcode == UNSB_WS_TEXT && m.len == 5 &&
         memcmp(m.data, "Hello", 5) == 0, "the RFC's masked \"Hello\"");
  /* a fragmented text message, a ping between its fragments */
  unsigned char buf[64];
  size_t n = frame(buf, 0x01, "Hel", 3);
  n += frame(buf + n, 0x89, "Hello", 5);
  n += frame(buf + n, 0x80, "lo", 2);
  size_t used = 0, off = 0;
  ok(unsb_ws_parse(p, buf, n, &used, &m) == 1 && m.opcode == UNSB_WS_PING && m.len == 5, "a ping between fragments");
  off += used;
  ok(unsb_ws_parse(p, buf + off, n - off, &used, &m) == 1 && m.opcode == UNSB_WS_TEXT && m.len == 5 &&
         memcmp(m.data, "Hello", 5) == 0 && off + used == n, "then the whole message");
  n = frame(buf, 0x8A, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UNSB_WS_PONG && m.len == 0, "an empty pong");
  n = frame(buf, 0x82, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UNSB_WS_BINARY && m.len == 0, "an empty binary message");
  ok(!unsb_ws_parser_closed(p), "not closed yet");
  n = frame(buf, 0x88, "\x03\xe8" "bye", 5);
  ok(feed(p, buf, n, &m, &code) == 1 && m.opcode == UNSB_WS_CLOSE && m.close_code == 1000 && m.len == 3 &&
         memcmp(m.data, "bye", 3) == 0 && unsb_ws_parser_closed(p), "a close with code and reason");
  ok(feed(p, buf, 0, &m, &code) == 0, "nothing more after it: no error");
  unsb_ws_parser_free(p);
  p = unsb_ws_parser_new(0, UNSB_WS_SERVER);
  n = frame(buf, 0x88, NULL, 0);
  ok(feed(p, buf, n, &m, &code) == 1 && m.close_code == UNSB_WS_CLOSE_NO_STATUS, "an empty close: 1005");
  unsb_ws_parser_free(p);
}

/* The same stream of frames, whole and byte by byte, gives the same messages. */
static size_t stream_messages(const unsigned char *in, size_t len, size_t step, int *ops, size_t *lens) {
  unsb_ws_parser *p = unsb_ws_parser_new(128 * 1024, UNSB_WS_SERVER);
  size_t count = 0, off = 0;
  unsb_ws_msg m;
  while (off < len && count < 16) {
    size_t chunk = len - off < step ? len - off : step, used = 0;
    int r = unsb_ws_parse(p, in + off, chunk, &used, &m);
    if (r < 0) break;
    if (r == 1) {
      ops[count] = m.opcode;
      lens[count] = m.len;
      int good = 1;
      for (size_t i = 0; i < m.len && m.opcode == UNSB_WS_BINARY; i++) good &= m.data[i] == (unsigned char)(i * 7);
      if (!good) lens[count] = (size_t)-1;
      count++;
    }
    off += used;
  }
  unsb_ws_parser_free(p);
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
  ok(c1 == 5 && ops1[0] == UNSB_WS_TEXT && l1[0] == 2 && ops1[1] == UNSB_WS_PING && ops1[2] == UNSB_WS_BINARY &&
         l1[2] == 300 && ops1[3] == UNSB_WS_BINARY && l1[3] == big && ops1[4] == UNSB_WS_CLOSE,
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
  unsb_ws_parser *p = unsb_ws_parser_new(0, UNSB_WS_SERVER);
  unsb_ws_msg m;
  unsigned code;
  n = frame(b, 0x01, "\xc3", 1);
  n += frame(b + n, 0x80, "\xa9", 1);
  ok(feed(p, b, n, &m, &code) == 1 && m.len == 2 && memcmp(m.data, "\xc3\xa9", 2) == 0,
     "UTF-8 split between fragments is accepted whole");
  unsb_ws_parser_free(p);
  ok(unsb_ws_parser_new((size_t)65 * 1024 * 1024, UNSB_WS_SERVER) == NULL, "a limit over 64 MiB is refused");
}

static void test_encoder(void) {
  unsigned char h[UNSB_WS_HEADER_MAX];
  ok(unsb_ws_frame_header(h, UNSB_WS_BINARY, 0, NULL) == 2 && h[0] == 0x82 && h[1] == 0, "empty binary: 2 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_TEXT, 125, NULL) == 2 && h[1] == 125, "125: 2 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_TEXT, 126, NULL) == 4 && h[1] == 126 && h[2] == 0 && h[3] == 126, "126: 4 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_BINARY, 65535, NULL) == 4 && h[2] == 0xFF && h[3] == 0xFF, "65535: 4 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_BINARY, 65536, NULL) == 10 && h[1] == 127 && h[7] == 1 && h[8] == 0, "65536: 10 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_CLOSE, 126, NULL) == 0, "a 126-byte close: refused");
  ok(unsb_ws_frame_header(h, UNSB_WS_CONT, 1, NULL) == 0 && unsb_ws_frame_header(h, 3, 1, NULL) == 0 &&
         unsb_ws_frame_header(h, 0xB, 1, NULL) == 0, "continuation and unknown opcodes: refused");
  ok(unsb_ws_frame_header(h, UNSB_WS_PING, 125, NULL) == 2 && h[0] == 0x89, "a 125-byte ping");
  unsigned char c[UNSB_WS_CONTROL_MAX];
  ok(unsb_ws_close_payload(c, 1000, NULL) == 2 && c[0] == 0x03 && c[1] == 0xE8, "a close without reason");
  char reason[300];
  memset(reason, 'a', 122);
  strcpy(reason + 122, "\xc3\xa9 and more");
  size_t n = unsb_ws_close_payload(c, 1002, reason);
  ok(n == 124, "a long reason is cut before a split character (%zu)", n);
  memset(reason, 'b', sizeof reason - 1);
  reason[sizeof reason - 1] = '\0';
  ok(unsb_ws_close_payload(c, 1009, reason) == UNSB_WS_CONTROL_MAX, "an ASCII reason fills 125 bytes");
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
    unsb_ws_parser *p = unsb_ws_parser_new(256 + (size_t)(rand() % 1024), UNSB_WS_SERVER);
    if (!p) BAIL_OUT("out of memory");
    size_t off = 0;
    int r = 0, steps = 0;
    while (off < len && steps++ < 1000) {
      size_t piece = 1 + (size_t)(rand() % 64), used = 0;
      if (piece > len - off) piece = len - off;
      unsb_ws_msg m;
      r = unsb_ws_parse(p, buf + off, piece, &used, &m);
      if (r < 0) { errors++; break; }
      if (used > piece || (r == 0 && used != piece) || (r == 1 && m.len > 1280)) bad++;
      off += used;
    }
    unsb_ws_parser_free(p);
  }
  ok(bad == 0, "3000 rounds of garbage: answers always within bounds");
  ok(errors > 1000, "and most of them refused (%d)", errors);
}

/* ---------------------------------------------------------------------
** the client's side
** ------------------------------------------------------------------- */

static void test_client_frames(void) {
  unsb_ws_parser *p = unsb_ws_parser_new(0, UNSB_WS_CLIENT);
  unsb_ws_msg m;
  unsigned code;
  /* RFC 6455 §5.7: a single-frame unmasked text message (a server's) */
  const unsigned char hello[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
  ok(feed(p, hello, sizeof hello, &m, &code) == 1 && m.opcode == UNSB_WS_TEXT && m.len == 5 &&
         memcmp(m.data, "Hello", 5) == 0, "a client reads the RFC's unmasked \"Hello\"");
  unsigned char b[80000];
  size_t n = frame_ext(b, 0x82, 0, "out", 3, 0);
  n += frame_ext(b + n, 0x89, 0, "p", 1, 0);
  n += frame_ext(b + n, 0x88, 0, "\x03\xf3" "boom", 6, 0);
  size_t off = 0, used = 0;
  int r1 = unsb_ws_parse(p, b, n, &used, &m);
  ok(r1 == 1 && m.opcode == UNSB_WS_BINARY && m.len == 3, "binary output");
  off += used;
  ok(unsb_ws_parse(p, b + off, n - off, &used, &m) == 1 && m.opcode == UNSB_WS_PING, "a ping");
  off += used;
  ok(unsb_ws_parse(p, b + off, n - off, &used, &m) == 1 && m.opcode == UNSB_WS_CLOSE &&
         m.close_code == 1011 && m.len == 4, "a close 1011 with its reason");
  unsb_ws_parser_free(p);
  /* a masked frame from the server: 1002 (§5.1) */
  p = unsb_ws_parser_new(0, UNSB_WS_CLIENT);
  n = frame(b, 0x81, "Hello", 5);
  ok(feed(p, b, n, &m, &code) == -1 && code == 1002, "a masked server frame: refused with 1002");
  unsb_ws_parser_free(p);
  /* the limit is checked before a byte is stored, as on the server */
  p = unsb_ws_parser_new(1000, UNSB_WS_CLIENT);
  n = frame_ext(b, 0x82, 0, NULL, 70000, 0);
  ok(feed(p, b, n, &m, &code) == -1 && code == 1009, "a message over the client's limit: 1009");
  unsb_ws_parser_free(p);
  /* byte by byte: the same */
  memset(b + 100, 'z', 70000);
  n = frame_ext(b, 0x82, 0, b + 100, 70000, 0);
  p = unsb_ws_parser_new(128 * 1024, UNSB_WS_CLIENT);
  size_t got = 0;
  int whole = 0;
  for (size_t i = 0; i < n; i++)
    if (unsb_ws_parse(p, b + i, 1, &used, &m) == 1) {
      got++;
      whole = m.len == 70000 && m.data[0] == 'z' && m.data[69999] == 'z';
    }
  ok(got == 1 && whole, "a 70000-byte server frame byte by byte: one whole message");
  unsb_ws_parser_free(p);
}

/* A client's own frames: masked, and read back by a server's parser. */
static void test_client_encoder(void) {
  unsigned char h[UNSB_WS_HEADER_MAX], buf[70100];
  ok(unsb_ws_frame_header(h, UNSB_WS_TEXT, 5, MASK) == 6 && h[0] == 0x81 && h[1] == 0x85 &&
         memcmp(h + 2, MASK, 4) == 0, "a masked 5-byte header: 6 bytes, the mask last");
  unsigned char hello[5] = {'H', 'e', 'l', 'l', 'o'};
  unsb_ws_mask(hello, 5, MASK);
  const unsigned char rfc[5] = {0x7f, 0x9f, 0x4d, 0x51, 0x58};
  ok(memcmp(hello, rfc, 5) == 0, "masking \"Hello\" gives the RFC's bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_BINARY, 126, MASK) == 8 && h[1] == (0x80 | 126), "126: 8 bytes");
  ok(unsb_ws_frame_header(h, UNSB_WS_BINARY, 65536, MASK) == 14 && h[1] == (0x80 | 127) &&
         memcmp(h + 10, MASK, 4) == 0, "65536: 14 bytes");
  size_t len = 70000, hl = unsb_ws_frame_header(buf, UNSB_WS_BINARY, len, MASK);
  for (size_t i = 0; i < len; i++) buf[hl + i] = (unsigned char)(i * 7);
  unsb_ws_mask(buf + hl, len, MASK);
  unsb_ws_parser *p = unsb_ws_parser_new(128 * 1024, UNSB_WS_SERVER);
  unsb_ws_msg m;
  unsigned code;
  int same = feed(p, buf, hl + len, &m, &code) == 1 && m.opcode == UNSB_WS_BINARY && m.len == len;
  for (size_t i = 0; same && i < len; i++) same = m.data[i] == (unsigned char)(i * 7);
  ok(same, "a client's 70000-byte frame, read by a server's parser, is the same bytes");
  unsb_ws_parser_free(p);
}

static void test_client_handshake(void) {
  char k1[UNSB_WS_KEY_LEN + 1], k2[UNSB_WS_KEY_LEN + 1], acc[UNSB_WS_ACCEPT_LEN + 1];
  ok(unsb_ws_client_key(k1) == 0 && unsb_ws_client_key(k2) == 0 && strlen(k1) == 24 &&
         strcmp(k1, k2) != 0, "a fresh key each time (%s)", k1);
  ok(unsb_ws_handshake_check("GET", "websocket", "Upgrade", "13", k1, NULL) == 0 &&
         unsb_ws_accept_key(k1, acc) == 0, "which a server accepts");
  const char *key = "dGhlIHNhbXBsZSBub25jZQ==", *why = NULL;
  int status = -1;
  const char *good = "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\n"
                     "CONNECTION: keep-alive, Upgrade\r\n"
                     "Sec-WebSocket-Accept:  s3pPLMBiTxaQ9kYGzzhZRbK+xOo= \r\n\r\n";
  ok(unsb_ws_reply_check(good, strlen(good), key, &status, &why) == 0 && status == 101 && !why,
     "the RFC's reply, names in any case, values in lists");
  struct { const char *head; int status; const char *what; } bad[] = {
    {"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", 200, "a 200"},
    {"HTTP/1.0 404 Not Found\r\n\r\n", 404, "an HTTP/1.0 404"},
    {"SSH-2.0-OpenSSH_9.2\r\n\r\n", 0, "not HTTP"},
    {"HTTP/1.1 1O1 x\r\n\r\n", 0, "a status that is not digits"},
    {"HTTP/1.1 1010 x\r\n\r\n", 0, "a four-digit status"},
    {"HTTP/1.0 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n", 101, "a 101 over HTTP/1.0"},
    {"HTTP/1.1 101 x\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n", 101, "no Upgrade"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n", 101, "no Connection"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 101, "no accept"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: d3JvbmcgYWNjZXB0IGtleSE=\r\n\r\n", 101, "another key's accept"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
     "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n", 101, "an extension"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
     "Sec-WebSocket-Protocol: chat\r\n\r\n", 101, "a subprotocol"},
    {"HTTP/1.1 101 x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     "X-Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n", 101, "the accept in another header"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why = NULL;
    int rc = unsb_ws_reply_check(bad[i].head, strlen(bad[i].head), key, &status, &why);
    ok(rc == -1 && status == bad[i].status && why, "%s: refused, status %d (%s)", bad[i].what,
       status, why ? why : "no reason");
  }
  ok(unsb_ws_reply_check("HTTP/1.1", 8, key, &status, &why) == -1 && status == 0, "a cut status line");
}

int main(void) {
  test_handshake();
  test_rfc_examples();
  test_splits();
  test_hostile_headers();
  test_hostile_payloads();
  test_encoder();
  test_garbage();
  test_client_frames();
  test_client_encoder();
  test_client_handshake();
  return tap_done();
}
