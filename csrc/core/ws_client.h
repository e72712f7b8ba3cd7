/*
** A session's terminal (spec §5.4, the project's contract in
** docs/internals.md): one WebSocket to GET /sessions/{id}/shell, through
** libwebsockets (loaded on first use, csrc/lazy/websockets.c; no framing
** written here). Binary messages are terminal bytes both ways; text
** messages are JSON control, which this Lua-free core never parses: it
** hands text messages whole to the caller (the binding decodes them with
** cjson) and writes the one it sends, the resize, with snprintf.
**
** The handshake is signed like every request of the client: Authorization,
** X-Timestamp, X-Signature over "<ts>:GET:/sessions/{id}/shell:" (sign.h).
** TLS (wss) verifies the certificate and the host name, always; ca_file
** replaces the system store, as for the HTTP client.
**
** One connection per object, one lws context each, serviced only from the
** caller's thread: unsb_ws_service() polls lws's sockets and one extra fd
** of the caller (stdin for `un`) together, so an interactive loop sleeps
** in one poll() and never busy-waits. Memory is bounded both ways: input
** waiting to be written is capped (a send beyond the cap fails with
** "terminal input queue full"), and received output beyond
** UNSB_WS_RX_CAP stops reading from the socket until the caller drains it.
*/
#ifndef UNSB_WS_CLIENT_H
#define UNSB_WS_CLIENT_H

#include <stddef.h>

#include "core/credentials.h"
#include "core/error.h"

/* A text (control) message longer than this is a protocol error; the
** server closes client messages over it with 1009, so input is sent in
** binary messages of at most UNSB_WS_CHUNK bytes. */
#define UNSB_WS_MAX_MESSAGE (64 * 1024)
#define UNSB_WS_CHUNK (16 * 1024)
#define UNSB_WS_DEFAULT_MAX_INPUT (256 * 1024)
#define UNSB_WS_RX_CAP (1024 * 1024)
/* cols and rows of a resize */
#define UNSB_WS_MIN_SIZE 1
#define UNSB_WS_MAX_SIZE 1000

typedef struct unsb_ws unsb_ws;

typedef struct {
  const char *base_url;            /* the client's URL: http(s)://host[:port][/prefix] */
  const char *session_id;
  const unsb_credentials *cred;    /* signs the handshake; not kept */
  const char *ca_file;             /* NULL = the system store */
  long connect_timeout_ms;         /* > 0: connection and handshake */
  size_t max_input;                /* 0 = UNSB_WS_DEFAULT_MAX_INPUT */
  int debug;                       /* non-zero: libwebsockets logs to stderr */
} unsb_ws_config;

/* Connects and completes the upgrade, blocking up to connect_timeout_ms
** (and giving up on the interrupt flag). NULL with err on failure; when
** the server answered the upgrade with an HTTP status other than 101,
** *http_status is that status (401, 404, 409...), else 0. */
unsb_ws *unsb_ws_open(const unsb_ws_config *cfg, int *http_status, unsb_error *err);

/* Queues keyboard bytes (binary messages of at most UNSB_WS_CHUNK). -1
** with err when the terminal has ended or the queue would pass its cap
** (nothing is queued then). */
int unsb_ws_send(unsb_ws *ws, const void *data, size_t len, unsb_error *err);

/* Queues {"type":"resize","cols":C,"rows":R}; both 1..1000 (validation
** error otherwise). */
int unsb_ws_resize(unsb_ws *ws, int cols, int rows, unsb_error *err);

/* Runs the connection for up to timeout_ms (0: only what is ready now):
** returns 1 as soon as a message is ready or the terminal has ended, 0
** when the time is up, the extra fd is readable (*extra_ready = 1; also
** on hang-up) or a signal interrupted the wait (so the caller can act on
** SIGWINCH at once). extra_fd < 0: none. -1 with err only for a failed
** poll() or a pending interrupt (kind interrupted, consumed). */
int unsb_ws_service(unsb_ws *ws, int timeout_ms, int extra_fd, int *extra_ready,
                    unsb_error *err);

/* The oldest received message, whole for text, a piece as it came for
** binary: 1 with *data (malloc'd, the caller frees; NUL-terminated for
** convenience), *len and *text set, or 0 when none is queued. */
int unsb_ws_next(unsb_ws *ws, char **data, size_t *len, int *text);

/* 0 while open; once it has ended: 1 when it closed normally (close code
** 1000 from the server, or a close this side asked for), -1 with err
** otherwise (connection lost, a close code other than 1000, a protocol
** error). Queued messages can still be taken after the end. */
int unsb_ws_ended(const unsb_ws *ws, unsb_error *err);

/* The close code the server sent (0: none yet). */
int unsb_ws_close_code(const unsb_ws *ws);

/* Bytes of input queued and not yet written. */
size_t unsb_ws_pending_input(const unsb_ws *ws);

/* Sends a close frame (1000) after the queued input, waits up to
** wait_ms for the server's answer, then frees everything. NULL is fine. */
void unsb_ws_close(unsb_ws *ws, int wait_ms);

#endif
