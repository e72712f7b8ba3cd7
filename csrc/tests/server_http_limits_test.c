/*
** Unit tests of the transport's pure parts: the header deadline, the body
** rate rule with its grace period and server pauses, the connection
** caps under a NOFILE limit and the connection budget, the byte ring (wrap-around, full, empty),
** and the handler-facing header helpers (lookup, refused names and
** values). The sockets and threads around them are proven by
** spec/http_limits_spec.lua against a running unsandboxd.
*/
#include <stdlib.h>
#include <string.h>

#include "server/http/limits.h"
#include "server/http/reply.h"
#include "tests/tap.h"

static void test_headers_deadline(void) {
  ok(!ux_limit_headers_late(0, 999999, 10000), "no start time: never late");
  ok(!ux_limit_headers_late(1000, 10999, 10000), "1 ms before the deadline: in time");
  ok(ux_limit_headers_late(1000, 11000, 10000), "at the deadline: late");
  ok(ux_limit_headers_late(1000, 50000, 10000), "long after: late");
  ok(!ux_limit_headers_late(5000, 4000, 10000), "a clock before the start: not late");
}

static void test_active_time(void) {
  ok(ux_limit_body_active_ms(1000, 0, 0, 4000) == 3000, "no pause: all the time counts");
  ok(ux_limit_body_active_ms(1000, 500, 0, 4000) == 2500, "finished pauses are taken off");
  ok(ux_limit_body_active_ms(1000, 500, 3000, 4000) == 1500, "a running pause is taken off");
  ok(ux_limit_body_active_ms(1000, 5000, 0, 4000) == 0, "never negative");
  ok(ux_limit_body_active_ms(1000, 0, 9000, 4000) == 3000, "a pause in the future counts nothing");
}

static void test_body_rate(void) {
  unsigned long rate = 16 * 1024;
  ok(!ux_limit_body_slow(0, 5000, 5000, rate), "nothing sent within the grace period: fine");
  ok(ux_limit_body_slow(0, 5001, 5000, rate), "nothing sent just after the grace period: slow");
  ok(!ux_limit_body_slow(16 * 1024, 6000, 5000, rate), "exactly the rate after 1 s more: fine");
  ok(ux_limit_body_slow(16 * 1024 - 1, 6000, 5000, rate), "one byte short: slow");
  /* 2 KiB/s is cut between 5 and 6 s: 2048 t >= 16384 (t - 5) => t <= 5.714 s */
  ok(!ux_limit_body_slow(2048 * 57 / 10, 5700, 5000, rate), "a 2 KiB/s trickle still passes at 5.7 s");
  ok(ux_limit_body_slow(2048 * 58 / 10, 5800, 5000, rate), "and is slow at 5.8 s");
  ok(!ux_limit_body_slow(64ull << 20, 4096L * 1000 + 5000, 5000, rate),
     "64 MiB at exactly 16 KiB/s: fine");
  ok(!ux_limit_body_slow(~0ull, 0x7fffffffffffffffL, 5000, rate), "huge numbers do not wrap");
  ok(ux_limit_body_slow(0, 0x7fffffffffffffffL, 5000, rate), "nothing after forever: slow");
}

static void test_caps(void) {
  ok(ux_limit_conn_cap(1048576, 1) == UX_HTTP_MAX_CONNECTIONS, "a large NOFILE: the cap");
  ok(ux_limit_conn_cap(1048576, 2) == UX_HTTP_MAX_CONNECTIONS, "two listeners, large NOFILE: the cap each");
  ok(ux_limit_conn_cap(1024, 1) == 1024 - UX_HTTP_FD_RESERVE, "NOFILE 1024: what the reserve leaves");
  ok(ux_limit_conn_cap(4096 + UX_HTTP_FD_RESERVE, 2) == 2048, "split between two listeners");
  ok(ux_limit_conn_cap(100, 1) == UX_HTTP_MIN_CONNECTIONS, "a tiny NOFILE: the floor");
  ok(ux_limit_conn_cap(2000, 0) == 2000 - UX_HTTP_FD_RESERVE, "0 listeners counts as 1");
  ok(ux_limit_conn_budget(4096) == 3584, "budget: seven eighths of the cap");
  ok(ux_limit_conn_budget(64) == 56, "budget of 64: 56");
  ok(ux_limit_conn_budget(UX_HTTP_MIN_CONNECTIONS) == 14, "budget of the smallest cap: 14");
  ok(ux_limit_conn_budget(7) == 6 && ux_limit_conn_budget(2) == 1,
     "a cap under 8 keeps one connection of headroom");
  ok(ux_limit_conn_budget(1) == 1 && ux_limit_conn_budget(0) == 1, "budget: at least 1");
}

