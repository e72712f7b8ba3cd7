/*
** Control Plane identifiers (core/cpids.h), argv quoting (core/quote.h)
** and the UTF-8 decoder under them: every case of spec/fixtures/ids.json
** for these three rules, then the inputs the vectors do not cover.
*/
#include <stdlib.h>
#include <string.h>

#include "core/cpids.h"
#include "core/quote.h"
#include "core/utf8.h"
#include "tests/tap.h"

static const struct { const char *key, *id; } SESSIONS[] = {
  {"demo", "2a97516c354b68848cdbd8f54a226a0a"},
  {"session-a", "fa57a52dbf08190218529730a3e99db6"},
  {"my-agent-session", "5593ced6c549b0e6fc56a8bf34e9555a"},
  {"j\xc3\xbcrgen", "19b720a911fced55aecd96bf4ddcada1"},
  {"sandbox-0123456789ab", "2f7e2c29a888503a42d012020cc1a0fb"},
};

#define X63 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
static const struct { const char *in, *out; } OBJECTS[] = {
  {"My Agent!", "my-agent"},
  {"run_2024/01", "run-2024-01"},
  {"\xc3\x9cn\xc3\xaf" "code", "n-code"},
  {"---", "id-cb3f91d54eee30e53e35b2b99905f70f"},
  {X63 "x", "id-7ce100971f64e7001e8fe5a51973ecdf"},
  {X63, X63},
  {"", "id-e3b0c44298fc1c149afbf4c8996fb924"},
  {"  --Foo--Bar--  ", "foo-bar"},
  {"run.2024.01", "run-2024-01"},
  {"A_B", "a-b"},
  {"agent-7", "agent-7"},
  {"U\xcc\x88nicode", "u-nicode"},
  {"\xe2\x84\xaa" "elvin", "kelvin"},
  {"\xc4\xb0stanbul", "i-stanbul"},
};

static const struct { const char *argv[4]; const char *out; } QUOTES[] = {
  {{"printf", "%s", "a; echo unsafe"}, "printf %s 'a; echo unsafe'"},
  {{"ls", "-la", "/workspace/src"}, "ls -la /workspace/src"},
  {{"echo", ""}, "echo ''"},
  {{"echo", "it's"}, "echo 'it'\"'\"'s'"},
  {{"echo", "$HOME"}, "echo '$HOME'"},
  {{"echo", "h\xc3\xa9llo"}, "echo 'h\xc3\xa9llo'"},
  {{"two words", "x=1,y@2"}, "'two words' x=1,y@2"},
};

static void session_ids(void) {
  char out[UNSB_SESSION_ID_LEN + 1];
  unsb_error err;
  for (size_t i = 0; i < sizeof SESSIONS / sizeof *SESSIONS; i++) {
    ok(unsb_session_id(SESSIONS[i].key, strlen(SESSIONS[i].key), out, &err) == 0,
       "session key %zu", i + 1);
    is_str(out, SESSIONS[i].id, "session_id of '%s'", SESSIONS[i].key);
  }
  ok(unsb_session_id("", 0, out, &err) == -1 && err.kind == UNSB_EVALIDATION, "empty key refused");
  ok(unsb_session_id(NULL, 0, out, &err) == -1, "no key refused");
  ok(unsb_session_id("k\xff", 2, out, &err) == -1 && strstr(err.message, "UTF-8") &&
     !strstr(err.message, "k\xff"), "invalid UTF-8 key refused without quoting it");
}

