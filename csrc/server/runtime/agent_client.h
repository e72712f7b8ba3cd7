/*
** The server's side of the unsandboxd-agent runtime protocol
** (docs/internals.md, "unsandboxd-agent", mode runtime): one request
** socket per request, handed to the agent over its SOCK_SEQPACKET control
** channel; one request frame; event frames; one final frame.
**
** Everything the agent sends is untrusted input: sandboxed code runs as
** the agent's uid and, should it ever subvert the agent, could make it
** lie. So every frame is bounded (8 MiB, the agent's own limit), parsed
** strictly (compact JSON objects with exactly the documented keys,
** duplicate keys refused), every wait has a deadline, and nothing here
** can block a caller past it or crash the server: a broken answer is a
** status code, never an abort.
**
** Lua-free and registry-free (runtime.c holds the registry): the
** functions take an fd of the control channel and nothing else, so the
** C tests drive them against a fake agent too.
*/
#ifndef UX_RUNTIME_AGENT_CLIENT_H
#define UX_RUNTIME_AGENT_CLIENT_H

#include <stddef.h>
#include <jansson.h>

#include "server/runtime/runtime.h"   /* the UX_RTC_* codes */

#define UX_AGENT_FRAME_MAX   (8u << 20)    /* bytes before the "\n" */
#define UX_AGENT_EVENTS_MAX  (32u << 20)   /* event bytes in one answer */

/* Makes a request socket pair, sends the agent's end (and data_fd when
** > 0) over `control` and returns the server's end (non-blocking,
** close-on-exec), or -1 with err when the control channel is gone or
** stays full until deadline_ms (ux_now_ms clock). */
int ux_agent_open(int control, int data_fd, long deadline_ms, char *err, size_t errlen);

/* Writes `req` as one compact frame and "\n" on fd before deadline_ms.
** 0; 1 when the agent closed its side early (it may still have answered:
** read on); -1 with err on a socket error, -2 at the deadline, -3 when
** the request cannot be encoded or is over UX_AGENT_FRAME_MAX. */
int ux_agent_send(int fd, const json_t *req, long deadline_ms, char *err, size_t errlen);

/* Splits what the agent sends into frames. */
typedef struct ux_agent_frames {
  char *buf;
  size_t off, len, cap;      /* unread bytes are buf[off..len) */
  size_t last_len;           /* bytes of the frame last returned */
  int eof;
} ux_agent_frames;

void ux_agent_frames_init(ux_agent_frames *f);
void ux_agent_frames_free(ux_agent_frames *f);

/* Reads what fd has now (non-blocking): 0 (check f->eof), -1 with err on
** a read error or a frame over UX_AGENT_FRAME_MAX. */
int ux_agent_frames_read(ux_agent_frames *f, int fd, char *err, size_t errlen);

/* The next complete frame: 1 and *frame (a JSON object, caller frees),
** 0 when none is complete yet, -1 with err when it is not a JSON object. */
int ux_agent_frames_next(ux_agent_frames *f, json_t **frame, char *err, size_t errlen);

/* What a frame is: 1 a well-formed chunk event, 0 a final frame, -1 with
** err for anything else (an unknown event, a bad channel, extra keys). */
int ux_agent_frame_is_event(const json_t *frame, char *err, size_t errlen);

/* A final frame's meaning: UX_RTC_OK with *result (a new reference to the
** result object), UX_RTC_INVALID / BUSY / INTERNAL with the agent's
** message in err, or UX_RTC_GONE when the frame breaks the protocol. */
int ux_agent_final(const json_t *frame, json_t **result, char *err, size_t errlen);

/* One whole request on the control channel (ux_rt_call's contract, with
** timeout_ms > 0, and at most events_max bytes of events: 0 means
** UX_AGENT_EVENTS_MAX, (size_t)-1 no bound). *broken is set to 1 when the
** agent broke the protocol (as opposed to going away), so the caller can
** stop the runtime. */
int ux_agent_call(int control, const json_t *req, int data_fd, int timeout_ms, size_t events_max,
                  int (*on_event)(void *ctx, const json_t *event), void *ctx,
                  json_t **result, int *broken, char *err, size_t errlen);

#endif
