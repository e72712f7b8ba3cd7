/*
** The terminal relay: one poll loop per terminal, on the caller's thread,
** over the socket, the PTY master, the program's done_fd and the
** server's stop_fd. Both directions go through a queue of their own, and
** each queue's fill decides what is polled: output is read from the PTY
** only while the queue towards the client has room for a whole frame
** (back-pressure: the program blocks writing to its terminal, the server
** holds at most UX_WS_RELAY_OUT_MAX), keyboard bytes are read from the
** socket only while the queue towards the PTY has room. Every descriptor
** is non-blocking and every wait has a deadline (idle, a stalled writer,
** the closing handshake), so nothing a client does can hold the thread.
** Frames are parsed by core/ws/frames.c (its strict policy: unmasked,
** oversized or malformed input is a close with the parser's code); what
** is done with a message is here.
*/
#include "server/http/ws_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "core/ws/ws.h"

typedef struct queue {
  unsigned char *p;
  size_t off, len, cap;       /* pending bytes are p[off .. len) */
} queue;

typedef struct relay {
  const ux_ws_relay_cfg *c;
  unsb_ws_parser *parser;
  queue out, in;              /* towards the client (framed), towards the PTY */
  int done, drained, pty_eof, sock_eof, peer_closed, closing, stop_seen, no_read;
  int reason;
  long last_traffic, stall_since, close_deadline, flushed_at, write_ms, done_at;
} relay;

static size_t q_pending(const queue *q) { return q->len - q->off; }

static int q_put(queue *q, const void *data, size_t n) {
  if (n == 0) return 0;                          /* an empty payload: nothing to copy */
  if (q->off == q->len) q->off = q->len = 0;
  if (q->len + n > q->cap && q->off) {           /* compact first */
    memmove(q->p, q->p + q->off, q->len - q->off);
    q->len -= q->off;
    q->off = 0;
  }
  if (q->len + n > q->cap) {
    size_t cap = q->cap ? q->cap : 4096;
    while (cap < q->len + n) cap *= 2;
    unsigned char *p = realloc(q->p, cap);
    if (!p) return -1;
    q->p = p;
    q->cap = cap;
  }
  memcpy(q->p + q->len, data, n);
  q->len += n;
  return 0;
}

/* Queues one unfragmented frame towards the client. */
static int put_frame(relay *r, int opcode, const void *data, size_t n) {
  unsigned char h[UNSB_WS_HEADER_MAX];
  size_t hl = unsb_ws_frame_header(h, opcode, n, NULL);
  if (!hl) return -1;
  if (!q_pending(&r->out)) r->stall_since = ux_now_ms();
  if (q_put(&r->out, h, hl) < 0 || q_put(&r->out, data, n) < 0) {
    r->reason = UX_RELAY_ERROR;
    return -1;
  }
  return 0;
}

/* Queues our close frame (once) and remembers why the relay ends. */
static void start_close(relay *r, unsigned code, const char *why, int reason) {
  if (r->closing) return;
  unsigned char pl[UNSB_WS_CONTROL_MAX];
  size_t n = unsb_ws_close_payload(pl, code, why);
  r->closing = 1;
  if (!r->reason) r->reason = reason;
  r->close_deadline = ux_now_ms() + r->write_ms + UX_WS_RELAY_CLOSE_MS;
  put_frame(r, UNSB_WS_CLOSE, pl, n);
}

