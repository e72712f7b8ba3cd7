/*
** Deadline, rate and cap arithmetic, and the byte ring: pure functions,
** so csrc/tests/server_http_limits_test.c checks their edges directly.
** Products are computed in unsigned long long on a clamped duration, so
** no clock value makes them wrap.
*/
#include "server/http/limits.h"

#include <string.h>

int ux_limit_headers_late(long since_ms, long now_ms, long deadline_ms) {
  return since_ms > 0 && now_ms - since_ms >= deadline_ms;
}

long ux_limit_body_active_ms(long t0, long paused_ms, long paused_since, long now_ms) {
  long active = now_ms - t0 - paused_ms;
  if (paused_since > 0 && now_ms > paused_since) active -= now_ms - paused_since;
  return active > 0 ? active : 0;
}

int ux_limit_body_slow(unsigned long long bytes, long active_ms, long grace_ms,
                       unsigned long rate) {
  if (active_ms <= grace_ms) return 0;
  unsigned long long ms = (unsigned long long)(active_ms - grace_ms);
  if (ms > 1000000000000ull) ms = 1000000000000ull;   /* 31 years: no wrap below */
  unsigned long long due = ms / 1000 * rate + ms % 1000 * rate / 1000;
  return bytes < due;
}

unsigned ux_limit_conn_cap(unsigned long long nofile, unsigned listeners) {
  if (listeners == 0) listeners = 1;
  if (nofile <= UX_HTTP_FD_RESERVE) return UX_HTTP_MIN_CONNECTIONS;
  unsigned long long cap = (nofile - UX_HTTP_FD_RESERVE) / listeners;
  if (cap > UX_HTTP_MAX_CONNECTIONS) cap = UX_HTTP_MAX_CONNECTIONS;
  if (cap < UX_HTTP_MIN_CONNECTIONS) cap = UX_HTTP_MIN_CONNECTIONS;
  return (unsigned)cap;
}

unsigned ux_limit_conn_budget(unsigned conn_cap) {
  unsigned room = conn_cap / UX_HTTP_BUDGET_HEADROOM;
  if (room == 0) room = 1;
  return conn_cap > room ? conn_cap - room : 1;
}

size_t ux_ring_put(ux_ring *r, const void *src, size_t n) {
  size_t room = r->cap - r->len;
  if (n > room) n = room;
  if (n == 0) return 0;
  size_t tail = (r->head + r->len) % r->cap;
  size_t first = r->cap - tail < n ? r->cap - tail : n;
  memcpy(r->buf + tail, src, first);
  memcpy(r->buf, (const char *)src + first, n - first);
  r->len += n;
  return n;
}

size_t ux_ring_get(ux_ring *r, void *dst, size_t n) {
  if (n > r->len) n = r->len;
  if (n == 0) return 0;
  size_t first = r->cap - r->head < n ? r->cap - r->head : n;
  memcpy(dst, r->buf + r->head, first);
  memcpy((char *)dst + first, r->buf, n - first);
  r->head = r->len == n ? 0 : (r->head + n) % r->cap;
  r->len -= n;
  return n;
}
