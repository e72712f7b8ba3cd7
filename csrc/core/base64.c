#include "core/base64.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

char *unsb_base64_encode(const unsigned char *in, size_t len, size_t *out_len) {
  char *out;
  int written;
  if (len > (size_t)INT_MAX / 4 * 3 - 3) return NULL;
  out = malloc(4 * ((len + 2) / 3) + 1);
  if (!out) return NULL;
  written = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
  if (written < 0) { free(out); return NULL; }
  if (out_len) *out_len = (size_t)written;
  return out;
}

size_t unsb_base64_encode_into(const unsigned char *in, size_t len, char *out) {
  size_t done = 0;
  /* EVP_EncodeBlock takes an int: large inputs go in pieces of 3k bytes */
  while (len > 0) {
    size_t n = len > (size_t)INT_MAX / 4 * 3 - 3 ? (size_t)INT_MAX / 4 * 3 - 3 : len;
    n -= n < len ? n % 3 : 0;
    done += (size_t)EVP_EncodeBlock((unsigned char *)out + done, in, (int)n);
    in += n;
    len -= n;
  }
  out[done] = '\0';
  return done;
}

static int b64_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '+' || c == '/';
}

unsigned char *unsb_base64_decode(const char *in, size_t len, size_t *out_len) {
  size_t data = len, full, rest;
  unsigned char *out;
  int n = 0;
  if (len > (size_t)INT_MAX - 4) return NULL;
  /* up to two '=' at the very end; every other byte from the alphabet
  ** (EVP_DecodeBlock alone would skip whitespace and accept '=' inside) */
  while (data > 0 && len - data < 2 && in[data - 1] == '=') data--;
  for (size_t i = 0; i < data; i++)
    if (!b64_char((unsigned char)in[i])) return NULL;
  if (data % 4 == 1 || (len != data && len % 4 != 0)) return NULL;
  /* the whole quads straight from the input; the last partial one (its
  ** padding optional on input) through a padded quad of its own */
  full = data - data % 4;
  rest = data % 4;
  if (!(out = malloc(full / 4 * 3 + 4))) return NULL;
  if (full > 0) n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)full);
  if (n >= 0 && rest > 0) {
    unsigned char quad[4] = { '=', '=', '=', '=' }, three[4];
    memcpy(quad, in + full, rest);
    int k = EVP_DecodeBlock(three, quad, 4);
    /* EVP_DecodeBlock counts the padding as zero bytes; keep the others */
    if (k == 3) memcpy(out + n, three, rest - 1);
    n = k == 3 ? n + (int)rest - 1 : -1;
  }
  if (n < 0) { free(out); return NULL; }
  if (out_len) *out_len = (size_t)n;
  return out;
}

char *unsb_base64url_encode(const unsigned char *in, size_t len, size_t *out_len) {
  size_t n;
  char *out = unsb_base64_encode(in, len, &n);
  if (!out) return NULL;
  while (n > 0 && out[n - 1] == '=') out[--n] = '\0';
  for (size_t i = 0; i < n; i++)
    out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
  if (out_len) *out_len = n;
  return out;
}

unsigned char *unsb_base64url_decode(const char *in, size_t len, size_t *out_len) {
  char *std = malloc(len + 1);
  if (!std) return NULL;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '+' || c == '/' || c == '=') { free(std); return NULL; }
    std[i] = c == '-' ? '+' : c == '_' ? '/' : c;
  }
  unsigned char *out = unsb_base64_decode(std, len, out_len);
  free(std);
  return out;
}
