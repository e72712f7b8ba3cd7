/*
** A session's terminal (spec §5.4, the project's contract in
** docs/internals.md): one WebSocket to GET /sessions/{id}/shell on the
** shared event loop (loop.h), so a caller waiting on it is a token like
** any transfer's and a task yields instead of blocking the thread.
** libcurl makes the connection (a connect_only transfer of a private
** engine, http.h: the resolver, TCP, TLS verified exactly as for every
** request, the client's CA file); the upgrade and the frames are RFC 6455
** from core/ws/ws.h, the module unsandboxd's relay uses too. Binary
** messages are terminal bytes both ways; text messages are JSON control,
** which this Lua-free core never parses: it hands text messages whole to
** the caller (the binding decodes them with cjson) and writes the one it
** sends, the resize, with snprintf.
**
** The handshake is signed like every request of the client: Authorization,
** X-Timestamp, X-Signature over "<ts>:GET:/sessions/{id}/shell:" (sign.h).
**
** Nothing here waits: the object is a source of the loop, which reads and
** writes its socket as it becomes ready and queues the waiter's token
** (unsb_wsc_notify) when a message is queued or the terminal ended;
** whoever drives the loop (a task's scheduler, or a caller that blocks,
** the binding) then looks. Memory is bounded both ways: input waiting to
** be written is capped (a send beyond the cap fails with "terminal input
** queue full"), and past UNSB_WSC_RX_CAP of received output the socket
** is no longer read until the caller drains half of it. One round of the
** loop reads at most UNSB_WSC_READ_BUDGET bytes, so a step stays short
** however fast the shell prints.
*/
#ifndef UNSB_WS_CLIENT_H
#define UNSB_WS_CLIENT_H

#include <stddef.h>

#include "core/credentials.h"
#include "core/error.h"
#include "core/loop.h"

/* Input goes out in binary messages of at most UNSB_WSC_CHUNK bytes (the
** server closes client messages over 64 KiB); a text (control) message
** from the server over UNSB_WS_MAX_MESSAGE (64 KiB) is a protocol error. */
#define UNSB_WSC_CHUNK (16 * 1024)
#define UNSB_WSC_DEFAULT_MAX_INPUT (256 * 1024)
#define UNSB_WSC_RX_CAP (1024 * 1024)
#define UNSB_WSC_READ_BUDGET (64 * 1024)
/* The reply to the upgrade: its status line and headers. */
#define UNSB_WSC_HEAD_MAX (16 * 1024)
/* cols and rows of a resize */
#define UNSB_WSC_MIN_SIZE 1
#define UNSB_WSC_MAX_SIZE 1000

typedef struct unsb_wsc unsb_wsc;

typedef struct {
  const char *base_url;            /* the client's URL: http(s)://host[:port][/prefix] */
  const char *session_id;
  const unsb_credentials *cred;    /* signs the handshake; not kept */
  const char *ca_file;             /* NULL = the system store */
  long connect_timeout_ms;         /* > 0: connection and upgrade together */
  size_t max_input;                /* 0 = UNSB_WSC_DEFAULT_MAX_INPUT */
  unsb_loop *loop;                 /* the shared loop (a reference is taken) */
  int debug;                       /* libcurl's log of the connection on stderr */
} unsb_wsc_config;

/* Starts connecting, without waiting. NULL with err when it cannot start
** (validation: the URL, the id, the timeout; credentials; a CA file that
** cannot be read; memory). */
unsb_wsc *unsb_wsc_open(const unsb_wsc_config *cfg, unsb_error *err);

/* 1 once the upgrade is done, 0 while it is under way, -1 with err when
** it failed (the terminal has ended then): transport (no connection, TLS,
** a refused or malformed upgrade: *http_status is the reply's status when
** the server answered with one other than 101, else 0), timeout (nothing
** within connect_timeout_ms). */
int unsb_wsc_connected(unsb_wsc *ws, int *http_status, unsb_error *err);

/* The waiter: tok is queued on the loop when a message is queued, the
** connection is made or the terminal ends (0 = none). */
void unsb_wsc_notify(unsb_wsc *ws, unsb_token tok);

/* 1 when a message is queued or the terminal has ended. */
int unsb_wsc_ready(unsb_wsc *ws);

/* Watches one fd of the caller (stdin for `un`) on the loop too, until it
** is readable (or hung up): unsb_wsc_fd_ready is then 1 and the waiter is
** woken. fd < 0 stops. -1 with err (validation) when fd is one of the
** loop's own sockets. */
int unsb_wsc_watch_fd(unsb_wsc *ws, int fd, unsb_error *err);
int unsb_wsc_fd_ready(const unsb_wsc *ws);

/* Queues keyboard bytes (binary messages of at most UNSB_WSC_CHUNK) and
** writes what the socket takes now. -1 with err when the terminal is not
** open (ended, closing) or the queue would pass its cap (nothing is queued
** then). */
int unsb_wsc_send(unsb_wsc *ws, const void *data, size_t len, unsb_error *err);

/* Queues {"type":"resize","cols":C,"rows":R}; both 1..1000 (validation
** error otherwise). */
int unsb_wsc_resize(unsb_wsc *ws, int cols, int rows, unsb_error *err);

/* The oldest received message, whole: 1 with *data (malloc'd, the caller
** frees; NUL-terminated for convenience), *len and *text set, or 0 when
** none is queued. */
int unsb_wsc_next(unsb_wsc *ws, char **data, size_t *len, int *text);

/* 0 while open; once it has ended: 1 when it closed normally (close code
** 1000 from the server, or a close this side asked for), -1 with err
** otherwise (connection lost, a close code other than 1000, a protocol
** error, a failed upgrade). Queued messages can still be taken after the
** end. */
int unsb_wsc_ended(unsb_wsc *ws, unsb_error *err);

/* The close code the server sent (0: none yet). */
int unsb_wsc_close_code(const unsb_wsc *ws);

/* Bytes of input queued and not yet written. */
size_t unsb_wsc_pending_input(const unsb_wsc *ws);

/* Asks for the end: a close frame (1000) after the queued input; the
** terminal has ended once the server answered it (or dropped the
** connection). Before the upgrade is done, it ends at once. */
void unsb_wsc_close_start(unsb_wsc *ws);

/* The loop the terminal runs on. */
unsb_loop *unsb_wsc_loop(const unsb_wsc *ws);

/* Closes the connection and frees everything (the waiter's token is
** queued, so a task waiting on it looks again). NULL is fine. */
void unsb_wsc_free(unsb_wsc *ws);

#endif
