/*
** The server side of RFC 6455 (WebSocket) as pure functions over bytes:
** the opening handshake's checks and Sec-WebSocket-Accept, an incremental
** parser of client frames, and the headers of server frames. No sockets
** and no threads, so every hostile input (unmasked frames, oversized or
** non-minimal lengths, reserved bits, fragmented or long control frames,
** bad close codes, invalid UTF-8) is unit-tested and fuzzed on its own
** (csrc/tests/server_ws_test.c, fuzz/ws_frames.c).
**
** Why our own and not libwebsockets here: the transport is libmicrohttpd,
** whose upgrade path sends the 101 itself and then hands over a socket
** that is already a WebSocket; libwebsockets 4.1.6 can adopt a socket
** only before its handshake (lws_adopt_socket_vhost_readbuf) or as a raw
** one without framing. Clients use libwebsockets (issue 14).
**
** Policy, stricter than the RFC's minimum where a terminal loses nothing:
** every client frame must be masked (1002); no extension is negotiated,
** so a reserved bit is 1002; lengths must use the minimal encoding (1002);
** a message (all its fragments) above the parser's limit is 1009; a text
** message must be valid UTF-8 when complete (1007); control frames are
** at most 125 bytes and never fragmented, and may come between fragments.
** After a close frame any further byte is 1002. An error is sticky.
*/
#ifndef UX_HTTP_WS_H
#define UX_HTTP_WS_H

#include <stddef.h>

/* The default limit of one message, all fragments together. */
#define UX_WS_MAX_MESSAGE (64u * 1024u)
/* The longest server frame header (2 + 8 bytes of length, no mask). */
#define UX_WS_HEADER_MAX 10u
/* A control frame's payload (RFC 6455 §5.5). */
#define UX_WS_CONTROL_MAX 125u

enum {
  UX_WS_CONT = 0x0,
  UX_WS_TEXT = 0x1,
  UX_WS_BINARY = 0x2,
  UX_WS_CLOSE = 0x8,
  UX_WS_PING = 0x9,
  UX_WS_PONG = 0xA,
};

/* Close codes (RFC 6455 §7.4.1) the parser reports. */
enum {
  UX_WS_CLOSE_NORMAL = 1000,
  UX_WS_CLOSE_PROTOCOL = 1002,
  UX_WS_CLOSE_NO_STATUS = 1005,
  UX_WS_CLOSE_BAD_DATA = 1007,
  UX_WS_CLOSE_TOO_BIG = 1009,
};

/* The opening handshake (§4.2.1) from the request's headers (NULL when
** absent). Returns 0 when it is a valid WebSocket upgrade, 426 when only
** the version is wrong (answer with "Sec-WebSocket-Version: 13"), 400
** otherwise; *why (when not NULL) is a one-line reason for the reply. */
int ux_ws_handshake_check(const char *method, const char *upgrade, const char *connection,
                          const char *version, const char *key, const char **why);

/* Sec-WebSocket-Accept for a client key: base64(SHA-1(key + GUID)), 28
** characters and a NUL in out. Returns 0, or -1 when the key is not the
** base64 of 16 bytes (or SHA-1 is unavailable). */
int ux_ws_accept_key(const char *key, char out[29]);

/* One complete message from the client. data points into the parser and
** stays valid until the next ux_ws_parse or ux_ws_parser_free. For a
** close, close_code is the peer's code (1005 when it sent none) and
** data/len its reason (valid UTF-8). */
typedef struct {
  int opcode; /* UX_WS_TEXT, BINARY, CLOSE, PING or PONG */
  const unsigned char *data;
  size_t len;
  unsigned close_code;
} ux_ws_msg;

typedef struct ux_ws_parser ux_ws_parser;

/* max_message: the limit of one message, 1 .. 64 MiB (0 = the default).
** NULL when out of memory or the limit is out of range. */
ux_ws_parser *ux_ws_parser_new(size_t max_message);
void ux_ws_parser_free(ux_ws_parser *p);

/* Consumes bytes from in[0..len). Returns 1 when a message is complete
** (*msg filled; *used bytes were consumed: call again with the rest), 0
** when all len bytes were consumed and no message is complete yet, -1 on
** a protocol error (*used undefined; see ux_ws_parser_error). */
int ux_ws_parse(ux_ws_parser *p, const unsigned char *in, size_t len, size_t *used, ux_ws_msg *msg);

/* After -1: the close code to send (1002, 1007 or 1009) and why. */
unsigned ux_ws_parser_error(const ux_ws_parser *p, const char **why);

/* 1 once the peer's close frame was returned. */
int ux_ws_parser_closed(const ux_ws_parser *p);

/* Writes the header of one unfragmented, unmasked server frame carrying
** len payload bytes; returns its size (2, 4 or 10), or 0 for an unknown
** opcode or a control frame longer than 125 bytes. */
size_t ux_ws_frame_header(unsigned char out[UX_WS_HEADER_MAX], int opcode, size_t len);

/* The payload of a close frame: the code, then the reason cut to fit 125
** bytes at a UTF-8 boundary. Returns its size (2 .. 125). */
size_t ux_ws_close_payload(unsigned char out[UX_WS_CONTROL_MAX], unsigned code, const char *reason);

#endif
