/* Base64 of input files and artifacts (client and unsandboxd share it). */
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "tests/tap.h"

int main(void) {
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
