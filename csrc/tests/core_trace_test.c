/*
** Trace context (core/trace.h): every case of spec/fixtures/trace.json,
** written out here because the core has no JSON reader (the #unit spec
** runs the JSON file itself through the binding), plus random ids and the
** outbound header.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/trace.h"
#include "tests/tap.h"

static const struct { const char *rid, *trace; } REQUEST_IDS[] = {
  {"a-request-id", "98ddafa34fb2d8abc4ce108b4d536616"},
  {"shared-request-id", "57070f2ae4130c9b73559c77f94f34c6"},
  {"req-123", "4e4af1e8fe818e12e32bac7236e10825"},
  {" req-123 ", "4e4af1e8fe818e12e32bac7236e10825"},
  {"\treq-123\t", "4e4af1e8fe818e12e32bac7236e10825"},
  {"r\xc3\xa9q-\xe2\x9c\x93", "603dd2b7fc93b69efbd01d6b26fe3f4a"},
};

#define TP "4bf92f3577b34da6a3ce929d0e0e4736"
static const struct { const char *value, *trace, *flags; } TRACEPARENTS[] = {
  {"00-" TP "-00f067aa0ba902b7-01", TP, "01"},
  {"00-" TP "-00f067aa0ba902b7-00", TP, "00"},
  {"00-" TP "-00f067aa0ba902b7-ff", TP, "ff"},
  {"  00-" TP "-00f067aa0ba902b7-01  ", TP, "01"},
  {"\t00-" TP "-00f067aa0ba902b7-01\t", TP, "01"},
  {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", NULL, NULL},
  {"00-" TP "-00f067aa0ba902b7-0A", NULL, NULL},
  {"01-" TP "-00f067aa0ba902b7-01", NULL, NULL},
  {"ff-" TP "-00f067aa0ba902b7-01", NULL, NULL},
  {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", NULL, NULL},
  {"00-" TP "-0000000000000000-01", NULL, NULL},
  {"00-" TP "-00f067aa0ba902b7", NULL, NULL},
  {"00-" TP "-00f067aa0ba902b7-01-00", NULL, NULL},
  {"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", NULL, NULL},
  {"", NULL, NULL},
  /* not in the vectors: hostile shapes */
  {"00_" TP "-00f067aa0ba902b7-01", NULL, NULL},
  {"00-" TP "-00f067aa0ba902b7-0g", NULL, NULL},
  {"00-" TP "-00f067aa0ba902b7-01\n00-" TP "-00f067aa0ba902b7-01", NULL, NULL},
  {"00-" TP "x00f067aa0ba902b7-01", NULL, NULL},
};

static void vectors(void) {
  char out[UNSB_TRACE_ID_LEN + 1];
  unsb_traceparent tp;
  for (size_t i = 0; i < sizeof REQUEST_IDS / sizeof *REQUEST_IDS; i++) {
    const char *r = REQUEST_IDS[i].rid;
    ok(unsb_trace_from_request_id(r, strlen(r), out) == 1, "request id vector %zu derives", i + 1);
    is_str(out, REQUEST_IDS[i].trace, "request id vector %zu: trace id", i + 1);
  }
  for (size_t i = 0; i < sizeof TRACEPARENTS / sizeof *TRACEPARENTS; i++) {
    const char *v = TRACEPARENTS[i].value;
    int valid = unsb_trace_parse(v, strlen(v), &tp);
    if (TRACEPARENTS[i].trace) {
      ok(valid == 1, "traceparent %zu is valid", i + 1);
      is_str(tp.trace_id, TRACEPARENTS[i].trace, "traceparent %zu: trace id", i + 1);
      is_str(tp.flags, TRACEPARENTS[i].flags, "traceparent %zu: flags inherited", i + 1);
      is_str(tp.span_id, "00f067aa0ba902b7", "traceparent %zu: span id", i + 1);
    } else {
      ok(valid == 0 && tp.trace_id[0] == '\0', "traceparent %zu is invalid", i + 1);
    }
  }
  ok(unsb_trace_parse(NULL, 0, &tp) == 0, "no header is invalid");
  ok(unsb_trace_from_request_id("   ", 3, out) == 0, "blank request id gives nothing");
  ok(unsb_trace_from_request_id(NULL, 0, out) == 0, "absent request id gives nothing");
}

static void resolution(void) {
  char trace[UNSB_TRACE_ID_LEN + 1], trace2[UNSB_TRACE_ID_LEN + 1], flags[3];
  unsb_trace_source src;
  unsb_error err;
  const char *good = "00-" TP "-00f067aa0ba902b7-00";
  const char *upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";

  ok(unsb_trace_resolve(good, strlen(good), "req-123", 7, trace, flags, &src, &err) == 0 &&
     src == UNSB_TRACE_FROM_TRACEPARENT, "resolution 1: traceparent wins");
  is_str(trace, TP, "resolution 1: trace id");
  is_str(flags, "00", "resolution 1: flags 00 kept");
  ok(unsb_trace_resolve(upper, strlen(upper), "req-123", 7, trace, flags, &src, &err) == 0 &&
     src == UNSB_TRACE_FROM_REQUEST_ID, "resolution 2: malformed traceparent, request id used");
  is_str(trace, "4e4af1e8fe818e12e32bac7236e10825", "resolution 2: trace id");
  is_str(flags, "01", "resolution 2: flags 01");
  ok(unsb_trace_resolve(NULL, 0, "  req-123  ", 11, trace, flags, &src, &err) == 0 &&
     src == UNSB_TRACE_FROM_REQUEST_ID, "resolution 3: request id only");
  is_str(trace, "4e4af1e8fe818e12e32bac7236e10825", "resolution 3: trace id");
  ok(unsb_trace_resolve(NULL, 0, "   ", 3, trace, flags, &src, &err) == 0 &&
     src == UNSB_TRACE_RANDOM && unsb_trace_valid_hex(trace, strlen(trace), 32),
     "resolution 4: blank request id, random trace id");
  is_str(flags, "01", "resolution 4: flags 01");
  ok(unsb_trace_resolve(NULL, 0, NULL, 0, trace2, flags, &src, &err) == 0 &&
     src == UNSB_TRACE_RANDOM && unsb_trace_valid_hex(trace2, strlen(trace2), 32) &&
     strcmp(trace, trace2) != 0, "resolution 5: no headers, a fresh random id each time");
}

