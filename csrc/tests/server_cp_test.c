/*
** Unit tests of the Control Plane's pure parts: scoped tokens and
** workspace ids, against the vectors in spec/fixtures/ids.json (computed
** independently from the protocol rules), plus forged and expired tokens.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "server/cp/auth/tokens.h"
#include "server/cp/workspaces/ids.h"
#include "tests/tap.h"

static void vectors(void) {
  json_error_t e;
  json_t *doc = json_load_file("spec/fixtures/ids.json", 0, &e), *c;
  ok(doc != NULL, "ids.json loads (%s)", doc ? "ok" : e.text);
  size_t i;
  int ws = 0, tok = 0;
  json_array_foreach(json_object_get(doc, "cases"), i, c) {
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *want = json_string_value(json_object_get(c, "expected"));
    if (!strcmp(kind, "workspace_id")) {
      const char *key = json_string_value(json_object_get(c, "key"));
      const char *material = json_string_value(json_object_get(c, "material"));
      char got[UX_WS_ID_LEN + 1] = "";
      ux_workspace_id((const unsigned char *)key, strlen(key), material, got);
      is_str(got, want, "workspace id of %s", material);
      ws++;
    } else if (!strcmp(kind, "scoped_token")) {
      const char *key = json_string_value(json_object_get(c, "signing_key"));
      char *got = ux_token_mint((const unsigned char *)key, strlen(key), json_object_get(c, "claims"));
      is_str(got, want, "scoped token of the vector");
      json_t *claims = ux_token_verify((const unsigned char *)key, strlen(key), want, 1700000000);
      ok(claims && json_equal(claims, json_object_get(c, "claims")), "the vector verifies to its claims");
      ok(!ux_token_verify((const unsigned char *)key, strlen(key), want, 1700000900),
         "a token is expired at its exp");
      ok(!ux_token_verify((const unsigned char *)"other", 5, want, 1700000000),
         "another key does not verify it");
      /* a changed claim with the old signature */
      char *forged = strdup(want);
      forged[5] = forged[5] == 'A' ? 'B' : 'A';
      ok(!ux_token_verify((const unsigned char *)key, strlen(key), forged, 1700000000),
         "a changed payload does not verify");
      free(forged);
      json_decref(claims);
      free(got);
      tok++;
    }
  }
  ok(ws == 4 && tok == 1, "all workspace id and token vectors ran");
  json_decref(doc);
}

static void materials(void) {
  char *m = ux_workspace_material(NULL, NULL, NULL, "abc");
  is_str(m, "workspace:abc", "tenant-less material");
  free(m);
  m = ux_workspace_material("tenant-a", "subject", "aaaa", "session-a");
  is_str(m, "ws:v2:tenant-a:subject:aaaa:session-a", "tenant material");
  free(m);
  m = ux_workspace_material("t", "service", "a:b\\c", "s:1");
  is_str(m, "ws:v2:t:service:a\\:b\\\\c:s\\:1", "':' and '\\' are escaped in every field");
  free(m);
  char *m1 = ux_workspace_material("t", "service", "a:b", "c"), *m2 = ux_workspace_material("t", "service", "a", "b:c");
  ok(m1 && m2 && strcmp(m1, m2) != 0, "escaping keeps (a:b, c) and (a, b:c) apart");
  free(m1);
  free(m2);
}

static void bad_tokens(void) {
  const unsigned char *k = (const unsigned char *)"k";
  const char *bad[] = { "", ".", "abc", "abc.", ".abc", "a.b.c", "!!!.###", NULL };
  for (int i = 0; bad[i]; i++)
    ok(!ux_token_verify(k, 1, bad[i], 0), "malformed token '%s' is refused", bad[i]);
  ok(!ux_token_verify(k, 1, NULL, 0), "no token is refused");
  json_t *c = json_pack("{s:s,s:s,s:s,s:I}", "aud", "elsewhere", "kind", "sandbox", "sub", "x", "exp",
                        (json_int_t)2000000000);
  char *t = ux_token_mint(k, 1, c);
  ok(t && !ux_token_verify(k, 1, t, 0), "a token for another audience is refused");
  free(t);
  json_object_set_new(c, "aud", json_string(UX_TOKEN_AUD));
  json_object_set_new(c, "exp", json_string("2000000000"));
  t = ux_token_mint(k, 1, c);
  ok(t && !ux_token_verify(k, 1, t, 0), "a token whose exp is not an integer is refused");
  free(t);
  json_decref(c);
  char huge[9000];
  memset(huge, 'a', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  huge[100] = '.';
  ok(!ux_token_verify(k, 1, huge, 0), "an oversized token is refused");
}

int main(void) {
  vectors();
  materials();
  bad_tokens();
  return tap_done();
}
