/* Base64 of input files and artifacts (client and unsandboxd share it). */
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "tests/tap.h"

/* Every length 0..300 and one of a megabyte, padded and unpadded: the
** bytes come back (the whole quads are decoded in place, the tail apart). */
static void test_round_trips(void) {
  size_t big = 1000003;
  unsigned char *b = malloc(big);
  int all = 1;
  for (size_t i = 0; i < big; i++) b[i] = (unsigned char)((i * 131) ^ (i >> 7));
  for (size_t len = 0; len <= 301 && all; len++) {
    size_t n = len == 301 ? big : len, elen, dlen = 0, ulen = 0;
    char *e = unsb_base64_encode(b, n, &elen);
    unsigned char *d = unsb_base64_decode(e, elen, &dlen);
    size_t un = elen;
    while (un > 0 && e[un - 1] == '=') un--;
    unsigned char *u = unsb_base64_decode(e, un, &ulen);
    all = d && u && dlen == n && ulen == n && !memcmp(d, b, n) && !memcmp(u, b, n);
    free(e); free(d); free(u);
  }
  ok(all, "b64 round trips of 0..300 bytes and of a megabyte, padded and not");
  free(b);
}

int main(void) {
  test_round_trips();
  const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
  const char *coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
  for (int i = 0; i < 7; i++) {
    char *e = unsb_base64_encode((const unsigned char *)plain[i], strlen(plain[i]), NULL);
    is_str(e, coded[i], "b64 encode '%s'", plain[i]);
    size_t n = 0;
    unsigned char *d = unsb_base64_decode(coded[i], strlen(coded[i]), &n);
    ok(d && n == strlen(plain[i]) && memcmp(d, plain[i], n) == 0, "b64 decode '%s'", coded[i]);
    free(e);
    free(d);
  }
  size_t n;
  unsigned char *d = unsb_base64_decode("Zm9vYg", 6, &n);
  ok(d && n == 4, "b64 padding is optional");
  free(d);
  ok(unsb_base64_decode("Zm9v!", 5, &n) == NULL, "b64 rejects stray characters");
  ok(unsb_base64_decode("Z", 1, &n) == NULL, "b64 rejects an impossible length");
  ok(unsb_base64_decode("Zm 9v", 5, &n) == NULL, "b64 rejects whitespace");
  d = unsb_base64_decode("Zm9vYmE", 7, &n);
  ok(d && n == 5 && memcmp(d, "fooba", 5) == 0, "b64 unpadded 3-byte tail");
  free(d);
  ok(unsb_base64_decode("Zm=9v", 5, &n) == NULL, "b64 rejects '=' inside");
  ok(unsb_base64_decode("Zm9v=", 5, &n) == NULL, "b64 rejects padding where none fits");
  ok(unsb_base64_decode("Zm9vYg===", 9, &n) == NULL, "b64 rejects three '='");
  ok(unsb_base64_decode("Zm9v\n", 5, &n) == NULL, "b64 rejects a newline");

  /* URL-safe, unpadded: bytes whose standard form has '+', '/' and '=' */
  const unsigned char odd[] = { 0xfb, 0xff, 0xbf, 0x3e };
  char *u = unsb_base64url_encode(odd, sizeof odd, &n);
  is_str(u, "-_-_Pg", "b64url encode uses '-' and '_' and drops the padding");
  d = u ? unsb_base64url_decode(u, strlen(u), &n) : NULL;
  ok(d && n == sizeof odd && memcmp(d, odd, n) == 0, "b64url round trip");
  free(u);
  free(d);
  ok(unsb_base64url_decode("-_-_Pg==", 8, &n) == NULL, "b64url rejects padding");
  ok(unsb_base64url_decode("+/+/Pg", 6, &n) == NULL, "b64url rejects the standard alphabet");
  ok(unsb_base64url_decode("-_-_P", 5, &n) == NULL, "b64url rejects an impossible length");
  return tap_done();
}
