/*
** HMAC-SHA256 request signatures (see sign.h). The message is fed to
** OpenSSL in pieces so that a large body is never copied.
*/
#include "core/sign.h"

#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

int unsb_sign(const char *secret, size_t secret_len,
              const char *timestamp, const char *method, const char *path,
              const char *body, size_t body_len,
              char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t path_len;
  const char *q;
  int rc = -1;

  if (!secret || !timestamp || !method || !path || !out || (!body && body_len))
    return -1;
  q = strchr(path, '?');                 /* the query string is never signed */
  path_len = q ? (size_t)(q - path) : strlen(path);

  EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
    OSSL_PARAM_construct_end(),
  };
  size_t mac_len = 0;
#define FEED(p, n) (EVP_MAC_update(ctx, (const unsigned char *)(p), (n)) == 1)
  if (ctx && EVP_MAC_init(ctx, (const unsigned char *)secret, secret_len, params) == 1 &&
      FEED(timestamp, strlen(timestamp)) && FEED(":", 1) &&
      FEED(method, strlen(method)) && FEED(":", 1) &&
      FEED(path, path_len) && FEED(":", 1) &&
      (body_len == 0 || FEED(body, body_len)) &&
      EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1 && mac_len == 32) {
    for (size_t i = 0; i < mac_len; i++) {
      out[2 * i] = hex[mac[i] >> 4];
      out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[UNSB_SIGNATURE_HEX_LEN] = '\0';
    rc = 0;
  }
#undef FEED
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(hmac);
  OPENSSL_cleanse(mac, sizeof mac);
  return rc;
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
