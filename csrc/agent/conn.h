/*
** One request connection: the stream socket the server sent for a
** request. Input: one frame (compact JSON + "\n", at most AG_FRAME_MAX
** bytes). Output: event frames, then one final frame. The socket is
** non-blocking and output is queued, so neither the runtime's event loop
** nor a handler ever stalls on a server that reads slowly; EOF on input
** after the request means the server closed it (its client went away).
*/
#ifndef AG_CONN_H
#define AG_CONN_H

#include <jansson.h>

#include "agent/buf.h"
#include "agent/err.h"

#define AG_FRAME_MAX (8u << 20)

typedef struct {
  int fd;
  ag_buf in, out;
  size_t out_off;
  int peer_gone;        /* EOF or an error on the socket */
  int final_sent;       /* the final frame is queued */
  unsigned long chunks; /* chunk events queued */
} ag_conn;

void ag_conn_init(ag_conn *c, int fd);   /* sets O_NONBLOCK */
void ag_conn_close(ag_conn *c);

/* A JSON string of bytes that may not be UTF-8 (file names): bad bytes
** become U+FFFD. NULL when out of memory. */
json_t *ag_json_text(const char *s, size_t len);

/* Reads what is there. Returns 1 with *req set when a frame is complete,
** 0 when more is needed, -1 with e set for a bad frame (too large, not an
** object, not JSON), -2 on EOF before a complete frame. */
int ag_conn_read_request(ag_conn *c, json_t **req, ag_err *e);

/* After the request: reads and drops input; sets peer_gone on EOF. */
void ag_conn_watch(ag_conn *c);

/* Queue frames. A frame that cannot be encoded is replaced by an internal
** error final frame. Return 0 or -1 (oom). */
int ag_conn_event_chunk(ag_conn *c, const char *channel, const char *data, size_t len);
int ag_conn_final_ok(ag_conn *c, json_t *result);       /* steals result */
int ag_conn_final_err(ag_conn *c, const ag_err *e);

/* Writes what it can. Returns 1 when the queue is empty, 0 when output is
** pending, -1 when the peer is gone. */
int ag_conn_flush(ag_conn *c);

/* Flushes, waiting at most timeout_ms; for handlers that have nothing else
** to do. Returns 1 flushed, 0 timed out, -1 peer gone. */
int ag_conn_flush_wait(ag_conn *c, int timeout_ms);

#endif
