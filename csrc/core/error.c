/*
** Error kinds and messages (see error.h).
*/
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

const char *unsb_kind_name(unsb_kind kind) {
  switch (kind) {
    case UNSB_OK: return "ok";
    case UNSB_ECREDENTIALS: return "credentials";
    case UNSB_ETRANSPORT: return "transport";
    case UNSB_ETIMEOUT: return "timeout";
    case UNSB_EPROTOCOL: return "protocol";
    case UNSB_EVALIDATION: return "validation";
    case UNSB_EINTERRUPTED: return "interrupted";
    case UNSB_ECANCELLED: return "cancelled";
    case UNSB_EIO: return "io";
    case UNSB_ENOMEM: return "memory";
  }
  return "protocol";
}

int unsb_fail(unsb_error *err, unsb_kind kind, const char *fmt, ...) {
  va_list ap;
  if (!err) return -1;
  err->kind = kind;
  err->arg = 0;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return -1;
}

int unsb_invalid(unsb_error *err, int arg, const char *fmt, ...) {
  va_list ap;
  if (!err) return -1;
  err->kind = UNSB_EVALIDATION;
  err->arg = arg;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return -1;
}
