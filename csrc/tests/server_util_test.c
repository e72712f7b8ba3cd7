/*
** Unit tests of unsandboxd's pure helpers: id and file-name
** checks, UTF-8 repair of program output.
*/
#include <stdlib.h>
#include <string.h>

#include "server/ids.h"
#include "server/http/reply.h"
#include "tests/tap.h"

static void test_ids(void) {
  ok(ux_valid_id("job_0123abcd"), "plain id is valid");
  ok(ux_valid_id("unsb-session-1.x"), "dots and dashes are valid");
  ok(!ux_valid_id(""), "empty id is invalid");
  ok(!ux_valid_id("."), "'.' is invalid");
  ok(!ux_valid_id(".."), "'..' is invalid");
  ok(!ux_valid_id("a/b"), "slash is invalid");
  ok(!ux_valid_id("a%2Fb"), "percent is invalid");
  char big[200];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ok(!ux_valid_id(big), "ids over 128 bytes are invalid");
  char id[64];
  ok(ux_random_id(id, sizeof id, "job_", 12) == 0 && strlen(id) == 28 &&
     strspn(id + 4, "0123456789abcdef") == 24, "job ids are job_ + 24 hex");
}

static void test_relpath(void) {
  ok(ux_valid_relpath("a.txt"), "simple name");
  ok(ux_valid_relpath("dir/sub/a.txt"), "nested name");
  ok(!ux_valid_relpath("/etc/passwd"), "absolute path");
  ok(!ux_valid_relpath("../x"), "leading ..");
  ok(!ux_valid_relpath("a/../../x"), "inner ..");
  ok(!ux_valid_relpath("a//b"), "empty component");
  ok(!ux_valid_relpath("a/"), "trailing slash");
  ok(!ux_valid_relpath("./a"), "'.' component");
  ok(!ux_valid_relpath("a\nb"), "control character");
  ok(!ux_valid_relpath(""), "empty name");
}

static void test_utf8(void) {
  json_t *j = ux_json_bytes("ok \xc3\xa9", 5);
  is_str(json_string_value(j), "ok \xc3\xa9", "valid UTF-8 is kept");
  json_decref(j);
  j = ux_json_bytes("a\xff" "b\xc3", 4);
  is_str(json_string_value(j), "a\xef\xbf\xbd" "b\xef\xbf\xbd", "invalid bytes become U+FFFD");
  json_decref(j);
  j = ux_json_bytes("a\0b", 3);
  ok(json_string_length(j) == 3, "NUL bytes survive");
  json_decref(j);
  j = ux_json_bytes("\xed\xa0\x80", 3);
  is_str(json_string_value(j), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "surrogates are invalid");
  json_decref(j);
}

int main(void) {
  test_ids();
  test_relpath();
  test_utf8();
  return tap_done();
}
