/*
** Base64. Decoding is strict on purpose: a client that sends garbage as
** file content gets a 400 naming the file instead of a silently
** truncated file in its sandbox.
*/
#include "server/b64.h"

#include <stdlib.h>
#include <string.h>

static const char ALPHA[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ux_b64_encode(const unsigned char *d, size_t len) {
  char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;
  if (!out) return NULL;
  size_t i = 0;
  for (; i + 2 < len; i += 3) {
    *o++ = ALPHA[d[i] >> 2];
    *o++ = ALPHA[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
    *o++ = ALPHA[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
    *o++ = ALPHA[d[i + 2] & 63];
  }
  if (i < len) {
    *o++ = ALPHA[d[i] >> 2];
    if (i + 1 < len) {
      *o++ = ALPHA[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
      *o++ = ALPHA[(d[i + 1] & 15) << 2];
    } else {
      *o++ = ALPHA[(d[i] & 3) << 4];
      *o++ = '=';
    }
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

static int val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

unsigned char *ux_b64_decode(const char *s, size_t len, size_t *outlen) {
  while (len > 0 && s[len - 1] == '=') len--;      /* padding is optional */
  if (len % 4 == 1) return NULL;
  unsigned char *out = malloc(len / 4 * 3 + 3), *o = out;
  if (!out) return NULL;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = val((unsigned char)s[i]);
    if (v < 0) { free(out); return NULL; }
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *o++ = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  *outlen = (size_t)(o - out);
  return out;
}
