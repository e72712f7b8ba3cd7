/*
** Object tickets (cp/objects/tickets.h). The claims are exactly the spec's list,
** `sub` being the object key; verification re-reads every claim with its
** type and bound, so a ticket is trusted only for what it says, and a
** token of another kind (a workspace token) is never a ticket.
*/
#include "server/cp/objects/tickets.h"

#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "server/cp/auth/tokens.h"
#include "server/ids.h"

char *ux_objticket_mint(const unsigned char *key, size_t keylen, ux_objticket *t,
                        long now, long expires_in) {
  if (ux_random_id(t->jti, sizeof t->jti, "", 16) < 0) return NULL;
  t->exp = (long long)now + expires_in;
  json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:s, s:s, s:s}",
                        "aud", UX_TOKEN_AUD, "kind", UX_OBJTICKET_KIND, "sub", t->key,
                        "exp", (json_int_t)t->exp, "op", t->op, "bucket", t->bucket,
                        "key", t->key, "max_bytes", (json_int_t)t->max_bytes,
                        "content_type", t->content_type, "sha256", t->sha256, "jti", t->jti);
  if (c && t->owner[0] && json_object_set_new(c, "own", json_string(t->owner)) < 0) {
    json_decref(c);
    c = NULL;
  }
  char *token = c ? ux_token_mint(key, keylen, c) : NULL;
  json_decref(c);
  return token;
}

/* Copies string claim name into dst (cap bytes with the NUL); 0 or -1. */
static int claim_str(json_t *c, const char *name, char *dst, size_t cap, int optional) {
  json_t *v = json_object_get(c, name);
  if (!v && optional) { dst[0] = '\0'; return 0; }
  const char *s = json_string_value(v);
  size_t n = s ? json_string_length(v) : 0;
  if (!s || n >= cap || strlen(s) != n) return -1;
  memcpy(dst, s, n + 1);
  return 0;
}

int ux_objticket_verify(const unsigned char *key, size_t keylen, const char *token,
                        long now, const char *want_op, ux_objticket *t) {
  json_t *c = ux_token_verify(key, keylen, token, now);
  char kind[32], sub[UX_OBJ_KEY_MAX + 1];
  json_t *mb = json_object_get(c, "max_bytes");
  int ok = c && claim_str(c, "kind", kind, sizeof kind, 0) == 0 &&
           !strcmp(kind, UX_OBJTICKET_KIND) &&
           claim_str(c, "op", t->op, sizeof t->op, 0) == 0 && !strcmp(t->op, want_op) &&
           claim_str(c, "bucket", t->bucket, sizeof t->bucket, 0) == 0 &&
           claim_str(c, "key", t->key, sizeof t->key, 0) == 0 &&
           claim_str(c, "sub", sub, sizeof sub, 0) == 0 && !strcmp(sub, t->key) &&
           claim_str(c, "own", t->owner, sizeof t->owner, 1) == 0 &&
           claim_str(c, "content_type", t->content_type, sizeof t->content_type, 0) == 0 &&
           claim_str(c, "sha256", t->sha256, sizeof t->sha256, 0) == 0 &&
           claim_str(c, "jti", t->jti, sizeof t->jti, 0) == 0 && strlen(t->jti) == 32 &&
           json_is_integer(mb) && json_integer_value(mb) >= 1 &&
           (unsigned long long)json_integer_value(mb) <= (64ull << 20);
  if (ok) {
    t->max_bytes = (unsigned long long)json_integer_value(mb);
    t->exp = json_integer_value(json_object_get(c, "exp"));
  }
  json_decref(c);
  return ok ? 0 : -1;
}
