/*
** Response header lines as a server sends them: the value extraction and
** Retry-After (delay digits, HTTP dates, garbage). A delay is always
** within 0..UNSB_RETRY_AFTER_MAX or -1.
*/
#include <stdint.h>
#include <stdlib.h>

#include "core/headers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *line = (const char *)data;
  size_t vlen = 0;
  const char *v = unsb_header_value(line, size, "Retry-After", &vlen);
  if (v && (v < line || v + vlen > line + size)) abort();
  long long s = unsb_retry_after(v ? v : line, v ? vlen : size, 1767225600);
  if (s < -1 || s > UNSB_RETRY_AFTER_MAX) abort();
  v = unsb_header_value(line, size, "X-Request-Id", &vlen);
  if (v && (v < line || v + vlen > line + size)) abort();
  return 0;
}
