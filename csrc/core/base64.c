#include "core/base64.h"

#include <limits.h>
#include <stdlib.h>
#include <openssl/evp.h>

char *unsb_base64_encode(const unsigned char *in, size_t len, size_t *out_len) {
  char *out;
  size_t n = 4 * ((len + 2) / 3);
  int written;
  if (len > (size_t)INT_MAX / 4 * 3 - 3) return NULL;
  out = malloc(n + 1);
  if (!out) return NULL;
  written = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
  if (written < 0) { free(out); return NULL; }
  if (out_len) *out_len = (size_t)written;
  return out;
}

unsigned char *unsb_base64_decode(const char *in, size_t len, size_t *out_len) {
  unsigned char *out;
  size_t pad = 0;
  int n;
  if (len % 4 != 0 || len > (size_t)INT_MAX) return NULL;
  /* EVP_DecodeBlock keeps the padding bytes as zeros; count them to trim,
  ** and reject '=' anywhere but the last two places. */
  for (size_t i = 0; i < len; i++)
    if (in[i] == '=' && i < len - 2) return NULL;
  if (len >= 1 && in[len - 1] == '=') pad++;
  if (len >= 2 && in[len - 2] == '=') {
    if (pad == 0) return NULL;
    pad++;
  }
  out = malloc(len / 4 * 3 + 1);
  if (!out) return NULL;
  n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
  if (n < 0 || (size_t)n < pad) { free(out); return NULL; }
  if (out_len) *out_len = (size_t)n - pad;
  return out;
}
