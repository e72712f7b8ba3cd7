/*
** unsb_sign against every case of spec/fixtures/signing.json (values copied
** here so the test needs no JSON parser), the 70 000-byte generator case
** built in memory, the bare HMAC anchor, and the query rule helper.
*/
#include <stdlib.h>
#include <string.h>

#include "core/sign.h"
#include "tests/tap.h"

typedef struct {
  const char *name, *secret, *timestamp, *method, *path, *body, *signature;
} sign_case;

static const sign_case CASES[] = {
  {"v1-execute", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/execute",
   "{\"language\":\"python\",\"code\":\"print(42)\"}",
   "3b6655061787ab31328e24e34cdc8a586d9eeea16131702b6603b755d1f78f5a"},
  {"v2-get-job", "unsb-sk-test0-test1-test2-test3", "1700000000", "GET", "/jobs/job_abc123",
   "",
   "2666b2dd806900271147f92a7741c602493bee00bd645b6fce78d0a724c82bc2"},
  {"v3-delete-job", "unsb-sk-test0-test1-test2-test3", "1700000000", "DELETE", "/jobs/job_abc123",
   "",
   "b70a4572692bd24dcb2a76e70b9ca5a1c240edb0a49408f4a38b241b06cbd9b0"},
  {"v4-json-escape", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/execute",
   "{\"language\":\"python\",\"code\":\"print(1)\\nprint(2)\"}",
   "5088c34d5d3e091ae5a0439d7ad61697102ffb803dcc1772a1417e1bfa353766"},
  {"v5-empty-object-body", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/sessions/unsb-session-1/freeze",
   "{}",
   "37d5a0bd713b1c43ba52aa52efd7da799c74da670a4371ac2560f16b40d9c8c8"},
  {"v6-empty-body", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/sessions/unsb-session-1/freeze",
   "",
   "884b4686a89d53770c1d4453c50abc84cda3b279b566a1d786026c922f7512e7"},
  {"v7a-path-without-query", "unsb-sk-test0-test1-test2-test3", "1700000000", "GET", "/services/svc1/logs",
   "",
   "b3c5ae4dabdab1871d33b64718e61374ba495f38eb5d7e2983af446a6cd60643"},
  {"v7b-path-with-query", "unsb-sk-test0-test1-test2-test3", "1700000000", "GET", "/services/svc1/logs\077all=true",
   "",
   "73ab63585e2b9eccb8d38e0c122bf00d274dae255f47212a5acaa1c6d0333e3d"},
  {"v8-keys-validate", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/keys/validate",
   "",
   "f419dbf212d31a812b2cbd6341ca9143596e1357e1b13480ffc89619de8cb6ed"},
  {"v4-regression-key-sk", "sk", "1700000000", "POST", "/execute",
   "{\"language\":\"python\",\"code\":\"print(1)\\nprint(2)\"}",
   "aa2b8a52d534751115c71926f1e5ad9ea30ccf2e424d55ae3edb199aa49d846d"},
  {"x1-non-ascii-utf8-body", "unsb-sk-test0-test1-test2-test3", "1700000000", "POST", "/execute",
   "{\"language\":\"python\",\"code\":\"print(\\\"h\303\251llo \342\234\223\\\")\"}",
   "eda78f110666cf1dc5838a02207932040f7add13ce87f1e3fe3c4389c220f98f"},
  {"x3-patch-with-body", "unsb-sk-test0-test1-test2-test3", "1700000000", "PATCH", "/services/unsb-service-abc123",
   "{\"vcpu\":4}",
   "a5c92530e14c6598306d9a490108d912e6fa2a0ac7de851615b54fbe0279d04b"},
  {"x4-punctuation-secret", "unsb-sk-!\"#$%&'()*+-./:;<=>\077@[\\]^_`{|}~", "1700000000", "GET", "/languages",
   "",
   "f21081197fcf447ee43a36ef638cc80ede5e55c7328f643e34145b2790d63721"},
};