/* {"type":"resize","cols":C,"rows":R}: 0 applied, -1 refused (closed). */
static int control(relay *r, const unsigned char *data, size_t len) {
  json_error_t e;
  json_t *j = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &e);
  const char *type = json_string_value(json_object_get(j, "type"));
  json_t *cols = json_object_get(j, "cols"), *rows = json_object_get(j, "rows");
  int ok = json_is_object(j) && type && !strcmp(type, "resize") && json_is_integer(cols) &&
           json_is_integer(rows) && json_object_size(j) == 3;
  json_int_t c = ok ? json_integer_value(cols) : 0, rw = ok ? json_integer_value(rows) : 0;
  json_decref(j);
  if (!ok || c < 1 || c > 1000 || rw < 1 || rw > 1000) {
    start_close(r, 1008, "a control message must be {\"type\":\"resize\",\"cols\":1..1000,"
                "\"rows\":1..1000}", UX_RELAY_PROTOCOL);
    return -1;
  }
  struct winsize ws = { (unsigned short)rw, (unsigned short)c, 0, 0 };
  if (ioctl(r->c->pty, TIOCSWINSZ, &ws) < 0 && errno != EIO)
    fprintf(stderr, "unsandboxd: terminal resize: %s\n", strerror(errno));
  return 0;
}

/* One complete client message. */
static void on_message(relay *r, const unsb_ws_msg *m) {
  r->last_traffic = ux_now_ms();
  if (m->opcode == UNSB_WS_CLOSE) {
    r->peer_closed = 1;
    start_close(r, UNSB_WS_CLOSE_NORMAL, "", UX_RELAY_CLIENT_CLOSED);
    return;
  }
  if (r->closing) return;                        /* nothing more after our close */
  if (m->opcode == UNSB_WS_BINARY) {
    if (q_put(&r->in, m->data, m->len) < 0) start_close(r, 1011, "out of memory", UX_RELAY_ERROR);
  } else if (m->opcode == UNSB_WS_TEXT) {
    control(r, m->data, m->len);
  } else if (m->opcode == UNSB_WS_PING) {
    put_frame(r, UNSB_WS_PONG, m->data, m->len);
  }                                              /* a pong needs nothing */
}

/* Feeds received bytes to the parser and acts on each message. */
static void feed(relay *r, const unsigned char *p, size_t n) {
  while (n > 0 && !r->no_read) {
    size_t used = 0;
    unsb_ws_msg m;
    int rc = unsb_ws_parse(r->parser, p, n, &used, &m);
    if (rc < 0) {
      const char *why = "";
      unsigned code = unsb_ws_parser_error(r->parser, &why);
      start_close(r, code, why, UX_RELAY_PROTOCOL);
      r->no_read = 1;                            /* the rest is not ours to read */
      return;
    }
    if (rc == 0) return;
    on_message(r, &m);
    if (r->peer_closed) r->no_read = 1;
    p += used;
    n -= used;
  }
}

/* ----------------------------------------------------------------- I/O */

static void read_socket(relay *r) {
  unsigned char buf[16384];
  ssize_t k = recv(r->c->sock, buf, sizeof buf, 0);
  if (k > 0) {
    if (!r->no_read) feed(r, buf, (size_t)k);
    return;
  }
  if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
  r->sock_eof = 1;                               /* ended or failed: nothing more to send */
  if (!r->reason) r->reason = UX_RELAY_CLIENT_GONE;
}

