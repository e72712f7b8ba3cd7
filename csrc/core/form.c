/*
** Form encoding (see form.h) into a bounded buffer.
*/
#include "core/form.h"
#include "core/buf.h"

static int unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_' || c == '~';
}

static int encode(unsb_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  int rc = UNSB_BUF_OK;
  for (size_t i = 0; i < n && rc == UNSB_BUF_OK; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
    if (unreserved(c)) rc = unsb_buf_append(b, s + i, 1);
    else if (c == ' ') rc = unsb_buf_append(b, "+", 1);
    else rc = unsb_buf_append(b, esc, 3);
  }
  return rc;
}

char *unsb_form_encode(const unsb_form_pair *pairs, size_t n, size_t max_len, size_t *out_len,
                       unsb_error *err) {
  unsb_buf b;
  int rc = UNSB_BUF_OK;
  for (size_t i = 0; i < n; i++) {
    if (!pairs[i].key || pairs[i].key_len == 0) {
      unsb_invalid(err, 1, "query parameter %zu has an empty name", i + 1);
      return NULL;
    }
  }
  unsb_buf_init(&b, max_len ? max_len : (size_t)-1);
  rc = unsb_buf_append(&b, "", 0);                /* "" rather than NULL when all drop */
  for (size_t i = 0; i < n && rc == UNSB_BUF_OK; i++) {
    if (!pairs[i].value || pairs[i].value_len == 0) continue;
    if (b.len > 0) rc = unsb_buf_append(&b, "&", 1);
    if (rc == UNSB_BUF_OK) rc = encode(&b, pairs[i].key, pairs[i].key_len);
    if (rc == UNSB_BUF_OK) rc = unsb_buf_append(&b, "=", 1);
    if (rc == UNSB_BUF_OK) rc = encode(&b, pairs[i].value, pairs[i].value_len);
  }
  if (rc != UNSB_BUF_OK) {
    unsb_buf_free(&b);
    if (rc == UNSB_BUF_NOMEM) unsb_fail(err, UNSB_ENOMEM, "out of memory");
    else unsb_invalid(err, 2, "query string is longer than %zu bytes", max_len);
    return NULL;
  }
  *out_len = b.len;
  return unsb_buf_take(&b);
}
