/*
** HMAC-SHA256 request signatures (see sign.h). The message is fed to
** OpenSSL in pieces so that a large body is never copied.
*/
#include "core/sign.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

typedef struct piece { const char *p; size_t n; } piece;

/* The HMAC implementation, fetched once: a fetch looks the algorithm up
** in OpenSSL's provider tables under a lock, which cost more than the
** signature itself. Kept for the life of the process (read-only, shared
** by threads). */
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static EVP_MAC *hmac_impl;
static void fetch_hmac(void) { hmac_impl = EVP_MAC_fetch(NULL, "HMAC", NULL); }

static const char HEX[] = "0123456789abcdef";

/* A context keyed with key, or NULL. */
static EVP_MAC_CTX *keyed(const char *key, size_t key_len) {
  pthread_once(&hmac_once, fetch_hmac);
  EVP_MAC_CTX *ctx = hmac_impl ? EVP_MAC_CTX_new(hmac_impl) : NULL;
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
    OSSL_PARAM_construct_end(),
  };
  if (ctx && EVP_MAC_init(ctx, (const unsigned char *)key, key_len, params) == 1) return ctx;
  EVP_MAC_CTX_free(ctx);
  return NULL;
}

/* The pieces into ctx (keyed), the hex MAC into out; ctx is freed. */
static int finish(EVP_MAC_CTX *ctx, const piece *pieces, size_t count,
                  char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  int rc = -1, ok = ctx != NULL;
  for (size_t i = 0; ok && i < count; i++)
    ok = pieces[i].n == 0 || EVP_MAC_update(ctx, (const unsigned char *)pieces[i].p, pieces[i].n) == 1;
  if (ok && EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1 && mac_len == 32) {
    for (size_t i = 0; i < mac_len; i++) {
      out[2 * i] = HEX[mac[i] >> 4];
      out[2 * i + 1] = HEX[mac[i] & 15];
    }
    out[UNSB_SIGNATURE_HEX_LEN] = '\0';
    rc = 0;
  }
  EVP_MAC_CTX_free(ctx);
  OPENSSL_cleanse(mac, sizeof mac);
  return rc;
}

static int hmac_pieces(const char *key, size_t key_len, const piece *pieces, size_t count,
                       char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  return finish(keyed(key, key_len), pieces, count, out);
}

int unsb_hmac_hex(const char *key, size_t key_len, const char *msg, size_t msg_len,
                  char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  piece p = { msg, msg_len };
  if (!key || !out || (!msg && msg_len)) return -1;
  return hmac_pieces(key, key_len, &p, 1, out);
}

#define MESSAGE(timestamp, method, path, body, body_len)                                  \
  {                                                                                      \
    { timestamp, strlen(timestamp) }, { ":", 1 }, { method, strlen(method) }, { ":", 1 },    \
    { path, strlen(path) }, { ":", 1 }, { body, body_len },                                \
  }

int unsb_sign(const char *secret, size_t secret_len,
              const char *timestamp, const char *method, const char *path,
              const char *body, size_t body_len,
              char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  if (!secret || !timestamp || !method || !path || !out || (!body && body_len))
    return -1;
  piece pieces[] = MESSAGE(timestamp, method, path, body, body_len);
  return hmac_pieces(secret, secret_len, pieces, sizeof pieces / sizeof pieces[0], out);
}

struct unsb_signer { EVP_MAC_CTX *ctx; };

unsb_signer *unsb_signer_new(const char *secret, size_t secret_len) {
  unsb_signer *s = secret ? calloc(1, sizeof *s) : NULL;
  if (s && !(s->ctx = keyed(secret, secret_len))) {
    free(s);
    return NULL;
  }
  return s;
}

int unsb_signer_sign(const unsb_signer *s, const char *timestamp, const char *method,
                     const char *path, const char *body, size_t body_len,
                     char out[UNSB_SIGNATURE_HEX_LEN + 1]) {
  if (!s || !timestamp || !method || !path || !out || (!body && body_len)) return -1;
  piece pieces[] = MESSAGE(timestamp, method, path, body, body_len);
  return finish(EVP_MAC_CTX_dup(s->ctx), pieces, sizeof pieces / sizeof pieces[0], out);
}

/* EVP_MAC_CTX_free wipes the key schedule (OpenSSL cleanses what it frees). */
void unsb_signer_free(unsb_signer *s) {
  if (!s) return;
  EVP_MAC_CTX_free(s->ctx);
  free(s);
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