static void test_ring(void) {
  char store[8], out[16];
  ux_ring r = { store, sizeof store, 0, 0 };
  ok(ux_ring_get(&r, out, sizeof out) == 0, "an empty ring gives nothing");
  ok(ux_ring_put(&r, "abcdef", 6) == 6 && r.len == 6, "6 bytes in");
  ok(ux_ring_get(&r, out, 4) == 4 && !memcmp(out, "abcd", 4), "4 out, in order");
  ok(ux_ring_put(&r, "ghijklmn", 8) == 6 && r.len == 8, "a full ring takes only what fits");
  ok(ux_ring_put(&r, "z", 1) == 0, "a full ring takes nothing");
  memset(out, 0, sizeof out);
  ok(ux_ring_get(&r, out, sizeof out) == 8 && !memcmp(out, "efghijkl", 8), "wrapped bytes come out in order");
  ok(r.len == 0 && r.head == 0, "empty again, rewound");
  ux_ring none = { NULL, 0, 0, 0 };
  ok(ux_ring_put(&none, "a", 1) == 0 && ux_ring_get(&none, out, 1) == 0, "a ring without storage holds nothing");
}

static void test_req_headers(void) {
  ux_kv kv[] = { { "Content-Type", "application/json" }, { "X-Trace", "abc" } };
  ux_req r;
  memset(&r, 0, sizeof r);
  r.req_headers = kv;
  r.req_nheaders = 2;
  is_str(ux_req_header(&r, "content-type"), "application/json", "lookup ignores case");
  is_str(ux_req_header(&r, "X-TRACE"), "abc", "any header");
  ok(ux_req_header(&r, "X-Missing") == NULL, "a missing header is NULL");
}

static void test_reply_headers(void) {
  ux_req r;
  memset(&r, 0, sizeof r);
  ok(ux_reply_header(&r, "X-Custom", "1") == 0, "a custom header is added");
  ok(ux_reply_header(&r, "Bad Name", "1") < 0, "a name with a space is refused");
  ok(ux_reply_header(&r, "", "1") < 0, "an empty name is refused");
  ok(ux_reply_header(&r, "X-Split", "a\r\nX-Evil: 1") < 0, "CR/LF in a value is refused");
  ok(ux_reply_header(&r, "content-length", "5") < 0, "Content-Length belongs to the transport");
  ok(ux_reply_header(&r, "X-Request-Id", "x") < 0, "X-Request-Id belongs to the router hook");
  ok(r.reply.nheaders == 1 && !strcmp(r.reply.headers[0].value, "1"), "only the good header is kept");
  ok(ux_reply_content_type(&r, "text/plain\n") < 0, "a content type with LF is refused");
  ok(ux_reply_content_type(&r, "text/plain") == 0 && !strcmp(r.reply.content_type, "text/plain"),
     "a content type is set");
  ok(ux_reply_raw(&r, 200, NULL, "hi", 2) == 0 && r.reply.raw_len == 2 &&
     !strcmp(r.reply.content_type, "text/plain"), "a raw body keeps the content type");
  ok(ux_reply_empty(&r, 204) == 0 && r.reply.empty && !r.reply.raw, "an empty reply drops the body");
  ux_reply_json(&r, 200, json_object());
  ok(r.reply.json && !r.reply.empty, "JSON replaces the empty body");
  ux_reply_clear(&r.reply);
  ok(!r.reply.json && !r.reply.headers && !r.reply.content_type && !r.reply.status,
     "clear frees and zeroes everything");
}

int main(void) {
  test_headers_deadline();
  test_active_time();
  test_body_rate();
  test_caps();
  test_ring();
  test_req_headers();
  test_reply_headers();
  return tap_done();
}
