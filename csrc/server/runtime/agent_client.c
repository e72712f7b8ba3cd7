/*
** The agent protocol, server side (see runtime/agent_client.h). Every socket the
** server reads is non-blocking and every wait is a poll with the call's
** deadline, so a silent, slow or stopped agent costs the caller at most
** its own timeout. Writes use send(MSG_NOSIGNAL): an agent that dies
** mid-request must not raise SIGPIPE in the server. Frames are consumed
** as they complete, so the buffer never holds more than one partial
** frame plus one read.
*/
#include "server/runtime/agent_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/fsutil.h"

#define READ_CHUNK  65536
#define TICK_MS     250        /* on_event(NULL) at least this often */

/* Copies s (len bytes) into out, cut at a UTF-8 character boundary, so
** the message stays valid UTF-8 when it becomes JSON again. */
static void copy_text(char *out, size_t outlen, const char *s, size_t len) {
  if (!outlen) return;
  if (len > outlen - 1) {
    len = outlen - 1;
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) len--;
  }
  memcpy(out, s, len);
  out[len] = '\0';
}

/* ---------------------------------------------------------------------
** Opening a request and sending its frame
** ------------------------------------------------------------------- */

/* Waits until fd is ready for `events` or deadline_ms: 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, long deadline_ms) {
  for (;;) {
    long left = deadline_ms - ux_now_ms();
    if (left <= 0) return 0;
    struct pollfd p = { fd, events, 0 };
    int n = poll(&p, 1, left > 100 ? 100 : (int)left);
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return 1;   /* let the next call report it */
  }
}

int ux_agent_open(int control, int data_fd, long deadline_ms, char *err, size_t errlen) {
  int sv[2];
  /* the agent's end stays blocking: file flags travel with SCM_RIGHTS */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errlen, "cannot make a request socket: %s", strerror(errno));
    return -1;
  }
  if (fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
    snprintf(err, errlen, "cannot set up a request socket: %s", strerror(errno));
    close(sv[0]); close(sv[1]);
    return -1;
  }
  int fds[2] = { sv[1], data_fd };
  size_t nfd = data_fd > 0 ? 2 : 1;
  char cbuf[CMSG_SPACE(2 * sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = { (char[]){ 'r' }, 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                      .msg_controllen = CMSG_SPACE(nfd * sizeof(int)) };
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
  memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
  int rc;
  /* one try at least, also with a deadline already passed (the watcher
  ** sends its pings that way, never waiting under its lock) */
  for (;;) {
    rc = (int)sendmsg(control, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc >= 0 || errno == EINTR) { if (rc >= 0) break; continue; }
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_fd(control, POLLOUT, deadline_ms)) break;
  }
  int e = errno;
  close(sv[1]);
  if (rc < 0) {
    close(sv[0]);
    if (e == EAGAIN || e == EWOULDBLOCK)
      snprintf(err, errlen, "the runtime's agent takes no requests (its control channel is full)");
    else
      snprintf(err, errlen, "the runtime's control channel is closed: %s", strerror(e));
    return -1;
  }
  return sv[0];
}

int ux_agent_send(int fd, const json_t *req, long deadline_ms, char *err, size_t errlen) {
  char *s = json_dumps(req, JSON_COMPACT);
  if (!s) {
    snprintf(err, errlen, "cannot encode the request");
    return -3;
  }
  size_t len = strlen(s);
  if (len > UX_AGENT_FRAME_MAX) {
    snprintf(err, errlen, "request frame too large: %zu bytes (at most %u)", len, UX_AGENT_FRAME_MAX);
    free(s);
    return -3;
  }
  s[len] = '\n';               /* json_dumps' NUL becomes the frame's end */
  size_t done = 0;
  int rc = 0;
  while (done < len + 1) {
    ssize_t n = send(fd, s + done, len + 1 - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { done += (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_fd(fd, POLLOUT, deadline_ms)) continue;
      snprintf(err, errlen, "the runtime's agent did not read the request in time");
      rc = -2;
    } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      rc = 1;
    } else {
      snprintf(err, errlen, "cannot send the request: %s", strerror(errno));
      rc = -1;
    }
    break;
  }
  free(s);
  return rc;
}

/* ---------------------------------------------------------------------
** Frames
** ------------------------------------------------------------------- */

void ux_agent_frames_init(ux_agent_frames *f) { memset(f, 0, sizeof *f); }

void ux_agent_frames_free(ux_agent_frames *f) {
  free(f->buf);
  memset(f, 0, sizeof *f);
}

