/*
** Key generation. Characters are drawn from [a-z0-9] by rejection
** sampling over RAND_bytes, so every character is uniform (a plain
** modulo would favour the first few letters). The secret has 20 such
** characters, about 103 bits.
*/
#include "server/store/keys.h"

#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

static int random_group(char *out, int groups, int per_group) {
  static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char b[64];
  int need = groups * per_group, got = 0;
  while (got < need) {
    if (RAND_bytes(b, sizeof b) != 1) return -1;
    for (size_t i = 0; i < sizeof b && got < need; i++) {
      if (b[i] >= 252) continue;                     /* 252 = 7 * 36 */
      int g = got / per_group, k = got % per_group;
      out[g * (per_group + 1) + k] = ALNUM[b[i] % 36];
      if (k == per_group - 1 && g < groups - 1) out[g * (per_group + 1) + per_group] = '-';
      got++;
    }
  }
  out[groups * (per_group + 1) - 1] = '\0';
  OPENSSL_cleanse(b, sizeof b);
  return 0;
}

int ux_keys_add(ux_store *st, char pk[UX_PK_LEN + 1], char sk[UX_SK_LEN + 1], int dev) {
  memcpy(pk, "unsb-pk-", 8);
  memcpy(sk, "unsb-sk-", 8);
  if (random_group(pk + 8, 4, 4) < 0 || random_group(sk + 8, 4, 5) < 0) return -1;
  return ux_store_key_add(st, pk, sk, dev);
}
