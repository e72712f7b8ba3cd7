/*
** RFC 6455 (WebSocket) as pure functions over bytes, for both ends the
** project has: unsandboxd's terminal relay (csrc/server/http/ws_relay.c,
** the server side) and the session terminal's client (core/ws/client.c).
** The opening handshake's checks and keys on both sides, an incremental
** parser of the peer's frames, and the headers of our own frames. No
** sockets and no threads, so every hostile input (masked or unmasked
** frames from the wrong side, oversized or non-minimal lengths, reserved
** bits, fragmented or long control frames, bad close codes, invalid
** UTF-8) is unit-tested and fuzzed on its own (csrc/tests/core_ws_test.c,
** fuzz/ws_frames.c).
**
** Why our own: the server's transport is libmicrohttpd, whose upgrade
** path sends the 101 itself and hands over a socket that already speaks
** WebSocket; the client's connection is libcurl's (connect_only, so TLS
** is verified exactly as for every request), which in Debian's 7.88 has
** no WebSocket framing. One module then serves both.
**
** Policy, stricter than the RFC's minimum where a terminal loses nothing:
** a client's frames must be masked and a server's must not be (1002); no
** extension is negotiated, so a reserved bit is 1002; lengths must use
** the minimal encoding (1002); a message (all its fragments) above the
** parser's limit is 1009; a text message must be valid UTF-8 when
** complete (1007); control frames are at most 125 bytes and never
** fragmented, and may come between fragments. After a close frame any
** further byte is 1002. An error is sticky.
*/
#ifndef UNSB_WS_H
#define UNSB_WS_H

#include <stddef.h>

/* The default limit of one message, all fragments together. */
#define UNSB_WS_MAX_MESSAGE (64u * 1024u)
/* The longest limit a parser takes. */
#define UNSB_WS_LIMIT_MAX (64u * 1024u * 1024u)
/* The longest frame header: 2 + 8 bytes of length + a 4-byte mask. */
#define UNSB_WS_HEADER_MAX 14u
/* A control frame's payload (RFC 6455 §5.5). */
#define UNSB_WS_CONTROL_MAX 125u
/* Sec-WebSocket-Key: the base64 of 16 bytes; Sec-WebSocket-Accept: of 20. */
#define UNSB_WS_KEY_LEN 24u
#define UNSB_WS_ACCEPT_LEN 28u

enum {
  UNSB_WS_CONT = 0x0,
  UNSB_WS_TEXT = 0x1,
  UNSB_WS_BINARY = 0x2,
  UNSB_WS_CLOSE = 0x8,
  UNSB_WS_PING = 0x9,
  UNSB_WS_PONG = 0xA,
};

/* Close codes (RFC 6455 §7.4.1) the parser reports or the ends send. */
enum {
  UNSB_WS_CLOSE_NORMAL = 1000,
  UNSB_WS_CLOSE_GOING_AWAY = 1001,
  UNSB_WS_CLOSE_PROTOCOL = 1002,
  UNSB_WS_CLOSE_NO_STATUS = 1005,
  UNSB_WS_CLOSE_BAD_DATA = 1007,
  UNSB_WS_CLOSE_POLICY = 1008,
  UNSB_WS_CLOSE_TOO_BIG = 1009,
  UNSB_WS_CLOSE_ERROR = 1011,
};

/* Which end a parser or a frame is on: a server reads masked client
** frames and writes unmasked ones; a client the other way round. */
typedef enum { UNSB_WS_SERVER = 0, UNSB_WS_CLIENT = 1 } unsb_ws_side;

/* ---- the opening handshake (handshake.c) ---- */

/* The server's check of a request (§4.2.1), from its headers (NULL when
** absent). Returns 0 when it is a valid WebSocket upgrade, 426 when only
** the version is wrong (answer with "Sec-WebSocket-Version: 13"), 400
** otherwise; *why (when not NULL) is a one-line reason for the reply. */
int unsb_ws_handshake_check(const char *method, const char *upgrade, const char *connection,
                            const char *version, const char *key, const char **why);

