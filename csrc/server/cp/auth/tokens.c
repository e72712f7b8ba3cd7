/*
** Tokens (see tokens.h). The MAC is compared with CRYPTO_memcmp over the
** decoded bytes; only then is the claims part decoded and parsed.
*/
#include "server/cp/auth/tokens.h"

#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/base64.h"

#define MAX_TOKEN 8192

static int mac(const unsigned char *key, size_t keylen, const char *data, size_t len,
               unsigned char out[32]) {
  unsigned int n = 0;
  return HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)data, len, out, &n) && n == 32
         ? 0 : -1;
}

char *ux_token_mint(const unsigned char *key, size_t keylen, const json_t *claims) {
  char *json = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  if (!json) return NULL;
  size_t plen, slen;
  char *payload = unsb_base64url_encode((const unsigned char *)json, strlen(json), &plen);
  free(json);
  unsigned char sig[32];
  char *sig64 = NULL, *token = NULL;
  if (payload && mac(key, keylen, payload, plen, sig) == 0 &&
      (sig64 = unsb_base64url_encode(sig, sizeof sig, &slen)) &&
      (token = malloc(plen + slen + 2))) {
    memcpy(token, payload, plen);
    token[plen] = '.';
    memcpy(token + plen + 1, sig64, slen + 1);
  }
  OPENSSL_cleanse(sig, sizeof sig);
  free(payload);
  free(sig64);
  return token;
}

json_t *ux_token_verify(const unsigned char *key, size_t keylen, const char *token, long now) {
  size_t len = token ? strnlen(token, MAX_TOKEN + 1) : 0;
  const char *dot = len && len <= MAX_TOKEN ? memchr(token, '.', len) : NULL;
  if (!dot || dot == token) return NULL;
  size_t plen = (size_t)(dot - token), slen;
  unsigned char want[32], *got = unsb_base64url_decode(dot + 1, len - plen - 1, &slen);
  int genuine = got && slen == sizeof want && mac(key, keylen, token, plen, want) == 0 &&
                CRYPTO_memcmp(got, want, sizeof want) == 0;
  free(got);
  OPENSSL_cleanse(want, sizeof want);
  if (!genuine) return NULL;
  size_t jlen;
  unsigned char *json = unsb_base64url_decode(token, plen, &jlen);
  json_t *claims = json ? json_loadb((const char *)json, jlen, JSON_REJECT_DUPLICATES, NULL) : NULL;
  free(json);
  const char *aud = json_string_value(json_object_get(claims, "aud"));
  json_t *exp = json_object_get(claims, "exp");
  if (!json_is_object(claims) || !aud || strcmp(aud, UX_TOKEN_AUD) != 0 ||
      !json_is_integer(exp) || json_integer_value(exp) <= now) {
    json_decref(claims);
    return NULL;
  }
  return claims;
}
