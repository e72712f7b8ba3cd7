/*
** Inside the terminal client (ws/client.c, ws/conn.c): the object and
** its queues, shared by the two files and by nothing else. ws/client.c
** opens it and answers the caller; ws/conn.c is what the loop runs when
** its socket is ready or its time is due (reading, writing, the end).
*/
#ifndef UNSB_WS_CONN_H
#define UNSB_WS_CONN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/http.h"
#include "core/ws/ws.h"
#include "core/ws/client.h"
#include "core/ws/url.h"

typedef struct msg {
  struct msg *next;
  size_t len, off;          /* bytes; off: already written (outgoing) */
  size_t payload;           /* outgoing: input bytes counted against max_input */
  int text;
  unsigned char data[];
} msg;

typedef struct {
  msg *head, *tail;
  size_t bytes;             /* received: payload bytes; outgoing: input bytes */
} queue;

enum { CONNECTING, UPGRADING, OPEN, ENDED };

struct unsb_wsc {
  unsb_loop *loop;
  unsb_loop_source src;
  unsb_http *http;           /* the connection's private engine */
  unsb_http_xfer *x;         /* its connect_only transfer; NULL once ended */
  int state, fd;
  int upgraded;              /* the 101 was accepted (it may have ended since) */
  short watched;             /* the events asked of the loop for fd */
  int extra_fd, extra_ready;
  unsb_token token;
  int64_t deadline_ms;       /* of the upgrade */
  long timeout_ms;
  unsb_ws_target target;
  char key[UNSB_WS_KEY_LEN + 1];
  char *head;                /* the reply's head while UPGRADING */
  size_t head_len;
  unsb_ws_parser *parser;
  queue rx, tx;
  size_t max_input;
  int rx_paused, closing, peer_closed, close_code, http_status;
  int close_queued;          /* our close frame is queued or out */
  char close_reason[124];
  unsb_error fail;           /* kind != UNSB_OK: why it ended badly */
};


/* ---------------------------------------------------------------------
** queues
** ------------------------------------------------------------------- */

static inline msg *msg_new(int text, size_t len) {
  msg *m = malloc(sizeof *m + len + 1);
  if (!m) return NULL;
  memset(m, 0, sizeof *m);
  m->text = text;
  m->len = len;
  m->data[len] = '\0';
  return m;
}

static inline void q_push(queue *q, msg *m, size_t counted) {
  if (q->tail) q->tail->next = m;
  else q->head = m;
  q->tail = m;
  q->bytes += counted;
}

static inline msg *q_pop(queue *q, size_t counted) {
  msg *m = q->head;
  if (!m) return NULL;
  q->head = m->next;
  if (!q->head) q->tail = NULL;
  q->bytes -= counted;
  return m;
}

static inline void q_free(queue *q) {
  msg *m;
  while ((m = q->head)) {
    q->head = m->next;
    free(m);
  }
  q->tail = NULL;
  q->bytes = 0;
}

/* ---------------------------------------------------------------------
** ws/conn.c
** ------------------------------------------------------------------- */

/* Queues tok's wake-up (the waiter looks again). */
void unsb_wsc_wake(unsb_wsc *ws);
/* Records why it failed; the first reason is the one reported. */
__attribute__((format(printf, 3, 4)))
void unsb_wsc_fail(unsb_wsc *ws, unsb_kind kind, const char *fmt, ...);
/* Watches the socket for what the state wants. */
void unsb_wsc_rewatch(unsb_wsc *ws);
/* The end, for good (the connection is closed; queued messages stay). */
void unsb_wsc_end(unsb_wsc *ws);
/* Queues one frame of ours (masked); counted bytes count against max_input. -1: memory. */
int unsb_wsc_queue_frame(unsb_wsc *ws, int opcode, const void *data, size_t len, size_t counted);
void unsb_wsc_queue_close(unsb_wsc *ws, unsigned code, const char *reason);
/* Writes what the socket takes now. */
void unsb_wsc_flush(unsb_wsc *ws);
/* The loop's callbacks of the object's source. */
void unsb_wsc_on_fd(unsb_loop_source *s, int fd, short revents);
void unsb_wsc_on_due(unsb_loop_source *s);

#endif