int ux_agent_frames_read(ux_agent_frames *f, int fd, char *err, size_t errlen) {
  if (f->eof) return 0;
  if (f->off > 0) {            /* drop what was consumed */
    memmove(f->buf, f->buf + f->off, f->len - f->off);
    f->len -= f->off;
    f->off = 0;
  }
  if (f->cap - f->len < READ_CHUNK) {
    size_t cap = f->cap ? f->cap * 2 : 2 * READ_CHUNK;
    while (cap - f->len < READ_CHUNK) cap *= 2;
    char *b = realloc(f->buf, cap);
    if (!b) {
      snprintf(err, errlen, "out of memory reading the agent's answer");
      return -1;
    }
    f->buf = b;
    f->cap = cap;
  }
  for (;;) {
    ssize_t n = read(fd, f->buf + f->len, READ_CHUNK);
    if (n > 0) { f->len += (size_t)n; return 0; }
    if (n == 0) { f->eof = 1; return 0; }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    snprintf(err, errlen, "the runtime's agent went away: %s", strerror(errno));
    return -1;
  }
}

int ux_agent_frames_next(ux_agent_frames *f, json_t **frame, char *err, size_t errlen) {
  *frame = NULL;
  size_t avail = f->len - f->off;
  char *start = f->buf + f->off, *nl = avail ? memchr(start, '\n', avail) : NULL;
  if (!nl) {
    if (avail > UX_AGENT_FRAME_MAX) {
      snprintf(err, errlen, "a frame of more than %u bytes", UX_AGENT_FRAME_MAX);
      return -1;
    }
    return 0;
  }
  size_t flen = (size_t)(nl - start);
  f->off += flen + 1;
  f->last_len = flen;
  if (flen > UX_AGENT_FRAME_MAX) {
    snprintf(err, errlen, "a frame of more than %u bytes", UX_AGENT_FRAME_MAX);
    return -1;
  }
  json_error_t je;
  json_t *v = json_loadb(start, flen, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
  if (!v || !json_is_object(v)) {
    snprintf(err, errlen, "a frame that is not a JSON object%s%.100s", v ? "" : ": ", v ? "" : je.text);
    json_decref(v);
    return -1;
  }
  *frame = v;
  return 1;
}

int ux_agent_frame_is_event(const json_t *frame, char *err, size_t errlen) {
  json_t *ev = json_object_get(frame, "event");
  if (!ev) return 0;
  const char *name = json_string_value(ev);
  const char *ch = json_string_value(json_object_get(frame, "channel"));
  if (!name || strcmp(name, "chunk") != 0) {
    snprintf(err, errlen, "an unknown event");
    return -1;
  }
  if (!ch || (strcmp(ch, "stdout") != 0 && strcmp(ch, "stderr") != 0) ||
      !json_is_string(json_object_get(frame, "data")) || json_object_size(frame) != 3) {
    snprintf(err, errlen, "a malformed chunk event");
    return -1;
  }
  return 1;
}

static int final_error(const json_t *frame, char *err, size_t errlen) {
  json_t *e = json_object_get(frame, "error");
  const char *kind = json_string_value(json_object_get(e, "kind"));
  json_t *msg = json_object_get(e, "message");
  if (!json_is_object(e) || json_object_size(e) != 2 || !kind || !json_is_string(msg)) {
    snprintf(err, errlen, "a malformed error frame");
    return UX_RTC_GONE;
  }
  int rc = !strcmp(kind, "invalid") ? UX_RTC_INVALID : !strcmp(kind, "busy") ? UX_RTC_BUSY
         : !strcmp(kind, "internal") ? UX_RTC_INTERNAL : UX_RTC_GONE;
  if (rc == UX_RTC_GONE) snprintf(err, errlen, "an error frame of an unknown kind");
  else copy_text(err, errlen, json_string_value(msg), strnlen(json_string_value(msg), json_string_length(msg)));
  return rc;
}

int ux_agent_final(const json_t *frame, json_t **result, char *err, size_t errlen) {
  *result = NULL;
  json_t *ok = json_object_get(frame, "ok");
  if (!json_is_boolean(ok) || json_object_size(frame) != 2) {
    snprintf(err, errlen, "a malformed final frame");
    return UX_RTC_GONE;
  }
  if (json_is_false(ok)) return final_error(frame, err, errlen);
  json_t *r = json_object_get(frame, "result");
  if (!json_is_object(r)) {
    snprintf(err, errlen, "a final frame without a result object");
    return UX_RTC_GONE;
  }
  *result = json_incref(r);
  return UX_RTC_OK;
}

/* ---------------------------------------------------------------------
** A whole call
** ------------------------------------------------------------------- */

typedef struct call {
  int fd;
  long deadline, last_tick;
  int (*on_event)(void *ctx, const json_t *event);
  void *ctx;
  size_t event_bytes, events_max;
  ux_agent_frames in;
} call;

/* Hands every complete frame on: -1 to go on reading, else the call's
** final code. */
static int drain(call *c, json_t **result, int *broken, char *err, size_t errlen) {
  json_t *fr;
  int r;
  while ((r = ux_agent_frames_next(&c->in, &fr, err, errlen)) == 1) {
    int ev = ux_agent_frame_is_event(fr, err, errlen);
    if (ev == 1) {
      if (c->events_max != (size_t)-1) c->event_bytes += c->in.last_len;
      if (c->event_bytes > c->events_max) {
        snprintf(err, errlen, "more than %zu bytes of events", c->events_max);
        ev = -1;
      } else {
        int stop = c->on_event && c->on_event(c->ctx, fr);
        json_decref(fr);
        c->last_tick = ux_now_ms();
        if (stop) { snprintf(err, errlen, "cancelled"); return UX_RTC_CANCELLED; }
        continue;
      }
    }
    int rc = ev < 0 ? UX_RTC_GONE : ux_agent_final(fr, result, err, errlen);
    json_decref(fr);
    if (rc == UX_RTC_GONE) *broken = 1;
    return rc;
  }
  if (r < 0) { *broken = 1; return UX_RTC_GONE; }
  return -1;
}

/* Reads until the final frame, the deadline, a cancel or the end. */
static int collect(call *c, int timeout_ms, json_t **result, int *broken, char *err, size_t errlen) {
  for (;;) {
    int rc = drain(c, result, broken, err, errlen);
    if (rc >= 0) return rc;
    if (c->in.eof) {
      snprintf(err, errlen, "the runtime's agent closed the request without an answer");
      return UX_RTC_GONE;
    }
    long now = ux_now_ms();
    if (now >= c->deadline) {
      snprintf(err, errlen, "no answer from the runtime within %d ms", timeout_ms);
      return UX_RTC_TIMEOUT;
    }
    if (now - c->last_tick >= TICK_MS) {
      c->last_tick = now;
      if (c->on_event && c->on_event(c->ctx, NULL)) {
        snprintf(err, errlen, "cancelled");
        return UX_RTC_CANCELLED;
      }
    }
    long wait = c->deadline - now, tick = TICK_MS - (now - c->last_tick);
    if (tick < wait) wait = tick;
    struct pollfd p = { c->fd, POLLIN, 0 };
    if (poll(&p, 1, wait < 1 ? 1 : (int)wait) < 0 && errno != EINTR) {
      snprintf(err, errlen, "cannot wait for the runtime: %s", strerror(errno));
      return UX_RTC_INTERNAL;
    }
    if (ux_agent_frames_read(&c->in, c->fd, err, errlen) != 0) return UX_RTC_GONE;
  }
}

int ux_agent_call(int control, const json_t *req, int data_fd, int timeout_ms, size_t events_max,
                  int (*on_event)(void *ctx, const json_t *event), void *ctx,
                  json_t **result, int *broken, char *err, size_t errlen) {
  *result = NULL;
  *broken = 0;
  if (!json_is_object(req)) {
    snprintf(err, errlen, "the request is not a JSON object");
    return UX_RTC_INVALID;
  }
  call c = { .on_event = on_event, .ctx = ctx, .events_max = events_max ? events_max : UX_AGENT_EVENTS_MAX };
  long now = ux_now_ms();
  c.deadline = now + timeout_ms;
  c.last_tick = now;
  if ((c.fd = ux_agent_open(control, data_fd, c.deadline, err, errlen)) < 0)
    return ux_now_ms() >= c.deadline ? UX_RTC_TIMEOUT : UX_RTC_GONE;
  ux_agent_frames_init(&c.in);
  int rc, s = ux_agent_send(c.fd, req, c.deadline, err, errlen);
  if (s == -3) rc = UX_RTC_INVALID;
  else if (s == -2) rc = UX_RTC_TIMEOUT;
  else if (s == -1) rc = UX_RTC_GONE;
  else rc = collect(&c, timeout_ms, result, broken, err, errlen);
  /* closing the request socket is the cancel: the agent kills a running
  ** exec when it sees EOF before it has answered */
  close(c.fd);
  ux_agent_frames_free(&c.in);
  if (rc != UX_RTC_OK && *result) { json_decref(*result); *result = NULL; }
  return rc;
}
