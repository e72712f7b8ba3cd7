/*
** SSE parser (see sse.h). One line at a time: bytes up to a CR or LF are
** appended to the line buffer (capped), the line is interpreted when its
** end arrives, and a blank line hands the event back. The event's strings
** point into the parser's buffers, which are only cleared at the start of
** the next call, so nothing is copied to return an event.
*/
#include "core/sse.h"
#include "core/buf.h"

#include <stdlib.h>
#include <string.h>

struct unsb_sse {
  unsb_buf line;        /* the current line, without its end */
  unsb_buf data;        /* data lines, each followed by '\n' */
  unsb_buf type;        /* event type buffer */
  unsb_buf id;          /* last event id: survives dispatch */
  long long retry;
  size_t max_line, max_event;
  int after_cr;         /* previous byte was CR: an LF now ends nothing */
  int at_start;         /* the first line may begin with a BOM */
  int dispatched;       /* an event was handed back: clear it first */
  int finished;
  int failed;
  unsb_error failure;   /* repeated by every call once failed */
};

unsb_sse *unsb_sse_new(size_t max_line, size_t max_event) {
  unsb_sse *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->max_line = max_line ? max_line : UNSB_SSE_DEFAULT_MAX_LINE;
  p->max_event = max_event ? max_event : UNSB_SSE_DEFAULT_MAX_EVENT;
  unsb_buf_init(&p->line, p->max_line);
  /* + 1: the '\n' after the last data line is not part of the event */
  unsb_buf_init(&p->data, p->max_event + 1);
  unsb_buf_init(&p->type, p->max_line);
  unsb_buf_init(&p->id, p->max_line);
  p->retry = -1;
  p->at_start = 1;
  return p;
}

void unsb_sse_free(unsb_sse *p) {
  if (!p) return;
  unsb_buf_free(&p->line);
  unsb_buf_free(&p->data);
  unsb_buf_free(&p->type);
  unsb_buf_free(&p->id);
  free(p);
}

long long unsb_sse_retry(const unsb_sse *p) { return p->retry; }

/* Records a failure so that every later call repeats it. */
static int fail(unsb_sse *p, int rc, const char *what, size_t limit, unsb_error *err) {
  p->failed = 1;
  if (rc == UNSB_BUF_NOMEM)
    unsb_fail(&p->failure, UNSB_ENOMEM, "out of memory in the SSE parser");
  else
    unsb_fail(&p->failure, UNSB_EPROTOCOL, "SSE %s longer than %zu bytes; stream refused",
              what, limit);
  if (err) *err = p->failure;
  return -1;
}

static int set_buf(unsb_buf *b, const char *v, size_t n) {
  unsb_buf_reset(b);
  return unsb_buf_append(b, v, n);
}

/* retry: only ASCII digits, else ignored; too large is ignored too. */
static void set_retry(unsb_sse *p, const char *v, size_t n) {
  long long ms = 0;
  if (n == 0) return;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9') return;
    ms = ms * 10 + (v[i] - '0');
    if (ms > UNSB_SSE_RETRY_MAX) return;
  }
  p->retry = ms;
}

/* A blank line: 1 with ev filled, 0 when there is no data to dispatch. */
static int dispatch(unsb_sse *p, unsb_sse_event *ev) {
  if (p->data.len == 0) {
    unsb_buf_reset(&p->type);
    return 0;
  }
  p->data.p[--p->data.len] = '\0';        /* the last '\n' */
  ev->type = p->type.len ? p->type.p : "message";
  ev->type_len = p->type.len ? p->type.len : 7;
  ev->data = p->data.p;
  ev->data_len = p->data.len;
  ev->id = unsb_buf_str(&p->id);
  ev->id_len = p->id.len;
  p->dispatched = 1;
  return 1;
}

static int field_is(const char *f, size_t n, const char *name) {
  return n == strlen(name) && memcmp(f, name, n) == 0;
}