static void outbound(void) {
  char out[UNSB_TRACEPARENT_LEN + 1], first[UNSB_TRACEPARENT_LEN + 1];
  unsb_traceparent tp;
  unsb_error err;
  int distinct = 1;

  ok(unsb_trace_outbound(TP, NULL, out, &err) == 0, "outbound with a given trace id");
  ok(unsb_trace_parse(out, strlen(out), &tp) == 1, "it parses back: %s", out);
  is_str(tp.trace_id, TP, "same trace id");
  is_str(tp.flags, "01", "default flags 01");
  memcpy(first, out, sizeof out);
  for (int i = 0; i < 1000 && distinct; i++) {
    unsb_trace_outbound(TP, "00", out, &err);
    distinct = strcmp(out + 36, first + 36) != 0 && strncmp(out + 52, "-00", 3) == 0;
  }
  ok(distinct, "a new span for each of 1000 requests, flags carried");
  ok(unsb_trace_outbound(NULL, NULL, out, &err) == 0 && unsb_trace_parse(out, strlen(out), &tp) &&
     strcmp(tp.trace_id, TP) != 0, "no trace id: a random one");
  ok(unsb_trace_outbound("4BF92F3577B34DA6A3CE929D0E0E4736", NULL, out, &err) == -1 &&
     err.kind == UNSB_EVALIDATION, "upper-case trace id refused");
  ok(unsb_trace_outbound("00000000000000000000000000000000", NULL, out, &err) == -1,
     "all-zero trace id refused");
  ok(unsb_trace_outbound(TP "00", NULL, out, &err) == -1, "34-digit trace id refused");
  ok(unsb_trace_outbound(TP, "1", out, &err) == -1 && err.kind == UNSB_EVALIDATION,
     "one-digit flags refused");
  ok(unsb_trace_outbound(TP, "0A", out, &err) == -1, "upper-case flags refused");
  ok(unsb_trace_outbound(TP, "01\r\nX: y", out, &err) == -1, "header injection in flags refused");

  char span[UNSB_SPAN_ID_LEN + 1];
  ok(unsb_span_random_id(span, &err) == 0 && unsb_trace_valid_hex(span, strlen(span), 16),
     "random span id: 16 hex, not zero");
  ok(!unsb_trace_valid_hex("0000", 4, 4) && unsb_trace_valid_hex("000a", 4, 4) &&
     !unsb_trace_valid_hex("000a", 4, 5) && !unsb_trace_valid_hex(NULL, 0, 0),
     "valid_hex: zeros, length and NULL");
}

/* Ids come from a pool that is refilled 1 KiB at a time: thousands in a
** row are all different (across refills too), and a forked child draws
** other ids than its parent does next. */
static void pool(void) {
  enum { N = 3000 };
  static char ids[N][UNSB_SPAN_ID_LEN + 1];
  unsb_error err;
  int bad = 0;
  for (int i = 0; i < N && !bad; i++) bad = unsb_span_random_id(ids[i], &err) != 0;
  ok(!bad, "%d span ids in a row", N);
  qsort(ids, N, sizeof ids[0], (int (*)(const void *, const void *))strcmp);
  int dup = 0;
  for (int i = 1; i < N; i++) dup += strcmp(ids[i - 1], ids[i]) == 0;
  ok(dup == 0, "no two of them equal (%d repeated)", dup);

  int fds[2];
  char mine[UNSB_TRACE_ID_LEN + 1], child[UNSB_TRACE_ID_LEN + 1] = "";
  ok(pipe(fds) == 0, "pipe");
  pid_t pid = fork();
  if (pid == 0) {
    char id[UNSB_TRACE_ID_LEN + 1];
    ssize_t w = unsb_trace_random_id(id, &err) == 0 ? write(fds[1], id, UNSB_TRACE_ID_LEN) : -1;
    _exit(w == UNSB_TRACE_ID_LEN ? 0 : 1);
  }
  ok(unsb_trace_random_id(mine, &err) == 0, "the parent's next id");
  ok(read(fds[0], child, UNSB_TRACE_ID_LEN) == UNSB_TRACE_ID_LEN && waitpid(pid, NULL, 0) == pid,
     "the child's first id");
  child[UNSB_TRACE_ID_LEN] = '\0';
  ok(strcmp(mine, child) != 0, "a forked child does not repeat its parent's id");
  close(fds[0]);
  close(fds[1]);
}

int main(void) {
  vectors();
  resolution();
  outbound();
  pool();
  return tap_done();
}
