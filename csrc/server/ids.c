/*
** Identifiers. Randomness comes from OpenSSL's RAND_bytes, never rand():
** job ids are capabilities of sorts (whoever knows one may poll it), and
** key secrets are generated through the same code path.
*/
#include "server/ids.h"

#include "core/ids.h"

#include <string.h>
#include <openssl/rand.h>

int ux_random_id(char *out, size_t outlen, const char *prefix, size_t nbytes) {
  static const char hex[] = "0123456789abcdef";
  unsigned char raw[64];
  size_t plen = strlen(prefix);
  if (nbytes > sizeof raw || plen + 2 * nbytes + 1 > outlen) return -1;
  if (RAND_bytes(raw, (int)nbytes) != 1) return -1;
  memcpy(out, prefix, plen);
  for (size_t i = 0; i < nbytes; i++) {
    out[plen + 2 * i] = hex[raw[i] >> 4];
    out[plen + 2 * i + 1] = hex[raw[i] & 15];
  }
  out[plen + 2 * nbytes] = '\0';
  return 0;
}

int ux_valid_id(const char *s) {
  /* the client's rule exactly: one function for both sides */
  return s && unsb_valid_id(s, strlen(s));
}
