/*
** One-line error messages. Names that come from a sandbox (file names,
** archive members) may hold newlines or escape sequences; ag_show makes
** them safe to print on the single stderr line the server passes on.
*/
#include "agent/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ag_fail(ag_err *e, ag_kind kind, const char *fmt, ...) {
  va_list ap;
  e->kind = kind;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int ag_sysfail(ag_err *e, const char *fmt, ...) {
  int saved = errno;
  va_list ap;
  size_t n;
  e->kind = AG_INTERNAL;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  n = strlen(e->msg);
  snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(saved));
  errno = saved;
  return -1;
}

const char *ag_kind_name(ag_kind kind) {
  switch (kind) {
  case AG_INVALID: return "invalid";
  case AG_BUSY: return "busy";
  default: return "internal";
  }
}

const char *ag_show(const char *name, char *out, size_t outlen) {
  size_t i = 0, o = 0;
  if (outlen == 0) return out;
  if (!name) name = "(null)";
  for (; name[i] && o + 1 < outlen; i++) {
    unsigned char c = (unsigned char)name[i];
    if (i >= 200) {
      if (o + 4 <= outlen) { memcpy(out + o, "...", 3); o += 3; }
      break;
    }
    out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  out[o] = '\0';
  return out;
}
