/*
** SHA-256, hex and random bytes (see digest.h).
*/
#include "core/digest.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

void unsb_hex(const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

int unsb_sha256_hex(const void *data, size_t len, char out[UNSB_SHA256_HEX_LEN + 1]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (!data && len) return -1;
  if (EVP_Digest(data ? data : "", len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
    return -1;
  unsb_hex(md, 32, out);
  return 0;
}

struct unsb_sha256 {
  EVP_MD_CTX *ctx;                           /* NULL once finished */
  char hex[UNSB_SHA256_HEX_LEN + 1];         /* the digest, once finished */
};

unsb_sha256 *unsb_sha256_new(void) {
  unsb_sha256 *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    unsb_sha256_free(h);
    return NULL;
  }
  return h;
}

int unsb_sha256_update(unsb_sha256 *h, const void *data, size_t len) {
  if (!h->ctx) return -1;
  return len == 0 || EVP_DigestUpdate(h->ctx, data, len) == 1 ? 0 : -1;
}

int unsb_sha256_final(unsb_sha256 *h, char out[UNSB_SHA256_HEX_LEN + 1]) {
  if (h->ctx) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok = EVP_DigestFinal_ex(h->ctx, md, &md_len) == 1 && md_len == 32;
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    if (!ok) return -1;
    unsb_hex(md, 32, h->hex);
  }
  if (!h->hex[0]) return -1;
  memcpy(out, h->hex, sizeof h->hex);
  return 0;
}

void unsb_sha256_free(unsb_sha256 *h) {
  if (!h) return;
  if (h->ctx) EVP_MD_CTX_free(h->ctx);
  free(h);
}

int unsb_random_bytes(unsigned char *out, size_t n) {
  if (n > (size_t)1 << 20) return -1;   /* far beyond any id; RAND_bytes takes an int */
  return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}
