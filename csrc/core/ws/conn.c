/*
** The terminal's connection as the loop runs it (see ws/conn.h): its
** socket watched for what the state wants (input unless the received
** queue is full, output while bytes wait), the reply to the upgrade read
** and checked (core/ws/ws.h), frames parsed and queued, ours written, and
** the end. Its due time is the upgrade's deadline, or "now" when TLS may
** hold decrypted bytes the socket no longer signals (after a round's read
** budget, after a drained queue lets reading resume). Nothing here calls
** back into the caller: these callbacks fill the object's state and queue
** the waiter's token.
*/
#include "core/ws/conn.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/digest.h"

#define RECV_CHUNK (16 * 1024)

/* ---------------------------------------------------------------------
** state
** ------------------------------------------------------------------- */

static unsb_wsc *of_source(unsb_loop_source *s) {
  return (unsb_wsc *)((char *)s - offsetof(unsb_wsc, src));
}

void unsb_wsc_wake(unsb_wsc *ws) {
  if (ws->token) unsb_loop_notify(ws->loop, ws->token);
}

void unsb_wsc_fail(unsb_wsc *ws, unsb_kind kind, const char *fmt, ...) {
  va_list ap;
  if (ws->fail.kind != UNSB_OK) return;
  ws->fail.kind = kind;
  va_start(ap, fmt);
  vsnprintf(ws->fail.message, sizeof ws->fail.message, fmt, ap);
  va_end(ap);
}

static void watch(unsb_wsc *ws, short events) {
  if (ws->fd < 0 || events == ws->watched) return;
  unsb_loop_watch(ws->loop, &ws->src, ws->fd, events);
  ws->watched = events;
}

/* What the socket is watched for. */
void unsb_wsc_rewatch(unsb_wsc *ws) {
  short ev = 0;
  if (ws->state == UPGRADING || ws->state == OPEN) {
    if (!ws->rx_paused) ev |= POLLIN;
    if (ws->tx.head) ev |= POLLOUT;
  }
  watch(ws, ev);
}

/* The end, for good: the socket is forgotten before libcurl closes it (its
** number may be reused by the next socket of anyone). */
void unsb_wsc_end(unsb_wsc *ws) {
  if (ws->state == ENDED) return;
  ws->state = ENDED;
  watch(ws, 0);
  ws->fd = -1;
  ws->src.due_ms = -1;
  unsb_http_close(ws->x);
  ws->x = NULL;
  unsb_wsc_wake(ws);
}

/* ---------------------------------------------------------------------
** writing
** ------------------------------------------------------------------- */

/* Queues one frame of ours (masked, as a client's must be). */
int unsb_wsc_queue_frame(unsb_wsc *ws, int opcode, const void *data, size_t len, size_t counted) {
  unsigned char mask[4], head[UNSB_WS_HEADER_MAX];
  if (unsb_random_bytes(mask, sizeof mask) != 0) return -1;
  size_t hl = unsb_ws_frame_header(head, opcode, len, mask);
  msg *m = hl ? msg_new(opcode == UNSB_WS_TEXT, hl + len) : NULL;
  if (!m) return -1;
  memcpy(m->data, head, hl);
  if (len) memcpy(m->data + hl, data, len);
  unsb_ws_mask(m->data + hl, len, mask);
  m->payload = counted;
  q_push(&ws->tx, m, counted);
  return 0;
}

/* Our one close frame (nothing may follow it: the server would call any
** byte after it a protocol error). */
void unsb_wsc_queue_close(unsb_wsc *ws, unsigned code, const char *reason) {
  unsigned char pl[UNSB_WS_CONTROL_MAX];
  size_t n = code == UNSB_WS_CLOSE_NO_STATUS ? 0 : unsb_ws_close_payload(pl, code, reason);
  if (ws->close_queued) return;
  ws->close_queued = 1;
  if (unsb_wsc_queue_frame(ws, UNSB_WS_CLOSE, pl, n, 0) != 0) {
    unsb_wsc_fail(ws, UNSB_ENOMEM, "out of memory");
    unsb_wsc_end(ws);
  }
}

