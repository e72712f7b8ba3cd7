/*
** The SSE parser (core/sse.h). Each recorded stream is fed whole, split at
** every single point, split at every pair of points (three pieces) and
** byte by byte, and must give the same events each time: chunking is what
** a socket does to a stream, so it must never change the result.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/sse.h"
#include "tests/tap.h"

typedef struct { const char *type, *id, *data; } want_event;

/* Events are serialised with lengths so that any byte, NUL included, counts. */
static void record(unsb_buf *out, const char *type, size_t tn, const char *id, size_t in,
                   const char *data, size_t dn) {
  char head[96];
  snprintf(head, sizeof head, "[%zu:", tn);
  unsb_buf_append_str(out, head);
  unsb_buf_append(out, type, tn);
  snprintf(head, sizeof head, "|%zu:", in);
  unsb_buf_append_str(out, head);
  unsb_buf_append(out, id, in);
  snprintf(head, sizeof head, "|%zu:", dn);
  unsb_buf_append_str(out, head);
  unsb_buf_append(out, data, dn);
  unsb_buf_append_str(out, "]");
}

static int on_event(void *ud, const unsb_sse_event *ev) {
  record(ud, ev->type, ev->type_len, ev->id, ev->id_len, ev->data, ev->data_len);
  return 0;
}

static void expected(unsb_buf *out, const want_event *w, size_t n) {
  unsb_buf_init(out, 1 << 20);
  for (size_t i = 0; i < n; i++)
    record(out, w[i].type, strlen(w[i].type), w[i].id, strlen(w[i].id), w[i].data,
           strlen(w[i].data));
}

/* Feeds s split at the given cut points (ascending); 0 or -1. */
static int run(const char *s, size_t len, const size_t *cuts, size_t ncuts, unsb_buf *out,
               unsb_error *err) {
  unsb_sse *p = unsb_sse_new(0, 0);
  unsb_sse_event ev;
  size_t from = 0;
  int rc = 0;
  unsb_buf_init(out, 1 << 20);
  for (size_t i = 0; i <= ncuts && rc == 0; i++) {
    size_t to = i < ncuts ? cuts[i] : len;
    rc = unsb_sse_feed(p, s + from, to - from, on_event, out, err);
    from = to;
  }
  if (rc == 0) {
    int f = unsb_sse_finish(p, &ev, err);
    if (f == 1) on_event(out, &ev);
    rc = f < 0 ? -1 : 0;
  }
  unsb_sse_free(p);
  return rc;
}

static int same(const unsb_buf *a, const unsb_buf *b) {
  return a->len == b->len && memcmp(unsb_buf_str(a), unsb_buf_str(b), a->len) == 0;
}

/* Every way of cutting s into two and three pieces, and byte by byte. */
static void check_stream(const char *name, const char *s, size_t len, const want_event *w,
                         size_t nw) {
  unsb_buf want, got;
  unsb_error err;
  size_t cuts[2], bad_i = 0, bad_j = 0, runs = 0;
  int all = 1;

  expected(&want, w, nw);
  ok(run(s, len, NULL, 0, &got, &err) == 0 && same(&got, &want), "%s: whole stream", name);
  if (!same(&got, &want)) printf("#   got  %s\n#   want %s\n", unsb_buf_str(&got), unsb_buf_str(&want));
  unsb_buf_free(&got);
  for (size_t i = 0; i <= len && all; i++) {
    for (size_t j = i; j <= len && all; j++) {
      cuts[0] = i;
      cuts[1] = j;
      runs++;
      if (run(s, len, cuts, 2, &got, &err) != 0 || !same(&got, &want)) {
        all = 0;
        bad_i = i;
        bad_j = j;
      }
      unsb_buf_free(&got);
    }
  }
  ok(all, "%s: all %zu ways of cutting %zu bytes into three pieces", name, runs, len);
  if (!all) printf("#   first failure at cuts %zu, %zu\n", bad_i, bad_j);

  size_t *every = malloc((len ? len : 1) * sizeof *every);
  for (size_t i = 0; every && i < len; i++) every[i] = i;
  ok(every && run(s, len, every, len, &got, &err) == 0 && same(&got, &want),
     "%s: byte by byte", name);
  unsb_buf_free(&got);
  free(every);
  unsb_buf_free(&want);
}

#define CHECK(name, stream, ...) do {                                      \
    static const want_event w_[] = {__VA_ARGS__};                          \
    check_stream(name, stream, sizeof stream - 1, w_, sizeof w_ / sizeof *w_); \
  } while (0)