static void write_socket(relay *r) {
  queue *q = &r->out;
  ssize_t k = send(r->c->sock, q->p + q->off, q_pending(q), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (k > 0) {
    q->off += (size_t)k;
    r->stall_since = ux_now_ms();
    return;
  }
  if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
  r->sock_eof = 1;
  if (!r->reason) r->reason = UX_RELAY_CLIENT_GONE;
}

static void read_pty(relay *r) {
  unsigned char buf[UX_WS_RELAY_FRAME];
  ssize_t k = read(r->c->pty, buf, sizeof buf);
  if (k > 0) {
    r->last_traffic = ux_now_ms();
    put_frame(r, UNSB_WS_BINARY, buf, (size_t)k);
    return;
  }
  if (k < 0 && errno == EINTR) return;
  if (k < 0 && errno == EAGAIN) {
    /* the program is gone but something still holds the terminal (with
    ** nothing holding it the master reads EIO once drained): what was
    ** written before the end has had its grace to arrive */
    if (r->done && ux_now_ms() - r->done_at >= 200) r->drained = 1;
    return;
  }
  r->pty_eof = 1;                                /* EIO: no process holds the terminal */
}

static void write_pty(relay *r) {
  queue *q = &r->in;
  ssize_t k = write(r->c->pty, q->p + q->off, q_pending(q));
  if (k > 0) q->off += (size_t)k;
  else if (k < 0 && errno != EAGAIN && errno != EINTR) q->off = q->len;  /* nobody reads it */
}

static void read_signal(int fd, int *flag) {
  uint64_t v;
  if (read(fd, &v, sizeof v) >= 0 || errno != EAGAIN) *flag = 1;
}

/* The program ended and its output is all queued: say how, then close. */
static void program_over(relay *r) {
  int code = r->c->exit_code(r->c->ctx);
  if (code == UX_WS_RELAY_DETACHED) {
    static const char msg[] = "{\"type\":\"detached\"}";
    put_frame(r, UNSB_WS_TEXT, msg, sizeof msg - 1);
    start_close(r, UNSB_WS_CLOSE_NORMAL, "", UX_RELAY_EXITED);
    return;
  }
  if (code < 0) {
    start_close(r, 1001, "the shell was ended from outside (session deleted or restored)", UX_RELAY_KILLED);
    return;
  }
  char msg[64];
  int n = snprintf(msg, sizeof msg, "{\"type\":\"exit\",\"exit_code\":%d}", code);
  put_frame(r, UNSB_WS_TEXT, msg, (size_t)n);
  start_close(r, UNSB_WS_CLOSE_NORMAL, "", UX_RELAY_EXITED);
}

/* Deadlines and state changes after one round of I/O. */
static void check(relay *r, long now) {
  if (!r->closing && r->stop_seen) {
    start_close(r, 1001, "server shutting down", UX_RELAY_STOPPING);
    r->close_deadline = now + UX_WS_RELAY_CLOSE_MS;   /* the stop does not wait for a slow reader */
  }
  if (!r->closing && r->done && (r->pty_eof || r->drained)) program_over(r);
  if (!r->closing && now - r->last_traffic >= r->c->idle_ms)
    start_close(r, 1001, "idle timeout", UX_RELAY_IDLE);
  if (q_pending(&r->out) && now - r->stall_since >= r->write_ms) {
    r->sock_eof = 1;                             /* a client that reads nothing is dropped */
    if (!r->reason || r->reason == UX_RELAY_IDLE) r->reason = UX_RELAY_STALLED;
  }
}

/* 1 when the relay is over. */
static int over(relay *r, long now) {
  if (r->sock_eof) return 1;
  if (!r->closing) return 0;
  if (q_pending(&r->out)) return now >= r->close_deadline;
  if (!r->flushed_at) r->flushed_at = now;       /* our close is out: the client's? */
  return r->peer_closed || now - r->flushed_at >= UX_WS_RELAY_CLOSE_MS;
}

/* ---------------------------------------------------------------- loop */

enum { P_SOCK, P_PTY, P_DONE, P_STOP, P_N };

static long wait_ms(const relay *r, long now) {
  long t = 1000;
  if (!r->closing && r->c->idle_ms - (now - r->last_traffic) < t)
    t = r->c->idle_ms - (now - r->last_traffic);
  if (q_pending(&r->out) && r->write_ms - (now - r->stall_since) < t)
    t = r->write_ms - (now - r->stall_since);
  if (r->closing && t > 100) t = 100;          /* the closing handshake is short */
  return t < 0 ? 0 : t;
}

static void one_round(relay *r) {
  const ux_ws_relay_cfg *c = r->c;
  struct pollfd p[P_N];
  int room = q_pending(&r->out) + UX_WS_RELAY_FRAME + UNSB_WS_HEADER_MAX <= UX_WS_RELAY_OUT_MAX;
  p[P_SOCK].fd = c->sock;
  p[P_SOCK].events = (short)((q_pending(&r->in) < UX_WS_RELAY_IN_MAX ? POLLIN : 0) |
                             (q_pending(&r->out) ? POLLOUT : 0));
  p[P_PTY].fd = r->pty_eof ? -1 : c->pty;
  p[P_PTY].events = (short)((room && !r->closing ? POLLIN : 0) | (q_pending(&r->in) ? POLLOUT : 0));
  p[P_DONE].fd = r->done ? -1 : c->done_fd;
  p[P_DONE].events = POLLIN;
  p[P_STOP].fd = r->stop_seen || c->stop_fd < 0 ? -1 : c->stop_fd;
  p[P_STOP].events = POLLIN;
  for (int i = 0; i < P_N; i++) p[i].revents = 0;
  int n = poll(p, P_N, (int)wait_ms(r, ux_now_ms()));
  if (n < 0 && errno != EINTR) {
    r->sock_eof = 1;
    if (!r->reason) r->reason = UX_RELAY_ERROR;
    return;
  }
  if (n > 0) {
    if (p[P_DONE].revents) {
      read_signal(c->done_fd, &r->done);
      r->done_at = ux_now_ms();
    }
    if (p[P_STOP].revents) read_signal(c->stop_fd, &r->stop_seen);
    if (p[P_SOCK].revents & (POLLIN | POLLHUP | POLLERR)) read_socket(r);
    if (!r->sock_eof && (p[P_SOCK].revents & POLLOUT)) write_socket(r);
    if (p[P_PTY].revents & (POLLIN | POLLHUP | POLLERR)) read_pty(r);
    if (q_pending(&r->in) && (p[P_PTY].revents & POLLOUT)) write_pty(r);
  }
  /* after the program's end the PTY is drained even without an event */
  if (r->done && !r->pty_eof && !r->drained && room) read_pty(r);
}

int ux_ws_relay(const ux_ws_relay_cfg *cfg) {
  relay r;
  memset(&r, 0, sizeof r);
  r.c = cfg;
  int fl = fcntl(cfg->pty, F_GETFL);
  if (fl < 0 || fcntl(cfg->pty, F_SETFL, fl | O_NONBLOCK) < 0 || cfg->idle_ms <= 0 ||
      !(r.parser = unsb_ws_parser_new(cfg->max_message, UNSB_WS_SERVER)))
    return UX_RELAY_ERROR;
  r.write_ms = cfg->write_ms > 0 ? cfg->write_ms : UX_WS_RELAY_WRITE_MS;
  r.last_traffic = r.stall_since = ux_now_ms();
  if (cfg->extra_len) feed(&r, cfg->extra, cfg->extra_len);
  for (;;) {
    long now = ux_now_ms();
    check(&r, now);
    if (over(&r, now)) break;
    one_round(&r);
  }
  /* a last try at what is queued (a close frame), never waiting */
  if (!r.sock_eof && q_pending(&r.out)) write_socket(&r);
  unsb_ws_parser_free(r.parser);
  free(r.out.p);
  free(r.in.p);
  return r.reason ? r.reason : UX_RELAY_ERROR;
}

const char *ux_ws_relay_why(int reason) {
  switch (reason) {
  case UX_RELAY_EXITED: return "the shell exited";
  case UX_RELAY_KILLED: return "the shell was ended from outside";
  case UX_RELAY_CLIENT_CLOSED: return "the client closed";
  case UX_RELAY_CLIENT_GONE: return "the client went away";
  case UX_RELAY_PROTOCOL: return "a protocol error";
  case UX_RELAY_IDLE: return "idle timeout";
  case UX_RELAY_STOPPING: return "the server stops";
  case UX_RELAY_STALLED: return "the client stopped reading";
  default: return "an internal error";
  }
}
