/*
** Session ids and object id normalisation (see cpids.h). The normaliser
** writes at most 64 characters and stops: anything longer takes the hash
** fallback anyway, so the input's length never sizes a buffer.
*/
#include "core/cpids.h"
#include "core/digest.h"
#include "core/utf8.h"
#include "core/validate.h"

#include <string.h>

int unsb_session_id(const char *key, size_t len, char out[UNSB_SESSION_ID_LEN + 1],
                    unsb_error *err) {
  char hex[UNSB_SHA256_HEX_LEN + 1];
  if (!key || len == 0) return unsb_fail(err, UNSB_EVALIDATION, "session key must not be empty");
  if (!unsb_utf8_valid(key, len))
    return unsb_fail(err, UNSB_EVALIDATION, "session key must be valid UTF-8");
  if (unsb_sha256_hex(key, len, hex) != 0)
    return unsb_fail(err, UNSB_EPROTOCOL, "SHA-256 failed (OpenSSL)");
  memcpy(out, hex, UNSB_SESSION_ID_LEN);
  out[UNSB_SESSION_ID_LEN] = '\0';
  return 0;
}

/* What one code point contributes: up to two ASCII characters, where any
** non-alphanumeric one is written as '-'. */
static size_t map_code_point(uint32_t cp, char out[2]) {
  if (cp >= 'A' && cp <= 'Z') { out[0] = (char)(cp - 'A' + 'a'); return 1; }
  if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9')) { out[0] = (char)cp; return 1; }
  if (cp == 0x0130) { out[0] = 'i'; out[1] = '-'; return 2; }   /* i + U+0307 */
  if (cp == 0x212a) { out[0] = 'k'; return 1; }                 /* KELVIN SIGN */
  out[0] = '-';
  return 1;
}

/* Normalised form into out; returns its length, or 64 when it is too long. */
static size_t normalise(const unsigned char *s, size_t len, char *out) {
  size_t n = 0, i = 0;
  int dash = 0;   /* a '-' is pending: written only before the next alnum */
  while (i < len && n <= UNSB_OBJECT_ID_MAX) {
    uint32_t cp;
    char m[2];
    size_t used = unsb_utf8_next(s + i, len - i, &cp);
    if (used == 0) { cp = 0xfffd; used = 1; }   /* one invalid byte = one character */
    i += used;
    size_t k = map_code_point(cp, m);
    for (size_t j = 0; j < k; j++) {
      if (m[j] == '-') { dash = n > 0; continue; }   /* leading dashes vanish */
      if (dash && n <= UNSB_OBJECT_ID_MAX) out[n++] = '-';
      dash = 0;
      if (n <= UNSB_OBJECT_ID_MAX) out[n++] = m[j];
    }
  }
  return n;   /* trailing dashes were never written */
}

int unsb_object_id(const char *s, size_t len, char out[UNSB_OBJECT_ID_MAX + 1], unsb_error *err) {
  char buf[UNSB_OBJECT_ID_MAX + 2], hex[UNSB_SHA256_HEX_LEN + 1];
  size_t n = normalise((const unsigned char *)(s ? s : ""), s ? len : 0, buf);
  if (n > 0 && n <= UNSB_OBJECT_ID_MAX) {
    memcpy(out, buf, n);
    out[n] = '\0';
    return 0;
  }
  if (unsb_sha256_hex(s ? s : "", s ? len : 0, hex) != 0)
    return unsb_fail(err, UNSB_EPROTOCOL, "SHA-256 failed (OpenSSL)");
  memcpy(out, "id-", 3);
  memcpy(out + 3, hex, 32);
  out[35] = '\0';
  return 0;
}

const char *unsb_cp_sandbox_name_check(const char *name, size_t len) {
  if (!name || unsb_blank(name, len)) return "must not be blank";
  if (len > UNSB_SANDBOX_NAME_MAX) return "at most 128 bytes";
  if (memchr(name, '\0', len)) return "must not contain a NUL byte";
  if (!unsb_utf8_valid(name, len)) return "must be valid UTF-8";
  return NULL;
}
