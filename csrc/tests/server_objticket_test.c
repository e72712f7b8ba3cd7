/*
** Unit tests of object tickets (cp/objects/tickets.h): a minted ticket verifies
** to its claims for its operation only, until its expiry, under its key
** only; other token kinds, tampered claims and claims of the wrong type
** or size are refused.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "server/cp/objects/tickets.h"
#include "server/cp/auth/tokens.h"
#include "tests/tap.h"

static const unsigned char KEY[] = "0123456789abcdef0123456789abcdef";
#define KLEN 32
#define NOW 1700000000L

static ux_objticket sample(void) {
  ux_objticket t;
  memset(&t, 0, sizeof t);
  strcpy(t.op, "upload");
  strcpy(t.bucket, "agent-data");
  strcpy(t.key, "users/t/s/agents/a/runs/r/outputs/x.bin");
  strcpy(t.owner, "t/s");
  t.max_bytes = 1024;
  strcpy(t.content_type, "application/octet-stream");
  return t;
}

static void round_trip(void) {
  ux_objticket t = sample(), got;
  char *tok = ux_objticket_mint(KEY, KLEN, &t, NOW, 120);
  ok(tok != NULL, "mints");
  ok(strlen(t.jti) == 32 && t.exp == NOW + 120, "jti of 32 hex, exp now + expires_in");
  ok(ux_objticket_verify(KEY, KLEN, tok, NOW, "upload", &got) == 0, "verifies for its operation");
  ok(!strcmp(got.key, t.key) && !strcmp(got.bucket, t.bucket) && !strcmp(got.owner, "t/s") &&
     got.max_bytes == 1024 && !strcmp(got.jti, t.jti) && got.exp == t.exp && got.sha256[0] == '\0' &&
     !strcmp(got.content_type, t.content_type), "claims read back");
  ok(ux_objticket_verify(KEY, KLEN, tok, NOW, "download", &got) < 0, "not for another operation");
  ok(ux_objticket_verify(KEY, KLEN, tok, NOW + 120, "upload", &got) < 0, "expired at exp");
  ok(ux_objticket_verify((const unsigned char *)"another key", 11, tok, NOW, "upload", &got) < 0,
     "not under another key");
  ux_objticket t2 = sample();
  char *tok2 = ux_objticket_mint(KEY, KLEN, &t2, NOW, 120);
  ok(tok2 && strcmp(t.jti, t2.jti) != 0, "every ticket gets its own jti");
  free(tok2);
  /* claims of the payload swapped for another ticket's, same signature */
  t2 = sample();
  strcpy(t2.key, "users/t/other/agents/a/runs/r/outputs/x.bin");
  tok2 = ux_objticket_mint(KEY, KLEN, &t2, NOW, 120);
  char *dot1 = strchr(tok, '.'), *dot2 = strchr(tok2, '.');
  char *spliced = malloc(strlen(tok) + strlen(tok2));
  sprintf(spliced, "%.*s%s", (int)(dot2 - tok2), tok2, dot1);
  ok(ux_objticket_verify(KEY, KLEN, spliced, NOW, "upload", &got) < 0, "another key's claims do not verify");
  free(spliced);
  free(tok2);
  free(tok);
  t = sample();
  t.owner[0] = '\0';
  strcpy(t.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  strcpy(t.op, "download");
  tok = ux_objticket_mint(KEY, KLEN, &t, NOW, 1);
  ok(ux_objticket_verify(KEY, KLEN, tok, NOW, "download", &got) == 0 && got.owner[0] == '\0' &&
     !strcmp(got.sha256, t.sha256), "a ticket without owner, with sha256");
  free(tok);
}

/* A genuine token (right key, aud, exp) with arbitrary claims. */
static int verify_claims(json_t *claims) {
  json_object_set_new(claims, "aud", json_string(UX_TOKEN_AUD));
  if (!json_object_get(claims, "exp")) json_object_set_new(claims, "exp", json_integer(NOW + 60));
  char *tok = ux_token_mint(KEY, KLEN, claims);
  ux_objticket got;
  int rc = ux_objticket_verify(KEY, KLEN, tok, NOW, "upload", &got);
  free(tok);
  json_decref(claims);
  return rc;
}

static json_t *good_claims(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s}",
                   "kind", "object-ticket", "sub", "k", "op", "upload", "bucket", "agent-data",
                   "key", "k", "max_bytes", 10, "content_type", "text/plain", "sha256", "",
                   "jti", "0123456789abcdef0123456789abcdef");
}

static void hostile_claims(void) {
  ok(verify_claims(good_claims()) == 0, "hand-made claims verify (the baseline)");
  json_t *c = good_claims();
  json_object_set_new(c, "kind", json_string("workspace"));
  ok(verify_claims(c) < 0, "a workspace token is not a ticket");
  const char *required[] = { "kind", "op", "bucket", "key", "sub", "content_type", "sha256", "jti",
                             "max_bytes", NULL };
  for (int i = 0; required[i]; i++) {
    c = good_claims();
    json_object_del(c, required[i]);
    ok(verify_claims(c) < 0, "without %s: refused", required[i]);
  }
  c = good_claims();
  json_object_set_new(c, "sub", json_string("other"));
  ok(verify_claims(c) < 0, "sub differing from key: refused");
  c = good_claims();
  json_object_set_new(c, "max_bytes", json_string("10"));
  ok(verify_claims(c) < 0, "max_bytes as a string: refused");
  c = good_claims();
  json_object_set_new(c, "max_bytes", json_integer(0));
  ok(verify_claims(c) < 0, "max_bytes 0: refused");
  c = good_claims();
  json_object_set_new(c, "max_bytes", json_integer((64 << 20) + 1));
  ok(verify_claims(c) < 0, "max_bytes over 64 MiB: refused");
  c = good_claims();
  json_object_set_new(c, "jti", json_string("short"));
  ok(verify_claims(c) < 0, "a short jti: refused");
  c = good_claims();
  json_object_set_new(c, "key", json_stringn("k\0x", 3));
  json_object_set_new(c, "sub", json_stringn("k\0x", 3));
  ok(verify_claims(c) < 0, "a key with NUL: refused");
  c = good_claims();
  char big[UX_OBJ_KEY_MAX + 10];
  memset(big, 'k', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  json_object_set_new(c, "key", json_string(big));
  json_object_set_new(c, "sub", json_string(big));
  ok(verify_claims(c) < 0, "an oversized key: refused");
  c = good_claims();
  json_object_set_new(c, "own", json_integer(5));
  ok(verify_claims(c) < 0, "a non-string owner: refused");
  ux_objticket got;
  ok(ux_objticket_verify(KEY, KLEN, NULL, NOW, "upload", &got) < 0, "no token: refused");
  ok(ux_objticket_verify(KEY, KLEN, "garbage", NOW, "upload", &got) < 0, "garbage: refused");
}

int main(void) {
  round_trip();
  hostile_claims();
  return tap_done();
}
