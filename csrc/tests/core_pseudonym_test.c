/*
** Acting subject (core/pseudonym.h): the eight published vectors of
** spec/fixtures/acting-subject.json, the payload digest that proves this
** table is the published set, the invalid pseudonyms, and bad inputs.
*/
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/digest.h"
#include "core/pseudonym.h"
#include "core/utf8.h"
#include "tests/tap.h"

#define A32 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define B32 "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

static const struct { const char *salt, *tenant, *subject, *expected; } CASES[] = {
  {A32, "tenant-a", "alice", "0645ca35688bd5af1135ecc65edaa4ce"},
  {A32, "tenant-al", "ice", "c33abefe2b71dc88c3c9f86842c46684"},
  {A32, "tenant-a", "lice", "092b4b261c684e4b9da58c62a7c02820"},
  {B32, "tenant-a", "alice", "cd5eb54ad464e3bf48351a128a28b06f"},
  {A32, "acme", "user-0123456789abcdef0123456789abcdef", "b846014603301513909d2bf5c2b78e4d"},
  {A32, "acme", "j\xc3\xbcrgen@example.com", "bddd20228b5b5170e4b91d43c50e80c8"},
  {A32, "tenant-b", "alice", "9fb3515ba544df5ef935af57b609b6b0"},
  {A32, "Tenant.One", "Alice@example.com", "3bb177853748a11280d364472c34d240"},
};
#define NCASES (sizeof CASES / sizeof *CASES)

static const char *const INVALID[] = {
  "0645CA35688BD5AF1135ECC65EDAA4CE",
  "0645ca35688bd5af1135ecc65edaa4cE",
  "0645ca35688bd5af1135ecc65edaa4c",
  "0645ca35688bd5af1135ecc65edaa4ce0",
  "0645ca35688bd5af",
  "0645ca35688bd5af1135ecc65edaa4ce5bd754ea7a8acab05bd32f8619c10373",
  "0645ca35688bd5af1135ecc65edaa4cg",
  " 0645ca35688bd5af1135ecc65edaa4ce",
  "0645ca35688bd5af1135ecc65edaa4ce ",
  "0645ca35 688bd5af1135ecc65edaa4c",
  "0645ca35688bd5af1135ecc65edaa4ce\n",
  "",
};

/* A JSON string with non-ASCII escaped as \uXXXX (the vectors need no
** other escapes and hold no code point above U+FFFF). */
static void json_string(unsb_buf *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s), n;
  uint32_t cp;
  char esc[16];
  unsb_buf_append(b, "\"", 1);
  for (size_t i = 0; i < len; i += n) {
    n = unsb_utf8_next(p + i, len - i, &cp);
    if (cp < 0x80) {
      unsb_buf_append(b, s + i, 1);
    } else {
      snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
      unsb_buf_append(b, esc, 6);
    }
  }
  unsb_buf_append(b, "\"", 1);
}

/* The canonical payload of the fixture's "payload_canonicalization". */
static void payload_digest(void) {
  unsb_buf b;
  char hex[UNSB_SHA256_HEX_LEN + 1];
  unsb_buf_init(&b, 1 << 16);
  unsb_buf_append_str(&b, "{\"header\":\"X-Acting-Subject\",\"min_salt_bytes\":32,"
                          "\"pseudonym_pattern\":\"^[0-9a-f]{32}$\",\"vectors\":[");
  for (size_t i = 0; i < NCASES; i++) {
    unsb_buf_append_str(&b, i ? ",{\"expected\":" : "{\"expected\":");
    json_string(&b, CASES[i].expected);
    unsb_buf_append_str(&b, ",\"salt\":");
    json_string(&b, CASES[i].salt);
    unsb_buf_append_str(&b, ",\"subject_id\":");
    json_string(&b, CASES[i].subject);
    unsb_buf_append_str(&b, ",\"tenant_id\":");
    json_string(&b, CASES[i].tenant);
    unsb_buf_append_str(&b, "}");
  }
  unsb_buf_append_str(&b, "]}");
  ok(unsb_sha256_hex(b.p, b.len, hex) == 0, "payload hashed");
  is_str(hex, "1a5daa90834c2cc2e4d793dcfd946689f7434e157d9bae9bb5019f83caa2c24e",
         "the table above is the published vector set (payload digest)");
  unsb_buf_free(&b);
}

static int derive(const char *salt, size_t salt_len, const char *t, size_t tl, const char *s,
                  size_t sl, char *out, unsb_error *err) {
  return unsb_acting_subject(salt, salt_len, t, tl, s, sl, out, err);
}

int main(void) {
  char out[UNSB_SUBJECT_LEN + 1];
  unsb_error err;

  for (size_t i = 0; i < NCASES; i++) {
    ok(derive(CASES[i].salt, strlen(CASES[i].salt), CASES[i].tenant, strlen(CASES[i].tenant),
              CASES[i].subject, strlen(CASES[i].subject), out, &err) == 0,
       "vector %zu derives", i + 1);
    is_str(out, CASES[i].expected, "vector %zu (%s, %s)", i + 1, CASES[i].tenant, CASES[i].subject);
    ok(unsb_valid_subject(out, strlen(out)), "vector %zu has the pseudonym shape", i + 1);
  }
  payload_digest();

  for (size_t i = 0; i < sizeof INVALID / sizeof *INVALID; i++)
    ok(!unsb_valid_subject(INVALID[i], strlen(INVALID[i])), "invalid pseudonym %zu refused", i + 1);
  ok(!unsb_valid_subject("0645ca35688bd5af1135ecc65edaa4c\0", 32), "embedded NUL refused");
  ok(!unsb_valid_subject(NULL, 0), "NULL refused");

  /* a longer salt is fine; a shorter one is refused without quoting it */
  ok(derive(A32 "A", 33, "t", 1, "s", 1, out, &err) == 0, "33-byte salt accepted");
  ok(derive("secret-salt-31-bytes-long-xxxxx", 31, "t", 1, "s", 1, out, &err) == -1 &&
     err.kind == UNSB_EVALIDATION && strstr(err.message, "at least 32 bytes, got 31") &&
     !strstr(err.message, "secret-salt"), "31-byte salt refused: %s", err.message);
  ok(derive(NULL, 0, "t", 1, "s", 1, out, &err) == -1, "no salt refused");
  ok(derive(A32, 32, "", 0, "s", 1, out, &err) == -1 && strstr(err.message, "tenant"),
     "empty tenant refused");
  ok(derive(A32, 32, "t", 1, "", 0, out, &err) == -1 && strstr(err.message, "subject"),
     "empty subject refused");
  ok(derive(A32, 32, "tenant-a\0x", 10, "alice", 5, out, &err) == -1 &&
     strstr(err.message, "NUL"), "NUL in the tenant refused (it is the separator)");
  ok(derive(A32, 32, "tenant-a", 8, "al\0ice", 6, out, &err) == -1, "NUL in the subject refused");
  ok(derive(A32, 32, "tenant-a", 8, "j\xfcrgen", 6, out, &err) == -1 &&
     strstr(err.message, "UTF-8"), "Latin-1 subject refused (invalid UTF-8)");
  ok(derive(A32, 32, "t\xc0\xaf", 3, "s", 1, out, &err) == -1, "overlong UTF-8 tenant refused");
  return tap_done();
}
