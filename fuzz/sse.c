/*
** The SSE parser on any stream cut into any pieces: the first byte picks
** the caps and the piece size; the pull form (step) and the callback form
** (feed) must agree on the number of events.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sse.h"

static int count(void *ud, const unsb_sse_event *ev) {
  if (!ev->type || !ev->data || !ev->id) abort();
  (*(size_t *)ud)++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t cap = 16 + (data[0] & 0x3f) * 64, piece = 1 + (data[0] >> 6) * 7;
  const char *buf = (const char *)data + 1;
  size_t len = size - 1;
  unsb_error err;
  unsb_sse_event ev;

  unsb_sse *p = unsb_sse_new(cap, cap);
  size_t pulled = 0;
  int failed = 0;
  for (size_t off = 0; off < len && !failed; ) {
    size_t n = len - off < piece ? len - off : piece, used = 0;
    const char *at = buf + off;
    while (n > 0) {
      int rc = unsb_sse_step(p, at, n, &used, &ev, &err);
      if (rc < 0) { failed = 1; break; }
      if (used > n) abort();
      at += used;
      n -= used;
      if (rc == 1) pulled++;
      else break;
    }
    off += (size_t)(at - (buf + off)) + n;
  }
  if (!failed && unsb_sse_finish(p, &ev, &err) == 1) pulled++;
  (void)unsb_sse_retry(p);
  unsb_sse_free(p);

  p = unsb_sse_new(cap, cap);
  size_t fed = 0;
  int failed2 = 0;
  for (size_t off = 0; off < len && !failed2; off += piece) {
    size_t n = len - off < piece ? len - off : piece;
    if (unsb_sse_feed(p, buf + off, n, count, &fed, &err) < 0) failed2 = 1;
  }
  if (!failed2 && unsb_sse_finish(p, &ev, &err) == 1) fed++;
  unsb_sse_free(p);
  if (failed != failed2 || (!failed && pulled != fed)) abort();
  return 0;
}
