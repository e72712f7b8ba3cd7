/*
** The WebSocket terminal relay (spec §5.4): one upgraded socket on one
** side, a PTY master on the other. Binary frames are raw terminal bytes
** both ways; text frames are JSON control messages: from the client
** {"type":"resize","cols":C,"rows":R} (1..1000 each, TIOCSWINSZ on the
** master), from the server {"type":"exit","exit_code":N} when the program
** ended. It knows frames and terminals, nothing of sessions or sandboxes:
** the program's end and exit status come through done_fd and exit_code.
** It runs on the caller's thread until the terminal is over and returns
** why; the caller then ends the program (the relay never kills it) and
** gives the socket back.
*/
#ifndef UX_HTTP_WS_RELAY_H
#define UX_HTTP_WS_RELAY_H

#include <stddef.h>

/* Bytes queued towards the client at most: beyond, the PTY is not read
** (back-pressure on the program), so a client that stops reading costs
** this much memory and no more. */
#define UX_WS_RELAY_OUT_MAX (256u * 1024u)
/* One binary frame carries at most this much terminal output. */
#define UX_WS_RELAY_FRAME (16u * 1024u)
/* Keyboard bytes queued towards the PTY at most (beyond: the socket is not read). */
#define UX_WS_RELAY_IN_MAX (64u * 1024u)
/* A client whose socket accepts no byte for this long is dropped (default). */
#define UX_WS_RELAY_WRITE_MS 10000L
/* exit_code's answer for a re-attachable session that was left. */
#define UX_WS_RELAY_DETACHED (-2)
/* After our close frame, how long the client's close is waited for. */
#define UX_WS_RELAY_CLOSE_MS 2000L

typedef struct ux_ws_relay_cfg {
  int sock;                   /* the upgraded socket (non-blocking) */
  const unsigned char *extra; /* bytes received before the relay began */
  size_t extra_len;
  int stop_fd;                /* readable: the server stops (close 1001); -1 none */
  int pty;                    /* the PTY master (made non-blocking here) */
  int done_fd;                /* readable once the program ended */
  /* After done_fd: the program's exit status, or -1 when it was killed
  ** from outside (its session deleted): then close 1001, no exit message;
  ** or UX_WS_RELAY_DETACHED: a multiplexer's client left a session that
  ** lives on: {"type":"detached"}, close 1000. */
  int (*exit_code)(void *ctx);
  void *ctx;
  long idle_ms;               /* no byte either way for this long: close 1001 */
  long write_ms;              /* 0: UX_WS_RELAY_WRITE_MS */
  size_t max_message;         /* 0: UNSB_WS_MAX_MESSAGE */
} ux_ws_relay_cfg;

/* Why a relay ended. */
enum {
  UX_RELAY_EXITED = 1,        /* the program ended: exit message, close 1000 */
  UX_RELAY_KILLED,            /* it was killed from outside: close 1001 */
  UX_RELAY_CLIENT_CLOSED,     /* the client sent a close frame */
  UX_RELAY_CLIENT_GONE,       /* the socket ended or failed */
  UX_RELAY_PROTOCOL,          /* a protocol error: closed with its code */
  UX_RELAY_IDLE,              /* the idle timeout */
  UX_RELAY_STOPPING,          /* the server stops */
  UX_RELAY_STALLED,           /* the client read nothing for UX_WS_RELAY_WRITE_MS */
  UX_RELAY_ERROR,             /* out of memory or a failed system call */
};

int ux_ws_relay(const ux_ws_relay_cfg *cfg);

/* A readable name of a UX_RELAY_* value, for the log. */
const char *ux_ws_relay_why(int reason);

#endif
