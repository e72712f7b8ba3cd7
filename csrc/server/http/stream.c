/*
** Streamed bodies both ways, on one ring buffer each (UX_HTTP_RING).
**
** Request bodies: libmicrohttpd hands the body to exchange.c, which puts
** what fits into x->in and leaves the rest with libmicrohttpd, suspending
** the connection (backpressure); ux_req_read_body takes from the ring and
** resumes the connection once half of it is free.
**
** Replies: ux_stream_write fills x->out and blocks while it is full; the
** content reader below drains it. In libmicrohttpd 0.9.75 a content reader
** that returns 0 is called again at once by the event thread (a busy
** loop), but it may suspend its own connection first, which 0.9.75
** documents as allowed from a content reader: the connection then leaves
** the event loop until the writer resumes it with new data or the end.
** While suspended, libmicrohttpd does not notice a client that goes away,
** so sweeper.c polls those sockets and wakes the writer.
*/
#include "server/http/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/http/http_int.h"
#include "server/mem.h"

/* ------------------------------------------------------- request bodies */

size_t ux_stream_feed_locked(ux_xchg *x, const char *data, size_t n) {
  if (x->received + n > x->limit) {            /* a chunked body over the limit */
    x->req.body_overflow = 1;
    pthread_cond_broadcast(&x->cv);
    return 0;
  }
  size_t put = ux_ring_put(&x->in, data, n);
  x->received += put;
  if (put) pthread_cond_broadcast(&x->cv);
  return put;
}

/* A buffered route's body, read the same way. */
static ssize_t read_buffered(ux_req *r, ux_xchg *x, void *buf, size_t len) {
  if (r->body_overflow) return -1;
  size_t left = r->body_len - x->read_pos;
  size_t n = left < len ? left : len;
  memcpy(buf, r->body + x->read_pos, n);
  x->read_pos += n;
  return (ssize_t)n;
}

ssize_t ux_req_read_body(ux_req *r, void *buf, size_t len) {
  ux_xchg *x = r ? r->x : NULL;
  if (!x || !buf || len == 0) return -1;
  if (!x->streaming) return read_buffered(r, x, buf, len);
  ux_http *h = x->h;
  ssize_t got;
  pthread_mutex_lock(&h->mu);
  if (!x->want_body) {                         /* let the body flow */
    x->want_body = 1;
    ux_x_wake_locked(x);
  }
  for (;;) {
    if (r->body_overflow) { got = -1; break; }
    if (x->in.len) {
      got = (ssize_t)ux_ring_get(&x->in, buf, len);
      if (x->phase == X_STREAM_BODY && x->in.cap - x->in.len >= x->in.cap / 2) ux_x_wake_locked(x);
      break;
    }
    if (x->body_done) { got = 0; break; }
    if (x->gone || h->stopping == 2) { got = -1; break; }
    pthread_cond_wait(&x->cv, &h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return got;
}

/* ------------------------------------------------------------- replies */

static ssize_t out_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  ux_xchg *x = cls;
  ux_http *h = x->h;
  ssize_t rc;
  pthread_mutex_lock(&h->mu);
  if (x->gone || x->stream_aborted || h->stopping == 2) {
    rc = MHD_CONTENT_READER_END_WITH_ERROR;
  } else if (x->out.len) {
    rc = (ssize_t)ux_ring_get(&x->out, buf, max);
    pthread_cond_broadcast(&x->cv);            /* room for the writer */
  } else if (x->stream_closed) {
    /* a sized stream reaches here only when closed short of its length */
    rc = x->out_length < 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
  } else {
    ux_x_suspend_locked(x);                    /* until the writer has more */
    rc = 0;
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

static void out_free(void *cls) {
  ux_x_release(cls);
}

struct MHD_Response *ux_stream_response(ux_xchg *x) {
  uint64_t size = x->out_length < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)x->out_length;
  pthread_mutex_lock(&x->h->mu);
  x->refs++;
  pthread_mutex_unlock(&x->h->mu);
  struct MHD_Response *resp =
    MHD_create_response_from_callback(size, 16 * 1024, out_reader, x, out_free);
  if (!resp) ux_x_release(x);
  return resp;
}

ux_stream *ux_reply_stream(ux_req *r, int status, const char *content_type, long long length) {
  ux_xchg *x = r ? r->x : NULL;
  if (!x || status < 200 || status > 999) return NULL;
  if (content_type && ux_reply_content_type(r, content_type) < 0) return NULL;
  char *buf = ux_xmalloc(UX_HTTP_RING);
  ux_http *h = x->h;
  pthread_mutex_lock(&h->mu);
  if (x->stream_open || x->head_ready) {
    pthread_mutex_unlock(&h->mu);
    free(buf);
    return NULL;
  }
  if (r->reply.json) json_decref(r->reply.json);
  free(r->reply.raw);
  r->reply.json = NULL;
  r->reply.raw = NULL;
  r->reply.empty = 0;
  r->reply.drop = 0;
  r->reply.status = status;
  x->out.buf = buf;
  x->out.cap = UX_HTTP_RING;
  x->out_length = length < 0 ? -1 : length;
  x->stream_open = 1;
  x->head_ready = 1;
  ux_x_wake_locked(x);
  pthread_mutex_unlock(&h->mu);
  return x;
}

int ux_stream_write(ux_stream *x, const void *buf, size_t len) {
  if (!x || (!buf && len)) return -1;
  ux_http *h = x->h;
  const char *p = buf;
  int rc = 0;
  pthread_mutex_lock(&h->mu);
  if (!x->stream_open || x->stream_closed || x->gone || h->stopping == 2 ||
      (x->out_length >= 0 && x->out_written + len > (unsigned long long)x->out_length))
    rc = -1;
  while (rc == 0 && len > 0) {
    if (x->gone || h->stopping == 2) { rc = -1; break; }
    size_t n = ux_ring_put(&x->out, p, len);
    if (!n) { pthread_cond_wait(&x->cv, &h->mu); continue; }
    p += n;
    len -= n;
    x->out_written += n;
    ux_x_wake_locked(x);
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

int ux_stream_wait(ux_stream *x, long ms) {
  if (!x) return 1;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  ux_http *h = x->h;
  int gone;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    gone = x->gone || h->stopping == 2;
    if (gone || ms <= 0) break;
    if (pthread_cond_timedwait(&x->cv, &h->mu, &until) == ETIMEDOUT) {
      gone = x->gone || h->stopping == 2;
      break;
    }
  }
  pthread_mutex_unlock(&h->mu);
  return gone;
}

static void finish(ux_stream *x, int aborted) {
  if (!x) return;
  ux_http *h = x->h;
  pthread_mutex_lock(&h->mu);
  if (x->stream_open && !x->stream_closed) {
    x->stream_closed = 1;
    x->stream_aborted = aborted ? 1 : 0;
    ux_x_wake_locked(x);
  }
  pthread_mutex_unlock(&h->mu);
}

void ux_stream_close(ux_stream *s) { finish(s, 0); }
void ux_stream_abort(ux_stream *s) { finish(s, 1); }
