/*
** UTF-8 decoder (see utf8.h). Table-free: the lead byte gives the length
** and the smallest code point that length may encode, which rejects
** overlong forms in one comparison.
*/
#include "core/utf8.h"

size_t unsb_utf8_next(const unsigned char *s, size_t len, uint32_t *cp) {
  size_t n;
  uint32_t c, min;
  if (len == 0) return 0;
  c = s[0];
  if (c < 0x80) { *cp = c; return 1; }
  if (c >= 0xc2 && c <= 0xdf) { n = 2; c &= 0x1f; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; c &= 0x0f; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; c &= 0x07; min = 0x10000; }
  else return 0;   /* continuation byte, C0/C1 overlong leads, F5..FF */
  if (len < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  *cp = c;
  return n;
}

int unsb_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  uint32_t cp;
  while (len > 0) {
    size_t n = unsb_utf8_next(p, len, &cp);
    if (n == 0) return 0;
    p += n;
    len -= n;
  }
  return 1;
}