/* Interprets the line in p->line: 1 = event in ev, 0 = none, -1 = error. */
static int process_line(unsb_sse *p, unsb_sse_event *ev, unsb_error *err) {
  const char *s = unsb_buf_str(&p->line), *colon, *v;
  size_t n = p->line.len, fn, vn;
  int rc = UNSB_BUF_OK;

  if (p->at_start) {
    p->at_start = 0;
    if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) { s += 3; n -= 3; }
  }
  if (n == 0) return dispatch(p, ev);
  if (s[0] == ':') return 0;                          /* comment */
  colon = memchr(s, ':', n);
  fn = colon ? (size_t)(colon - s) : n;
  v = colon ? colon + 1 : s + n;
  vn = n - (size_t)(v - s);
  if (vn > 0 && v[0] == ' ') { v++; vn--; }          /* exactly one space */

  if (field_is(s, fn, "data")) {
    rc = unsb_buf_append(&p->data, v, vn);
    if (rc == UNSB_BUF_OK) rc = unsb_buf_append(&p->data, "\n", 1);
    if (rc != UNSB_BUF_OK) return fail(p, rc, "event data", p->max_event, err);
  } else if (field_is(s, fn, "event")) {
    rc = set_buf(&p->type, v, vn);
  } else if (field_is(s, fn, "id")) {
    if (!memchr(v, '\0', vn)) rc = set_buf(&p->id, v, vn);
  } else if (field_is(s, fn, "retry")) {
    set_retry(p, v, vn);
  }
  /* type and id are at most a line long, so only memory can fail here */
  if (rc != UNSB_BUF_OK) return fail(p, rc, "line", p->max_line, err);
  return 0;
}

/* Shared entry checks; clears the previously handed-back event. */
static int begin(unsb_sse *p, unsb_error *err) {
  if (p->failed) {
    if (err) *err = p->failure;
    return -1;
  }
  if (p->finished)
    return unsb_fail(err, UNSB_EVALIDATION, "the SSE stream was already finished");
  if (p->dispatched) {
    p->dispatched = 0;
    unsb_buf_reset(&p->data);
    unsb_buf_reset(&p->type);
  }
  return 0;
}

int unsb_sse_step(unsb_sse *p, const char *buf, size_t len, size_t *used,
                  unsb_sse_event *ev, unsb_error *err) {
  size_t i = 0;
  *used = 0;
  if (begin(p, err) != 0) return -1;
  while (i < len) {
    size_t j = i;
    if (p->after_cr) {
      p->after_cr = 0;
      if (buf[i] == '\n') { i++; continue; }        /* the LF of a CRLF */
    }
    while (j < len && buf[j] != '\n' && buf[j] != '\r') j++;
    int rc = unsb_buf_append(&p->line, buf + i, j - i);
    if (rc != UNSB_BUF_OK) return fail(p, rc, "line", p->max_line, err);
    if (j == len) break;                             /* the line goes on */
    p->after_cr = buf[j] == '\r';
    i = j + 1;
    rc = process_line(p, ev, err);
    unsb_buf_reset(&p->line);
    if (rc != 0) {
      *used = i;
      return rc;
    }
  }
  *used = len;
  return 0;
}

int unsb_sse_finish(unsb_sse *p, unsb_sse_event *ev, unsb_error *err) {
  int rc;
  if (begin(p, err) != 0) return -1;
  p->finished = 1;
  if (p->line.len > 0) {          /* the last line had no end */
    rc = process_line(p, ev, err);
    unsb_buf_reset(&p->line);
    if (rc != 0) return rc;
  }
  return dispatch(p, ev);
}

int unsb_sse_feed(unsb_sse *p, const char *buf, size_t len, unsb_sse_cb cb, void *ud,
                  unsb_error *err) {
  unsb_sse_event ev;
  size_t used;
  while (len > 0) {
    int rc = unsb_sse_step(p, buf, len, &used, &ev, err);
    if (rc < 0) return -1;
    buf += used;
    len -= used;
    if (rc == 1) {
      int stop = cb(ud, &ev);
      if (stop) return stop > 0 ? stop : 1;   /* never mistaken for -1 */
    }
  }
  return 0;
}