static void recorded_streams(void) {
  /* the Control Plane's MCP shell stream (§5.5): progress, then the result */
  CHECK("mcp exec_stream",
        "event: message\n"
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"sandbox-client-1-a1b2c3\",\"progress\":1,\"message\":\"hello\\n\",\"_meta\":{\"channel\":\"stdout\",\"sequence\":1}}}\n"
        "\n"
        "event: message\n"
        "data: {\"jsonrpc\":\"2.0\",\"id\":\"sandbox-client-1-a1b2c3\",\"result\":{\"structuredContent\":{\"exit_code\":0,\"stream_chunks\":1}}}\n"
        "\n",
        {"message", "", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"sandbox-client-1-a1b2c3\",\"progress\":1,\"message\":\"hello\\n\",\"_meta\":{\"channel\":\"stdout\",\"sequence\":1}}}"},
        {"message", "", "{\"jsonrpc\":\"2.0\",\"id\":\"sandbox-client-1-a1b2c3\",\"result\":{\"structuredContent\":{\"exit_code\":0,\"stream_chunks\":1}}}"});

  /* the three line ends, mixed; CR LF split across chunks is one end */
  CHECK("mixed line ends",
        "data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\ndata: e\r\r\n",
        {"message", "", "a"}, {"message", "", "b"}, {"message", "", "c"}, {"message", "", "d\ne"});

  /* fields: multi-line data, one space dropped, comments, unknown fields,
  ** a field without a colon, id persisting, event type reset per event */
  CHECK("fields",
        ": a comment\n"
        "data:x\n"
        "data: y\n"
        "data:  z\n"
        "unknown: ignored\n"
        "event: custom\n"
        "id: 7\n"
        "\n"
        "data\n"
        "data\n"
        "\n"
        "id\n"
        "data:last\n"
        "\n",
        {"custom", "7", "x\ny\n z"}, {"message", "7", "\n"}, {"message", "", "last"});

  /* no data: nothing is dispatched and the event type does not leak */
  CHECK("events without data",
        "event: ping\n\n"
        "id: 3\n\n"
        ":keep-alive\n\n"
        "data: after\n\n",
        {"message", "3", "after"});

  /* a leading BOM is dropped once; a second one is data */
  CHECK("byte order mark",
        "\xef\xbb\xbf" "data: one\n\n" "data: \xef\xbb\xbftwo\n\n",
        {"message", "", "one"}, {"message", "", "\xef\xbb\xbftwo"});

  /* end of stream: the pending event is dispatched (§7.11), an unfinished
  ** last line is processed first */
  CHECK("EOF without a blank line", "data: one\n\ndata: two\ndata: three",
        {"message", "", "one"}, {"message", "", "two\nthree"});
  CHECK("EOF after CR", "event: e\rdata: x\r", {"e", "", "x"});

  /* field names are case-sensitive and exact; id with a NUL is ignored */
  CHECK("exact field names",
        "Data: no\nDATA: no\ndata : no\nid: 5\n\nid: a\0b\ndata: kept\n\n",
        {"message", "5", "kept"});
}

static void retry_and_nul(void) {
  unsb_sse *p = unsb_sse_new(0, 0);
  unsb_sse_event ev;
  unsb_error err;
  size_t used;
  static const char s[] = "retry: 1500\nretry: 12x\nretry:\nretry: -1\ndata: a\0b\n\n";
  ok(unsb_sse_retry(p) == -1, "no retry before one is seen");
  ok(unsb_sse_step(p, s, sizeof s - 1, &used, &ev, &err) == 1 && used == sizeof s - 1,
     "event after the retry lines");
  ok(unsb_sse_retry(p) == 1500, "retry: only digits count (1500, not 12x, '' or -1)");
  ok(ev.data_len == 3 && memcmp(ev.data, "a\0b", 3) == 0, "data keeps a NUL byte");
  static const char big[] = "retry: 86400001\n\nretry: 99999999999999999999999\n\n";
  ok(unsb_sse_step(p, big, sizeof big - 1, &used, &ev, &err) == 0, "no event from retry lines");
  ok(unsb_sse_retry(p) == 1500, "retry beyond a day (and overflowing) is ignored");
  unsb_sse_free(p);
}

/* step hands back one event at a time and says how much it consumed */
static void stepping(void) {
  unsb_sse *p = unsb_sse_new(0, 0);
  unsb_sse_event ev;
  unsb_error err;
  size_t used;
  const char *s = "data: 1\n\ndata: 2\n\ndata: 3";
  ok(unsb_sse_step(p, s, strlen(s), &used, &ev, &err) == 1 && used == 9 &&
     strcmp(ev.data, "1") == 0, "first event, 9 bytes consumed");
  s += used;
  ok(unsb_sse_step(p, s, strlen(s), &used, &ev, &err) == 1 && used == 9 &&
     strcmp(ev.data, "2") == 0, "second event");
  s += used;
  ok(unsb_sse_step(p, s, strlen(s), &used, &ev, &err) == 0 && used == 7, "rest consumed, no event");
  ok(unsb_sse_step(p, "", 0, &used, &ev, &err) == 0 && used == 0, "empty input");
  ok(unsb_sse_finish(p, &ev, &err) == 1 && strcmp(ev.data, "3") == 0, "finish dispatches '3'");
  ok(unsb_sse_step(p, "x", 1, &used, &ev, &err) == -1 && err.kind == UNSB_EVALIDATION,
     "step after finish is refused");
  ok(unsb_sse_finish(p, &ev, &err) == -1 && err.kind == UNSB_EVALIDATION, "finish twice is refused");
  unsb_sse_free(p);

  p = unsb_sse_new(0, 0);
  ok(unsb_sse_finish(p, &ev, &err) == 0, "an empty stream has no event");
  unsb_sse_free(p);
}

