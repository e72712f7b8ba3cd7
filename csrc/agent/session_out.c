/*
** Terminal output of a session: read everything as it comes (so a program
** never blocks on a full terminal), keep the first AG_SESSION_OUTPUT_MAX
** bytes of each call's output, and find the running command's marker.
**
** The marker can arrive split across reads. Bytes are only handed on once
** they cannot be the start of the marker: the longest tail of the scan
** buffer that is a prefix of the marker is held back, nothing else, so
** "a\n" streams at once. Once "MARKER:" is seen the bytes before it are
** output and the status runs to ";". Output is cleaned to UTF-8 with a
** carried state, like exec's.
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/session.h"

static void emit(ag_session *s, const char *p, size_t n) {
  if (n == 0) return;
  if (s->out_raw + n > AG_SESSION_OUTPUT_MAX) {
    s->truncated = 1;
    n = AG_SESSION_OUTPUT_MAX - s->out_raw;
  }
  s->out_raw += n;
  ag_utf8_clean(&s->u, p, n, s->out_raw == AG_SESSION_OUTPUT_MAX, 0, &s->out);
}

void ag_session_flush_text(ag_session *s) {
  ag_utf8_clean(&s->u, "", 0, 1, 1, &s->out);
}

/* Length of the longest tail of p[0..n) that is a proper prefix of m. */
static size_t held_back(const char *p, size_t n, const char *m, size_t mlen) {
  size_t k = n < mlen - 1 ? n : mlen - 1;
  for (; k > 0; k--)
    if (memcmp(p + n - k, m, k) == 0) return k;
  return 0;
}

/* Scans pend. Returns 1 when the marker and its status were consumed. */
static int scan(ag_session *s) {
  size_t mlen = strlen(s->marker);
  char *p = s->pend.p;
  size_t n = s->pend.len;
  if (!s->running) {                  /* between commands: all is output */
    emit(s, p, n);
    ag_buf_reset(&s->pend);
    return 0;
  }
  char *hit = n >= mlen ? memmem(p, n, s->marker, mlen) : NULL;
  if (!hit) {
    size_t keep = held_back(p, n, s->marker, mlen);
    emit(s, p, n - keep);
    ag_buf_shift(&s->pend, n - keep);
    return 0;
  }
  size_t at = (size_t)(hit - p), i = at + mlen;
  emit(s, p, at);
  /* ":" digits ";" (the status of $?: 0..255) */
  if (i >= n) { ag_buf_shift(&s->pend, at); return 0; }
  if (p[i] == ':') {
    int code = 0, digits = 0;
    for (i++; i < n && p[i] >= '0' && p[i] <= '9' && digits < 4; i++, digits++) code = code * 10 + (p[i] - '0');
    if (i >= n && digits < 4) { ag_buf_shift(&s->pend, at); return 0; }
    if (digits > 0 && p[i] == ';') {
      ag_buf_shift(&s->pend, i + 1);
      s->running = 0;
      s->has_exit = 1;
      s->exit_code = code;
      ag_session_flush_text(s);
      emit(s, s->pend.p, s->pend.len);   /* anything after it: background output */
      ag_buf_reset(&s->pend);
      return 1;
    }
  }
  /* the marker, then garbage: only the shell writes the marker, so this is
  ** not ours; keep it as output */
  emit(s, p + at, i - at);
  ag_buf_shift(&s->pend, i);
  return scan(s);
}

int ag_session_read(ag_session *s, double now) {
  char buf[16384];
  int done = 0;
  if (s->master_eof || s->sh.master < 0) return 0;
  for (int rounds = 0; rounds < 64; rounds++) {   /* bounded: others get a turn */
    ssize_t n = read(s->sh.master, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { s->master_eof = 1; break; }   /* EIO: no slave left */
    s->last_output_at = now;
    if (ag_buf_add(&s->pend, buf, (size_t)n) < 0) break;
    done |= scan(s);
  }
  ag_session_stream(s);
  return done;
}

void ag_session_stream(ag_session *s) {
  if (!s->conn || !s->streaming || s->out.len <= s->streamed) return;
  ag_conn_event_chunk(s->conn, "stdout", s->out.p + s->streamed, s->out.len - s->streamed);
  s->streamed = s->out.len;
}

void ag_session_write_input(ag_session *s, double now) {
  while (s->input_off < s->input.len && s->sh.master >= 0) {
    ssize_t n = write(s->sh.master, s->input.p + s->input_off, s->input.len - s->input_off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;                 /* EAGAIN: the terminal is full */
    s->input_off += (size_t)n;
  }
  if (s->input.len && s->input_off >= s->input.len) {
    ag_buf_reset(&s->input);
    s->input_off = 0;
    s->input_done_at = now;
  }
}