/* Sec-WebSocket-Accept for a client key: base64(SHA-1(key + GUID)), 28
** characters and a NUL in out. Returns 0, or -1 when the key is not the
** base64 of 16 bytes (or SHA-1 is unavailable). */
int unsb_ws_accept_key(const char *key, char out[UNSB_WS_ACCEPT_LEN + 1]);

/* A client's fresh Sec-WebSocket-Key: 16 random bytes in base64. 0 or -1. */
int unsb_ws_client_key(char out[UNSB_WS_KEY_LEN + 1]);

/* The client's check of the server's reply (§4.1): head is the status
** line and the header lines, up to and including the blank line. Returns
** 0 for "HTTP/1.1 101" with Upgrade: websocket, Connection: upgrade, the
** Sec-WebSocket-Accept of key and neither an extension nor a subprotocol
** (none was offered); else -1 with *status the reply's HTTP status (0 when
** the status line is not HTTP's) and *why a one-line reason. */
int unsb_ws_reply_check(const char *head, size_t len, const char *key, int *status,
                        const char **why);

/* ---- frames (frames.c) ---- */

/* One complete message from the peer. data points into the parser and
** stays valid until the next unsb_ws_parse or unsb_ws_parser_free. For a
** close, close_code is the peer's code (1005 when it sent none) and
** data/len its reason (valid UTF-8). */
typedef struct {
  int opcode; /* UNSB_WS_TEXT, BINARY, CLOSE, PING or PONG */
  const unsigned char *data;
  size_t len;
  unsigned close_code;
} unsb_ws_msg;

typedef struct unsb_ws_parser unsb_ws_parser;

/* A parser of the frames the peer of `side` sends. max_message: the limit
** of one message, 1 .. UNSB_WS_LIMIT_MAX (0 = UNSB_WS_MAX_MESSAGE). NULL
** when out of memory or the limit is out of range. */
unsb_ws_parser *unsb_ws_parser_new(size_t max_message, unsb_ws_side side);
void unsb_ws_parser_free(unsb_ws_parser *p);

/* Consumes bytes from in[0..len). Returns 1 when a message is complete
** (*msg filled; *used bytes were consumed: call again with the rest), 0
** when all len bytes were consumed and no message is complete yet, -1 on
** a protocol error (*used undefined; see unsb_ws_parser_error). */
int unsb_ws_parse(unsb_ws_parser *p, const unsigned char *in, size_t len, size_t *used,
                  unsb_ws_msg *msg);

/* After -1: the close code to send (1002, 1007, 1009 or 1011) and why. */
unsigned unsb_ws_parser_error(const unsb_ws_parser *p, const char **why);

/* 1 once the peer's close frame was returned. */
int unsb_ws_parser_closed(const unsb_ws_parser *p);

/* Writes the header of one unfragmented frame carrying len payload bytes:
** unmasked when mask is NULL (a server's), else with mask after the length
** (a client's: the payload must then be masked with unsb_ws_mask). Returns
** its size (2 .. UNSB_WS_HEADER_MAX), or 0 for an unknown opcode or a
** control frame longer than 125 bytes. */
size_t unsb_ws_frame_header(unsigned char out[UNSB_WS_HEADER_MAX], int opcode, size_t len,
                            const unsigned char mask[4]);

/* XORs data[0..len) with mask, in place (masking and unmasking alike). */
void unsb_ws_mask(unsigned char *data, size_t len, const unsigned char mask[4]);

/* The payload of a close frame: the code, then the reason cut to fit 125
** bytes at a UTF-8 boundary. Returns its size (2 .. 125). */
size_t unsb_ws_close_payload(unsigned char out[UNSB_WS_CONTROL_MAX], unsigned code,
                             const char *reason);

#endif
