/*
** HMAC-SHA256 request signatures (see sign.h). The message is fed to
** OpenSSL in pieces so that a large body is never copied.
*/
#include "core/sign.h"

#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

typedef struct piece { const char *p; size_t n; } piece;

static int hmac_pieces(const char *key, size_t key_len, const piece *pieces, size_t count,
                       char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  int rc = -1, ok;
  EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
    OSSL_PARAM_construct_end(),
  };

  ok = ctx && EVP_MAC_init(ctx, (const unsigned char *)key, key_len, params) == 1;
  for (size_t i = 0; ok && i < count; i++)
    ok = pieces[i].n == 0 || EVP_MAC_update(ctx, (const unsigned char *)pieces[i].p, pieces[i].n) == 1;
  if (ok && EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1 && mac_len == 32) {
    for (size_t i = 0; i < mac_len; i++) {
      out[2 * i] = hex[mac[i] >> 4];
      out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[UNSB_SIGNATURE_HEX_LEN] = '\0';
    rc = 0;
  }
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(hmac);
  OPENSSL_cleanse(mac, sizeof mac);
  return rc;
}

int unsb_hmac_hex(const char *key, size_t key_len, const char *msg, size_t msg_len,
                  char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  piece p = { msg, msg_len };
  if (!key || !out || (!msg && msg_len)) return -1;
  return hmac_pieces(key, key_len, &p, 1, out);
}

int unsb_sign(const char *secret, size_t secret_len,
              const char *timestamp, const char *method, const char *path,
              const char *body, size_t body_len,
              char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  if (!secret || !timestamp || !method || !path || !out || (!body && body_len))
    return -1;
  piece pieces[] = {
    { timestamp, strlen(timestamp) }, { ":", 1 },
    { method, strlen(method) }, { ":", 1 },
    { path, strlen(path) }, { ":", 1 },
    { body, body_len },
  };
  return hmac_pieces(secret, secret_len, pieces, sizeof pieces / sizeof pieces[0], out);
}

size_t unsb_path_for_signing(const char *target) {
  const char *q = strchr(target, '?');
  return q ? (size_t)(q - target) : strlen(target);
}

int unsb_signature_equal(const char *a, const char *b) {
  size_t la, lb;
  if (!a || !b) return 0;
  la = strlen(a);
  lb = strlen(b);
  /* the length of a signature is public (always 64); only content is secret */
  if (la != lb) return 0;
  return CRYPTO_memcmp(a, b, la) == 0;
}
