/*
** SHA-256, hex and random bytes (see digest.h).
*/
#include "core/digest.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

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

int unsb_random_bytes(unsigned char *out, size_t n) {
  if (n > (size_t)1 << 20) return -1;   /* far beyond any id; RAND_bytes takes an int */
  return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}