/* Writes what the socket takes; a message stays at the head (the same
** bytes, as TLS wants them again) until it is all out. Once the close
** answering the server's is out, the terminal has ended. */
void unsb_wsc_flush(unsb_wsc *ws) {
  unsb_error err;
  msg *m;
  while ((m = ws->tx.head) && ws->state != ENDED && ws->state != CONNECTING) {
    size_t n = 0;
    int rc = unsb_http_send(ws->x, m->data + m->off, m->len - m->off, &n, &err);
    if (rc < 0) {
      unsb_wsc_fail(ws, UNSB_ETRANSPORT, "terminal: writing to %s failed", ws->target.url);
      unsb_wsc_end(ws);
      return;
    }
    m->off += n;
    if (m->off < m->len) break;   /* wait for POLLOUT */
    free(q_pop(&ws->tx, m->payload));
  }
  if (!ws->tx.head && ws->peer_closed) unsb_wsc_end(ws);
  unsb_wsc_rewatch(ws);
}

/* ---------------------------------------------------------------------
** reading
** ------------------------------------------------------------------- */

static void queue_in(unsb_wsc *ws, int text, const unsigned char *data, size_t len) {
  msg *m = msg_new(text, len);
  if (!m) {
    unsb_wsc_fail(ws, UNSB_ENOMEM, "out of memory");
    unsb_wsc_end(ws);
    return;
  }
  if (len) memcpy(m->data, data, len);
  q_push(&ws->rx, m, len);
  if (ws->rx.bytes > UNSB_WSC_RX_CAP) ws->rx_paused = 1;
  unsb_wsc_wake(ws);
}

/* The server broke the protocol: our close carries the code, and the
** terminal ends once it is out. */
static void protocol_error(unsb_wsc *ws, unsigned code, const char *why) {
  unsb_wsc_fail(ws, UNSB_EPROTOCOL, "terminal: %s (close %u)", why, code);
  unsb_wsc_queue_close(ws, code, why);
  ws->peer_closed = 1;   /* nothing more is read; end after the close */
  unsb_wsc_wake(ws);
}

static void on_message(unsb_wsc *ws, const unsb_ws_msg *m) {
  switch (m->opcode) {
  case UNSB_WS_TEXT:
    if (m->len > UNSB_WS_MAX_MESSAGE) {
      unsb_wsc_fail(ws, UNSB_EPROTOCOL, "terminal control message over %u bytes",
                    UNSB_WS_MAX_MESSAGE);
      protocol_error(ws, UNSB_WS_CLOSE_TOO_BIG, "too big");
      return;
    }
    queue_in(ws, 1, m->data, m->len);
    return;
  case UNSB_WS_BINARY:
    if (m->len) queue_in(ws, 0, m->data, m->len);
    return;
  case UNSB_WS_PING:
    if (ws->close_queued) return;   /* too late for a pong */
    if (unsb_wsc_queue_frame(ws, UNSB_WS_PONG, m->data, m->len, 0) != 0)
      unsb_wsc_fail(ws, UNSB_ENOMEM, "out of memory");
    return;
  case UNSB_WS_CLOSE:
    ws->close_code = (int)m->close_code;
    snprintf(ws->close_reason, sizeof ws->close_reason, "%.*s", (int)(m->len < 120 ? m->len : 120),
             (const char *)m->data);
    ws->peer_closed = 1;
    /* answered (its code echoed), unless ours is already on its way */
    unsb_wsc_queue_close(ws, m->close_code, "");
    unsb_wsc_wake(ws);
    return;
  default:   /* a pong */
    return;
  }
}

static void frames_in(unsb_wsc *ws, const unsigned char *p, size_t n) {
  while (n > 0 && !ws->peer_closed && ws->state == OPEN) {
    unsb_ws_msg m;
    size_t used = 0;
    int rc = unsb_ws_parse(ws->parser, p, n, &used, &m);
    if (rc < 0) {
      const char *why;
      unsigned code = unsb_ws_parser_error(ws->parser, &why);
      protocol_error(ws, code, why);
      return;
    }
    if (rc == 0) return;
    on_message(ws, &m);
    p += used;
    n -= used;
  }
}