static int stop_at_first(void *ud, const unsb_sse_event *ev) {
  (*(int *)ud)++;
  return 7;
}

static void callback_stop(void) {
  unsb_sse *p = unsb_sse_new(0, 0);
  unsb_error err;
  int calls = 0;
  const char *s = "data: 1\n\ndata: 2\n\n";
  ok(unsb_sse_feed(p, s, strlen(s), stop_at_first, &calls, &err) == 7 && calls == 1,
     "a callback's positive value stops the feed after one event");
  unsb_sse_free(p);
}

static void caps(void) {
  unsb_sse *p = unsb_sse_new(16, 8);
  unsb_sse_event ev;
  unsb_error err;
  size_t used;
  char line[64];

  /* a line of exactly 16 bytes is fine, also when it arrives in pieces */
  ok(unsb_sse_step(p, "data: 0123", 10, &used, &ev, &err) == 0, "first half of a 16-byte line");
  ok(unsb_sse_step(p, "456789\n\n", 8, &used, &ev, &err) == -1 && err.kind == UNSB_EPROTOCOL,
     "16-byte line but 10 bytes of data: over the 8-byte event cap");
  ok(strstr(err.message, "event data longer than 8 bytes") != NULL, "message names the cap: %s",
     err.message);
  ok(unsb_sse_step(p, "\n", 1, &used, &ev, &err) == -1 && err.kind == UNSB_EPROTOCOL,
     "the parser stays failed");
  ok(unsb_sse_finish(p, &ev, &err) == -1 && err.kind == UNSB_EPROTOCOL, "finish too");
  unsb_sse_free(p);

  p = unsb_sse_new(16, 8);
  ok(unsb_sse_step(p, "data: 01234567\n\n", 16, &used, &ev, &err) == 1 && ev.data_len == 8,
     "exactly 8 bytes of data is an event");
  ok(unsb_sse_step(p, "data: 0123\ndata: 456\n\n", 22, &used, &ev, &err) == 1 &&
     strcmp(ev.data, "0123\n456") == 0, "8 bytes over two lines (with the joining newline)");
  ok(unsb_sse_step(p, "data: 0123\ndata: 4567\n\n", 23, &used, &ev, &err) == -1,
     "9 bytes over two lines is refused");
  unsb_sse_free(p);

  p = unsb_sse_new(16, 1024);
  memset(line, 'x', sizeof line);
  memcpy(line, ": ", 2);
  ok(unsb_sse_step(p, line, 16, &used, &ev, &err) == 0, "16 bytes of a line without an end");
  ok(unsb_sse_step(p, line, 1, &used, &ev, &err) == -1 && err.kind == UNSB_EPROTOCOL &&
     strstr(err.message, "line longer than 16 bytes"), "the 17th byte of the line is refused");
  unsb_sse_free(p);

  /* a huge line is refused early: the cap, not the input, bounds memory */
  p = unsb_sse_new(1024, 1024);
  size_t total = 0;
  int rc = 0;
  char *junk = malloc(1 << 16);
  memset(junk, 'a', 1 << 16);
  for (int i = 0; i < 1600 && rc == 0; i++) {   /* up to 100 MiB */
    rc = unsb_sse_step(p, junk, 1 << 16, &used, &ev, &err);
    total += 1 << 16;
  }
  ok(rc == -1 && total == 1 << 16, "a 100 MiB line fails within its first 64 KiB");
  free(junk);
  unsb_sse_free(p);
}

/* many events through one parser: state is cleared between events */
static void long_stream(void) {
  unsb_sse *p = unsb_sse_new(64, 64);
  unsb_sse_event ev;
  unsb_error err;
  size_t used;
  char chunk[64];
  int good = 1, n;
  for (int i = 0; i < 100000 && good; i++) {
    n = snprintf(chunk, sizeof chunk, "event: e%d\ndata: %d\n\n", i % 3, i);
    int rc = unsb_sse_step(p, chunk, (size_t)n, &used, &ev, &err);
    char want[32];
    snprintf(want, sizeof want, "%d", i);
    good = rc == 1 && strcmp(ev.data, want) == 0 && ev.type[1] - '0' == i % 3;
  }
  ok(good, "100000 events through one parser with 64-byte caps");
  unsb_sse_free(p);
}

int main(void) {
  recorded_streams();
  retry_and_nul();
  stepping();
  callback_stop();
  caps();
  long_stream();
  return tap_done();
}