static void check_case(const sign_case *c) {
  char sig[UNSB_SIGNATURE_HEX_LEN + 1];
  int rc = unsb_sign(c->secret, strlen(c->secret), c->timestamp, c->method, c->path,
                     c->body, strlen(c->body), sig);
  ok(rc == 0, "%s: signs", c->name);
  is_str(sig, c->signature, "%s: signature", c->name);
  /* a signer keyed once signs the same, twice in a row (each signature
  ** starts from a copy of the keyed state, never from the last one) */
  unsb_signer *s = unsb_signer_new(c->secret, strlen(c->secret));
  for (int i = 0; i < 2; i++) {
    memset(sig, 0, sizeof sig);
    ok(s && unsb_signer_sign(s, c->timestamp, c->method, c->path, c->body, strlen(c->body), sig) == 0,
       "%s: the signer signs (%d)", c->name, i + 1);
    is_str(sig, c->signature, "%s: the signer's signature (%d)", c->name, i + 1);
  }
  unsb_signer_free(s);
}

int main(void) {
  char sig[UNSB_SIGNATURE_HEX_LEN + 1];

  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_case(&CASES[i]);

  /* x2: body = prefix + "a" * 69968 + suffix, exactly 70000 bytes */
  {
    const char *prefix = "{\"language\":\"python\",\"code\":\"#", *suffix = "\"}";
    size_t np = strlen(prefix), ns = strlen(suffix), count = 69968;
    char *body = malloc(np + count + ns);
    memcpy(body, prefix, np);
    memset(body + np, 'a', count);
    memcpy(body + np + count, suffix, ns);
    ok(np + count + ns == 70000, "x2: body is 70000 bytes");
    ok(unsb_sign("unsb-sk-test0-test1-test2-test3", 31, "1700000000", "POST", "/execute",
                 body, np + count + ns, sig) == 0, "x2: signs");
    is_str(sig, "46069003b6dbc0464907c29406703b095c074b94cf706ea76529210e687d0dc7",
           "x2-body-70000-bytes: signature");
    free(body);
  }

  /* v9: the bare HMAC primitive */
  ok(unsb_hmac_hex("key", 3, "message", 7, sig) == 0, "v9: hmac");
  is_str(sig, "6e9ef29b75fffc5b7abae527d58fdadb2fe42e7219011976917343065f58ed4a",
         "v9-raw-hmac-anchor: signature");

  /* a NULL body with length 0 is the empty body */
  ok(unsb_sign("unsb-sk-test0-test1-test2-test3", 31, "1700000000", "GET", "/jobs/job_abc123",
               NULL, 0, sig) == 0, "NULL body signs");
  is_str(sig, "2666b2dd806900271147f92a7741c602493bee00bd645b6fce78d0a724c82bc2",
         "NULL body = empty body (v2)");
  ok(unsb_sign(NULL, 0, "1", "GET", "/", NULL, 0, sig) == -1, "NULL secret refused");
  ok(unsb_sign("k", 1, "1", "GET", "/", NULL, 5, sig) == -1, "NULL body with a length refused");
  ok(unsb_signer_new(NULL, 0) == NULL, "a signer needs a secret");
  {
    unsb_signer *s = unsb_signer_new("k", 1);
    ok(unsb_signer_sign(s, "1", "GET", "/", NULL, 5, sig) == -1, "signer: NULL body with a length refused");
    ok(unsb_signer_sign(NULL, "1", "GET", "/", NULL, 0, sig) == -1, "signer: NULL signer refused");
    unsb_signer_free(s);
    unsb_signer_free(NULL);
  }

  /* the query is cut by the caller's helper */
  ok(unsb_path_for_signing("/services/svc1/logs?all=true") == strlen("/services/svc1/logs"),
     "path_for_signing cuts at '?'");
  ok(unsb_path_for_signing("/jobs") == 5, "path_for_signing keeps a path without query");

  ok(unsb_signature_equal("abc", "abc") == 1, "signature_equal: equal");
  ok(unsb_signature_equal("abc", "abd") == 0, "signature_equal: different");
  ok(unsb_signature_equal("abc", "ab") == 0, "signature_equal: different length");
  return tap_done();
}
