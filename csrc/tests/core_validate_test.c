/*
** The shared request rules (core/validate.h): environment names and
** sizes, relative file names with every limit at its edge, and sets of
** input files that cannot all be placed.
*/
#include <stdlib.h>
#include <string.h>

#include "core/validate.h"
#include "tests/tap.h"

#define REL(s) unsb_relpath_check((s), strlen(s))

static void test_env_names(void) {
  ok(!unsb_env_name_check("PATH", 4), "PATH is a name");
  ok(!unsb_env_name_check("_x9", 3), "_x9 is a name");
  ok(!unsb_env_name_check("a", 1), "one letter");
  ok(unsb_env_name_check("", 0) != NULL, "empty refused");
  ok(unsb_env_name_check(NULL, 3) != NULL, "NULL refused");
  ok(unsb_env_name_check("9A", 2) != NULL, "leading digit refused");
  ok(unsb_env_name_check("A-B", 3) != NULL, "dash refused");
  ok(unsb_env_name_check("A=B", 3) != NULL, "'=' refused");
  ok(unsb_env_name_check("A\0B", 3) != NULL, "embedded NUL refused (length counts)");
  ok(unsb_env_name_check("\xc3\xa9", 2) != NULL, "non-ASCII refused");
  ok(unsb_env_name_check("A B", 3) != NULL, "blank refused");
}

static void test_env_sets(void) {
  size_t bad = 99;
  unsb_env_var two[] = { { "A", "1", 1, 1 }, { "B_2", "", 3, 0 } };
  ok(!unsb_env_check(two, 2, &bad) && bad == 2, "two good variables pass");
  ok(!unsb_env_check(two, 0, &bad), "an empty environment passes");
  unsb_env_var badname[] = { { "A", "1", 1, 1 }, { "1X", "v", 2, 1 } };
  ok(unsb_env_check(badname, 2, &bad) && bad == 1, "a bad name names its index");
  unsb_env_var nul[] = { { "A", "x\0y", 1, 3 } };
  ok(unsb_env_check(nul, 1, &bad) && bad == 0, "a NUL in a value is refused");
  unsb_env_var nullv[] = { { "A", NULL, 1, 0 } };
  ok(unsb_env_check(nullv, 1, &bad) && bad == 0, "a missing value is refused");

  /* 256 variables pass, 257 do not */
  static unsb_env_var many[UNSB_ENV_MAX_VARS + 1];
  static char names[UNSB_ENV_MAX_VARS + 1][8];
  for (int i = 0; i <= UNSB_ENV_MAX_VARS; i++) {
    snprintf(names[i], sizeof names[i], "V%d", i);
    many[i] = (unsb_env_var){ names[i], "", strlen(names[i]), 0 };
  }
  ok(!unsb_env_check(many, UNSB_ENV_MAX_VARS, &bad), "256 variables pass");
  ok(unsb_env_check(many, UNSB_ENV_MAX_VARS + 1, &bad) && bad == UNSB_ENV_MAX_VARS + 1,
     "257 variables are refused as a whole");

  /* one variable: "A=" value NUL; exactly 128 KiB passes, one more does not */
  size_t one = UNSB_ENV_MAX_ONE - 3;
  char *big = malloc(UNSB_ENV_MAX_BYTES);
  memset(big, 'x', UNSB_ENV_MAX_BYTES);
  unsb_env_var edge[] = { { "A", big, 1, one } };
  ok(!unsb_env_check(edge, 1, &bad), "one variable of exactly 128 KiB passes");
  edge[0].value_len = one + 1;
  ok(unsb_env_check(edge, 1, &bad) != NULL && bad == 0, "128 KiB + 1 byte is refused, naming it");
  /* together: two of 128 KiB are exactly 256 KiB; a third byte more is not */
  unsb_env_var two_max[] = { { "A", big, 1, one }, { "B", big, 1, one } };
  ok(!unsb_env_check(two_max, 2, &bad), "256 KiB together passes");
  unsb_env_var three[] = { { "A", big, 1, one }, { "B", big, 1, one }, { "C", big, 1, 0 } };
  ok(unsb_env_check(three, 3, &bad) != NULL && bad == 3, "more than 256 KiB together is refused as a whole");
  unsb_env_var huge[] = { { "A", big, 1, (size_t)-1 } };
  ok(unsb_env_check(huge, 1, &bad) != NULL, "a length near SIZE_MAX does not wrap around");
  free(big);
}