/* The reply's head, up to its blank line; what follows it is frames. */
static void head_in(unsb_wsc *ws, const unsigned char *p, size_t n) {
  size_t room = UNSB_WSC_HEAD_MAX - ws->head_len, take = n < room ? n : room;
  const char *why = NULL;
  memcpy(ws->head + ws->head_len, p, take);
  ws->head_len += take;
  char *end_of_head = memmem(ws->head, ws->head_len, "\r\n\r\n", 4);
  if (!end_of_head) {
    if (ws->head_len == UNSB_WSC_HEAD_MAX) {
      unsb_wsc_fail(ws, UNSB_ETRANSPORT,
                    "terminal handshake with %s failed: a reply head over %d bytes",
                    ws->target.url, UNSB_WSC_HEAD_MAX);
      unsb_wsc_end(ws);
    }
    return;
  }
  size_t hl = (size_t)(end_of_head + 4 - ws->head), rest = ws->head_len - hl;
  int status = 0;
  if (unsb_ws_reply_check(ws->head, hl, ws->key, &status, &why) != 0) {
    if (status && status != 101) {
      ws->http_status = status;
      unsb_wsc_fail(ws, UNSB_ETRANSPORT, "%s answered the upgrade with HTTP %d", ws->target.url,
                    status);
    } else {
      unsb_wsc_fail(ws, UNSB_ETRANSPORT, "terminal handshake with %s failed: %s", ws->target.url,
                    why);
    }
    unsb_wsc_end(ws);
    return;
  }
  ws->state = OPEN;
  ws->upgraded = 1;
  ws->src.due_ms = -1;
  unsb_wsc_wake(ws);
  /* frames the server sent right behind its reply */
  frames_in(ws, (const unsigned char *)ws->head + hl, rest);
  frames_in(ws, p + take, n - take);
  free(ws->head);
  ws->head = NULL;
}

/* Reads what the socket has, at most a round's budget and while the
** received queue has room. */
static void pump_in(unsb_wsc *ws) {
  unsigned char buf[RECV_CHUNK];
  size_t total = 0;
  unsb_error err;
  while ((ws->state == UPGRADING || ws->state == OPEN) && !ws->rx_paused && !ws->peer_closed) {
    if (total >= UNSB_WSC_READ_BUDGET) {
      ws->src.due_ms = unsb_monotonic_ms();   /* the rest at the next round */
      break;
    }
    size_t n = 0;
    int rc = unsb_http_recv(ws->x, buf, sizeof buf, &n, &err);
    if (rc == 0) break;
    if (rc < 0 || n == 0) {   /* broken, or closed by the peer */
      if (ws->state == UPGRADING)
        unsb_wsc_fail(ws, UNSB_ETRANSPORT, "terminal: %s closed during the handshake",
                      ws->target.url);
      unsb_wsc_end(ws);
      return;
    }
    total += n;
    if (ws->state == UPGRADING) head_in(ws, buf, n);
    else frames_in(ws, buf, n);
  }
}

/* ---------------------------------------------------------------------
** the loop's callbacks
** ------------------------------------------------------------------- */

void unsb_wsc_on_fd(unsb_loop_source *s, int fd, short revents) {
  unsb_wsc *ws = of_source(s);
  if (fd == ws->extra_fd) {
    ws->extra_ready = 1;
    unsb_loop_watch(ws->loop, &ws->src, fd, 0);   /* once: the caller reads it */
    unsb_wsc_wake(ws);
    return;
  }
  if (fd != ws->fd) return;
  if (revents & (POLLOUT | POLLERR | POLLHUP)) unsb_wsc_flush(ws);
  if (revents & (POLLIN | POLLERR | POLLHUP)) pump_in(ws);
  if (ws->tx.head) unsb_wsc_flush(ws);   /* a pong or a close that reading queued */
  unsb_wsc_rewatch(ws);
}

void unsb_wsc_on_due(unsb_loop_source *s) {
  unsb_wsc *ws = of_source(s);
  if (ws->state == CONNECTING || ws->state == UPGRADING) {
    if (unsb_monotonic_ms() < ws->deadline_ms) {
      ws->src.due_ms = ws->deadline_ms;
      return;
    }
    unsb_wsc_fail(ws, UNSB_ETIMEOUT, "terminal: no answer from %s within %ld ms", ws->target.url,
                  ws->timeout_ms);
    unsb_wsc_end(ws);
    return;
  }
  if (ws->state == OPEN) pump_in(ws);
  unsb_wsc_rewatch(ws);
}
