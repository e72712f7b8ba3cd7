/*
** argv quoting (see quote.h), built in a bounded buffer so a caller's
** limit (the Control Plane accepts 8192-byte commands) is enforced while
** building rather than after allocating the whole result.
*/
#include "core/quote.h"
#include "core/buf.h"

#include <string.h>

static int bare(const char *s, size_t len) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             (c && strchr("_@%+=:,./-", c));
    if (!ok) return 0;
  }
  return 1;
}

static int quote_one(unsb_buf *b, const char *s, size_t len) {
  int rc;
  if (bare(s, len)) return unsb_buf_append(b, s, len);
  rc = unsb_buf_append(b, "'", 1);
  for (size_t i = 0; i < len && rc == UNSB_BUF_OK; i++)
    rc = s[i] == '\'' ? unsb_buf_append(b, "'\"'\"'", 5) : unsb_buf_append(b, s + i, 1);
  if (rc == UNSB_BUF_OK) rc = unsb_buf_append(b, "'", 1);
  return rc;
}

char *unsb_shell_quote(const char *const *args, const size_t *lens, size_t n, size_t max_len,
                       size_t *out_len, unsb_error *err) {
  unsb_buf b;
  int rc = UNSB_BUF_OK;
  if (n == 0) {
    unsb_invalid(err, 1, "argv must hold at least the command");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!args[i] || memchr(args[i], '\0', lens[i])) {
      unsb_invalid(err, 1, "argument %zu contains a NUL byte", i + 1);
      return NULL;
    }
  }
  unsb_buf_init(&b, max_len ? max_len : ((size_t)-1));
  for (size_t i = 0; i < n && rc == UNSB_BUF_OK; i++) {
    if (i > 0) rc = unsb_buf_append(&b, " ", 1);
    if (rc == UNSB_BUF_OK) rc = quote_one(&b, args[i], lens[i]);
  }
  if (rc == UNSB_BUF_OK && !b.p) rc = unsb_buf_append(&b, "", 0);   /* never NULL */
  if (rc != UNSB_BUF_OK) {
    unsb_buf_free(&b);
    if (rc == UNSB_BUF_NOMEM) unsb_fail(err, UNSB_ENOMEM, "out of memory");
    else unsb_invalid(err, 2, "quoted command is longer than %zu bytes", max_len);
    return NULL;
  }
  *out_len = b.len;
  return unsb_buf_take(&b);
}