static void test_relpaths(void) {
  ok(!REL("a.txt"), "simple name");
  ok(!REL("dir/sub/a.txt"), "nested name");
  ok(!REL(".hidden"), "a dot file");
  ok(!REL("a..b"), "dots inside a name");
  ok(!REL("...") , "three dots is a name");
  ok(REL("/etc/passwd") != NULL, "absolute path");
  ok(REL("../x") != NULL, "leading ..");
  ok(REL("a/../../x") != NULL, "inner ..");
  ok(REL("a/..") != NULL, "trailing ..");
  ok(REL("a//b") != NULL, "empty component");
  ok(REL("a/") != NULL, "trailing slash");
  ok(REL("./a") != NULL, "'.' component");
  ok(REL("a/.") != NULL, "trailing '.' component");
  ok(REL("a\nb") != NULL, "control character");
  ok(REL("a\x7f") != NULL, "DEL");
  ok(REL("") != NULL, "empty name");
  ok(unsb_relpath_check(NULL, 0) != NULL, "NULL");
  ok(unsb_relpath_check("a\0b", 3) != NULL, "embedded NUL (length counts)");

  char buf[UNSB_RELPATH_MAX + 64];
  memset(buf, 'a', UNSB_COMPONENT_MAX);
  ok(!unsb_relpath_check(buf, UNSB_COMPONENT_MAX), "a 255-byte component");
  ok(unsb_relpath_check(buf, UNSB_COMPONENT_MAX + 1) != NULL, "a 256-byte component");
  /* 64 levels of "a/" pass, 65 do not */
  size_t n = 0;
  for (int i = 0; i < UNSB_DEPTH_MAX; i++) { buf[n++] = 'a'; buf[n++] = '/'; }
  ok(!unsb_relpath_check(buf, n - 1), "64 levels");
  buf[n++] = 'a';
  ok(unsb_relpath_check(buf, n) != NULL, "65 levels");
  /* the whole-name limit: 4095 bytes of 255-byte components pass */
  n = 0;
  while (n + UNSB_COMPONENT_MAX + 1 <= UNSB_RELPATH_MAX) {
    memset(buf + n, 'b', UNSB_COMPONENT_MAX);
    n += UNSB_COMPONENT_MAX;
    buf[n++] = '/';
  }
  memset(buf + n, 'c', UNSB_RELPATH_MAX - n);
  ok(!unsb_relpath_check(buf, UNSB_RELPATH_MAX), "4095 bytes");
  buf[UNSB_RELPATH_MAX] = 'c';
  ok(unsb_relpath_check(buf, UNSB_RELPATH_MAX + 1) != NULL, "4096 bytes");
}

static const char *conflict(const char **names, size_t n, size_t *i, size_t *j) {
  size_t lens[16], order[16];
  for (size_t k = 0; k < n; k++) lens[k] = strlen(names[k]);
  return unsb_paths_conflict(names, lens, n, order, i, j);
}

static void test_conflicts(void) {
  size_t i = 99, j = 99;
  const char *fine[] = { "a", "b/c", "b/d", "a-b/c", "a.b" };
  ok(!conflict(fine, 5, &i, &j), "distinct names in distinct places");
  ok(!conflict(fine, 0, &i, &j), "no names");
  const char *fd[] = { "x", "a", "a-x", "a/b" };
  ok(conflict(fd, 4, &i, &j) && i == 1 && j == 3, "'a' and 'a/b' clash though 'a-x' sorts between");
  const char *df[] = { "a/b/c", "q", "a/b" };
  ok(conflict(df, 3, &i, &j) && i == 2 && j == 0, "a deeper clash: 'a/b' and 'a/b/c'");
  const char *dup[] = { "k", "z", "k" };
  ok(conflict(dup, 3, &i, &j) && i == 0 && j == 2, "one name twice");
  const char *dirs[] = { "a/b", "a/c" };
  ok(!conflict(dirs, 2, &i, &j), "two files in one directory");
}

int main(void) {
  test_env_names();
  test_env_sets();
  test_relpaths();
  test_conflicts();
  return tap_done();
}
