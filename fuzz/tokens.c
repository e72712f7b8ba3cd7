/*
** The Control Plane's token verifier on forged tokens: anything but a
** genuine, unexpired token of the right audience gives NULL, and a token
** minted from claims the input describes round-trips.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/cp/auth/tokens.h"
#include "server/mem.h"

static const unsigned char KEY[32] = "0123456789abcdef0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) { ux_mem_init(); init = 1; }
  char *tok = malloc(size + 1);
  if (!tok) return 0;
  memcpy(tok, data, size);
  tok[size] = '\0';
  json_t *c = ux_token_verify(KEY, sizeof KEY, tok, 1000);
  if (c && !json_is_object(c)) abort();
  json_decref(c);
  /* the input as a claim value: mint, verify, compare */
  json_t *claims = json_pack("{s:s,s:s,s:s#,s:I}", "aud", UX_TOKEN_AUD, "kind", "workspace",
                             "sub", tok, strlen(tok), "exp", (json_int_t)2000);
  if (claims) {
    char *t = ux_token_mint(KEY, sizeof KEY, claims);
    json_t *back = t ? ux_token_verify(KEY, sizeof KEY, t, 1000) : NULL;
    if (t && (!back || !json_equal(json_object_get(back, "sub"), json_object_get(claims, "sub")))) abort();
    json_decref(back);
    free(t);
    json_decref(claims);
  }
  free(tok);
  return 0;
}