static void object_ids(void) {
  char out[UNSB_OBJECT_ID_MAX + 1];
  unsb_error err;
  for (size_t i = 0; i < sizeof OBJECTS / sizeof *OBJECTS; i++) {
    ok(unsb_object_id(OBJECTS[i].in, strlen(OBJECTS[i].in), out, &err) == 0, "object id %zu", i + 1);
    is_str(out, OBJECTS[i].out, "object_id vector %zu", i + 1);
  }
  /* beyond the vectors: invalid UTF-8 bytes count as non-ASCII characters */
  unsb_object_id("Ab\xff\xfe" "cd", 6, out, &err);
  is_str(out, "ab-cd", "invalid bytes become one '-'");
  unsb_object_id("\xc0\xaf" "x", 3, out, &err);
  is_str(out, "x", "an overlong '/' is not ASCII: stripped like any non-ASCII lead");
  unsb_object_id("\xed\xa0\x80", 3, out, &err);
  is_str(out, "id-91a681b998555fb475479817b126c94e", "a lone surrogate alone: hash of its bytes");
  unsb_object_id("a\0b", 3, out, &err);
  is_str(out, "a-b", "NUL is a non-alphanumeric character");
  unsb_object_id("\xe2\x84\xaa\xe2\x84\xaa", 6, out, &err);
  is_str(out, "kk", "two kelvin signs");
  unsb_object_id("\xc4\xb0", 2, out, &err);
  is_str(out, "i", "U+0130 alone: 'i' and a stripped dash");
  unsb_object_id("\xe2\x84\xab", 3, out, &err);
  is_str(out, "id-4fb63b480753ec805996e42514121ab3", "U+212B (Angstrom, lower case not ASCII)");
  /* 63 characters after collapsing is kept, 64 is hashed */
  char *big = malloc(200);
  memset(big, 'a', 200);
  memcpy(big + 62, "------b", 7);                  /* 62 a, dashes, b: 64 after collapse */
  unsb_object_id(big, 69, out, &err);
  ok(strncmp(out, "id-", 3) == 0, "64 characters after collapsing: hashed");
  memcpy(big + 61, "------b", 7);                  /* 61 a, '-', b = 63 */
  unsb_object_id(big, 68, out, &err);
  ok(strlen(out) == 63 && out[61] == '-' && out[62] == 'b', "63 after collapsing: kept");
  memset(big, 'a', 63);
  memset(big + 63, '-', 137);
  unsb_object_id(big, 200, out, &err);
  ok(strlen(out) == 63, "trailing dashes beyond 63 do not count");
  unsb_object_id(big, 200, out, &err);
  free(big);
  ok(unsb_object_id(NULL, 0, out, &err) == 0 && strcmp(out, "id-e3b0c44298fc1c149afbf4c8996fb924") == 0,
     "NULL is the empty string");
}

static void quoting(void) {
  unsb_error err;
  size_t len, lens[4];
  char *s;
  for (size_t i = 0; i < sizeof QUOTES / sizeof *QUOTES; i++) {
    size_t n = 0;
    while (n < 4 && QUOTES[i].argv[n]) { lens[n] = strlen(QUOTES[i].argv[n]); n++; }
    s = unsb_shell_quote(QUOTES[i].argv, lens, n, 0, &len, &err);
    is_str(s, QUOTES[i].out, "argv_quoting vector %zu", i + 1);
    ok(s && len == strlen(QUOTES[i].out), "vector %zu length", i + 1);
    free(s);
  }
  const char *argv[] = {"echo", "a\nb", "'", "*", "~x", "a\0b"};
  size_t l[] = {4, 3, 1, 1, 2, 3};
  s = unsb_shell_quote(argv, l, 5, 0, &len, &err);
  is_str(s, "echo 'a\nb' ''\"'\"'' '*' '~x'", "newline, lone quote, glob and tilde quoted");
  free(s);
  ok(unsb_shell_quote(argv, l, 6, 0, &len, &err) == NULL && err.kind == UNSB_EVALIDATION &&
     strstr(err.message, "argument 6"), "a NUL byte is refused naming the argument");
  ok(unsb_shell_quote(argv, l, 0, 0, &len, &err) == NULL, "no arguments refused");
  s = unsb_shell_quote(argv, l, 2, 10, &len, &err);
  ok(s && len == 10, "exactly at max_len");
  free(s);
  ok(unsb_shell_quote(argv, l, 2, 9, &len, &err) == NULL && strstr(err.message, "longer than 9"),
     "one byte over max_len refused");
}

static void utf8(void) {
  uint32_t cp = 0;
  ok(unsb_utf8_next((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp) == 4 && cp == 0x1f600, "4-byte");
  ok(unsb_utf8_next((const unsigned char *)"\xf4\x90\x80\x80", 4, &cp) == 0, "above U+10FFFF");
  ok(unsb_utf8_next((const unsigned char *)"\xe0\x80\xaf", 3, &cp) == 0, "overlong 3-byte");
  ok(unsb_utf8_next((const unsigned char *)"\xed\xbf\xbf", 3, &cp) == 0, "surrogate");
  ok(unsb_utf8_next((const unsigned char *)"\xe2\x84", 2, &cp) == 0, "truncated");
  ok(unsb_utf8_next((const unsigned char *)"\x80", 1, &cp) == 0, "lone continuation");
  ok(unsb_utf8_next((const unsigned char *)"", 0, &cp) == 0, "empty");
  ok(unsb_utf8_valid("", 0) && unsb_utf8_valid("a\0b", 3) && !unsb_utf8_valid("\xc3", 1),
     "valid: empty, NUL, truncated");
}

int main(void) {
  session_ids();
  object_ids();
  quoting();
  utf8();
  return tap_done();
}
