/*
** Acting subject derivation and shape check (see pseudonym.h). The HMAC
** message is assembled in a buffer that is wiped afterwards: subject ids
** are often e-mail addresses.
*/
#include "core/pseudonym.h"
#include "core/sign.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

static int check_half(int arg, const char *what, const char *s, size_t len, unsb_error *err) {
  if (!s || len == 0) return unsb_invalid(err, arg, "%s must not be empty", what);
  if (memchr(s, '\0', len))
    return unsb_invalid(err, arg, "%s must not contain a NUL byte", what);
  if (!unsb_utf8_valid(s, len))
    return unsb_invalid(err, arg, "%s must be valid UTF-8", what);
  return 0;
}

int unsb_acting_subject(const char *salt, size_t salt_len, const char *tenant, size_t tenant_len,
                        const char *subject, size_t subject_len,
                        char out[UNSB_SUBJECT_LEN + 1], unsb_error *err) {
  char mac[UNSB_SIGNATURE_HEX_LEN + 1];
  char *msg;
  size_t len;
  int rc;

  if (!salt || salt_len < UNSB_SALT_MIN)
    return unsb_invalid(err, 1, "salt must be at least %d bytes, got %zu",
                        UNSB_SALT_MIN, salt ? salt_len : 0);
  if (check_half(2, "tenant", tenant, tenant_len, err) != 0 ||
      check_half(3, "subject", subject, subject_len, err) != 0)
    return -1;
  if (tenant_len > ((size_t)-1) / 2 - subject_len)
    return unsb_invalid(err, 3, "tenant and subject are too long");
  len = tenant_len + 1 + subject_len;
  msg = malloc(len);
  if (!msg) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  memcpy(msg, tenant, tenant_len);
  msg[tenant_len] = '\0';
  memcpy(msg + tenant_len + 1, subject, subject_len);
  rc = unsb_hmac_hex(salt, salt_len, msg, len, mac);
  OPENSSL_cleanse(msg, len);
  free(msg);
  if (rc != 0) return unsb_fail(err, UNSB_EPROTOCOL, "HMAC-SHA256 failed (OpenSSL)");
  memcpy(out, mac, UNSB_SUBJECT_LEN);      /* 16 bytes = 32 hex digits */
  out[UNSB_SUBJECT_LEN] = '\0';
  OPENSSL_cleanse(mac, sizeof mac);
  return 0;
}

int unsb_valid_subject(const char *s, size_t len) {
  if (!s || len != UNSB_SUBJECT_LEN) return 0;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}
