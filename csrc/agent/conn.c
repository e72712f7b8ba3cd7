/*
** Framed request connections. JSON is encoded with jansson (compact:
** strings never hold a raw newline, so "\n" ends a frame unambiguously)
** and decoded with JSON_REJECT_DUPLICATES (one meaning per key) and
** JSON_ALLOW_NUL (so a NUL inside a path is reported by name, not as
** "bad JSON").
*/
#include "agent/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ag_conn_init(ag_conn *c, int fd) {
  int fl;
  memset(c, 0, sizeof *c);
  c->fd = fd;
  if ((fl = fcntl(fd, F_GETFL)) >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void ag_conn_close(ag_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  ag_buf_free(&c->in);
  ag_buf_free(&c->out);
}

int ag_conn_read_request(ag_conn *c, json_t **req, ag_err *e) {
  char tmp[65536];
  for (;;) {
    char *nl = c->in.len ? memchr(c->in.p, '\n', c->in.len) : NULL;
    if (nl) {
      json_error_t je;
      json_t *v = json_loadb(c->in.p, (size_t)(nl - c->in.p),
                             JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
      ag_buf_shift(&c->in, (size_t)(nl - c->in.p) + 1);
      if (!v) return ag_fail(e, AG_INVALID, "malformed request frame: %s", je.text);
      if (!json_is_object(v)) {
        json_decref(v);
        return ag_fail(e, AG_INVALID, "malformed request frame: not a JSON object");
      }
      *req = v;
      return 1;
    }
    if (c->in.len > AG_FRAME_MAX)
      return ag_fail(e, AG_INVALID, "request frame larger than %u bytes", AG_FRAME_MAX);
    ssize_t n = read(c->fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0) {
      c->peer_gone = 1;
      if (c->in.len > 0)
        return ag_fail(e, AG_INVALID, "malformed request frame: no newline before the end");
      return -2;
    }
    if (ag_buf_add(&c->in, tmp, (size_t)n) < 0) return ag_fail(e, AG_INTERNAL, "out of memory");
  }
}

void ag_conn_watch(ag_conn *c) {
  char tmp[4096];
  while (!c->peer_gone) {
    ssize_t n = read(c->fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) c->peer_gone = 1;
  }
}

json_t *ag_json_text(const char *s, size_t len) {
  ag_buf clean = { 0 };
  ag_utf8_state u = { { 0 }, 0 };
  json_t *v = NULL;
  if (ag_utf8_clean(&u, s, len, 1, 1, &clean) == 0)
    v = json_stringn(clean.p ? clean.p : "", clean.len);
  ag_buf_free(&clean);
  return v;
}

static int queue(ag_conn *c, json_t *frame) {
  char *s = json_dumps(frame, JSON_COMPACT);
  int rc;
  json_decref(frame);
  if (!s) return -1;
  rc = ag_buf_add(&c->out, s, strlen(s));
  if (rc == 0) rc = ag_buf_add(&c->out, "\n", 1);
  free(s);
  return rc;
}

int ag_conn_event_chunk(ag_conn *c, const char *channel, const char *data, size_t len) {
  json_t *f = json_pack("{s:s, s:s, s:s%}", "event", "chunk", "channel", channel, "data", data, len);
  if (!f) return -1;
  c->chunks++;
  return queue(c, f);
}

int ag_conn_final_ok(ag_conn *c, json_t *result) {
  json_t *f = result ? json_pack("{s:b, s:o}", "ok", 1, "result", result) : NULL;
  c->final_sent = 1;
  if (!f) {
    ag_err e;
    ag_fail(&e, AG_INTERNAL, "out of memory encoding the result");
    c->final_sent = 0;
    return ag_conn_final_err(c, &e);
  }
  return queue(c, f);
}

int ag_conn_final_err(ag_conn *c, const ag_err *e) {
  json_t *f = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "kind", ag_kind_name(e->kind),
                        "message", e->msg);
  c->final_sent = 1;
  if (!f) {
    /* the message itself may be what failed (not UTF-8): a fixed text */
    f = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "kind", ag_kind_name(e->kind),
                  "message", "the error message could not be encoded");
    if (!f) return -1;
  }
  return queue(c, f);
}

int ag_conn_flush(ag_conn *c) {
  while (c->out_off < c->out.len) {
    ssize_t n = write(c->fd, c->out.p + c->out_off, c->out.len - c->out_off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n < 0) { c->peer_gone = 1; return -1; }
    c->out_off += (size_t)n;
  }
  ag_buf_reset(&c->out);
  c->out_off = 0;
  return 1;
}

int ag_conn_flush_wait(ag_conn *c, int timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int r = ag_conn_flush(c);
    if (r != 0) return r;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
    if (spent >= timeout_ms) return 0;
    struct pollfd p = { c->fd, POLLOUT, 0 };
    if (poll(&p, 1, (int)(timeout_ms - spent)) < 0 && errno != EINTR) return -1;
  }
}
