/*
** One buffered call of the HTTP engine (core/http.h) the way the binding
** makes it (csrc/lua/exchange.c, outside a task): a transfer opened by
** the caller, driven by the shared loop until it is done, its result
** taken, then closed. The core has no other blocking path, so the C
** tests exercise exactly what Lua runs. Static in a header, like tap.h,
** because each test is one translation unit linked on its own.
*/
#ifndef XFER_UTIL_H
#define XFER_UTIL_H

#include <string.h>

#include "core/http.h"

/* x as unsb_http_open (or unsb_cp_open, unsb_client_open) returned it:
** NULL means the open failed and err says why. 0 with resp (free it with
** unsb_http_response_free) for any HTTP status, or -1 with err. x is
** closed either way. */
static inline int xfer_finish(unsb_http_xfer *x, unsb_http_response *resp, unsb_error *err) {
  int rc;
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
  if (!x) return -1;
  rc = unsb_http_drive(unsb_http_of(x), x, err);
  if (rc == 0) rc = unsb_http_result(x, resp, err);
  unsb_http_close(x);
  return rc;
}

/* unsb_http_open then xfer_finish: one request of h. */
static inline int xfer_call(unsb_http *h, const unsb_http_request *req, unsb_http_response *resp,
                            unsb_error *err) {
  return xfer_finish(unsb_http_open(h, req, err), resp, err);
}

#endif
