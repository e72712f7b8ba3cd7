/*
** Unit tests of the object locator rules (cp/objects/locator.h, spec §5.3, §5.1):
** every rule with inputs on both sides of it, including bytes a JSON
** string or a query can carry (NUL, invalid UTF-8, oversized).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cp/objects/locator.h"
#include "tests/tap.h"

static char err[256];

/* Test names show inputs with control characters as '?' (a raw newline
** would break the TAP line). Two buffers: two inputs per name at most. */
static const char *shown(const char *s) {
  static char buf[2][128];
  static int k;
  char *b = buf[k ^= 1];
  size_t i = 0;
  for (; s && s[i] && i < sizeof buf[0] - 1; i++)
    b[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
  b[i] = '\0';
  return s ? b : "(absent)";
}

static void scopes(void) {
  ux_obj_scope s = 0;
  ok(ux_objloc_scope("upload", &s, err, sizeof err) == 0 && s == UX_OBJ_UPLOAD, "scope upload");
  ok(ux_objloc_scope("agent", &s, err, sizeof err) == 0 && s == UX_OBJ_AGENT, "scope agent");
  const char *bad[] = { "", "Upload", "uploads", " agent", "checkpoint", NULL };
  for (int i = 0; bad[i]; i++)
    ok(ux_objloc_scope(bad[i], &s, err, sizeof err) < 0, "scope '%s' refused", bad[i]);
  ok(ux_objloc_scope(NULL, &s, err, sizeof err) < 0, "missing scope refused");
  is_str(err, "scope must be 'upload' or 'agent'", "scope message");
  is_str(ux_objloc_bucket(UX_OBJ_UPLOAD), "user-uploads", "upload bucket");
  is_str(ux_objloc_bucket(UX_OBJ_AGENT), "agent-data", "agent bucket");
}

static void id_ok(const char *in, size_t len, const char *want) {
  char out[UX_OBJ_ID_MAX + 1] = "";
  int rc = ux_objloc_id("upload_id", in, len, out, err, sizeof err);
  ok(rc == 0, "id '%s' accepted (%s)", shown(in), rc ? err : "ok");
  is_str(out, want, "id '%s' normalised", shown(in));
}

static void id_bad(const char *in, size_t len, const char *why) {
  char out[UX_OBJ_ID_MAX + 1];
  ok(ux_objloc_id("run_id", in, len, out, err, sizeof err) < 0, "id refused: %s", why);
  is_str(err, "run_id must be a lowercase DNS-style identifier", "message for %s", why);
}

static void ids(void) {
  id_ok("abc", 3, "abc");
  id_ok("  Run-7\t\n", 9, "run-7");
  id_ok("0", 1, "0");
  id_ok("a-", 2, "a-");
  id_ok("\xe2\x84\xaa" "elvin", 8, "kelvin");          /* KELVIN SIGN lower-cases to k */
  char max[64];
  memset(max, 'a', 63);
  max[63] = '\0';
  id_ok(max, 63, max);
  id_bad(NULL, 0, "absent");
  id_bad("", 0, "empty");
  id_bad("   ", 3, "only spaces");
  id_bad("-abc", 4, "leading dash");
  id_bad("a_b", 3, "underscore");
  id_bad("a.b", 3, "dot");
  id_bad("a b", 3, "inner space");
  id_bad("a/b", 3, "slash");
  id_bad("\xc4\xb0stanbul", 9, "U+0130 (lower-cases to i + U+0307)");
  id_bad("\xc3\xbc", 2, "non-ASCII letter");
  id_bad("ab\0c", 4, "NUL inside");
  char big[65];
  memset(big, 'a', 64);
  big[64] = '\0';
  id_bad(big, 64, "64 characters");
}

static void path_ok(ux_obj_scope sc, const char *in, int list, const char *want) {
  char out[UX_OBJ_PATH_MAX + 1] = "?";
  int rc = ux_objloc_path(sc, in, in ? strlen(in) : 0, list, out, err, sizeof err);
  ok(rc == 0, "path '%s' accepted (%s)", in ? in : "(absent)", rc ? err : "ok");
  is_str(out, want, "path '%s' normalised", in ? in : "(absent)");
}

static void path_bad(ux_obj_scope sc, const char *in, size_t len, int list, const char *msg) {
  char out[UX_OBJ_PATH_MAX + 1];
  ok(ux_objloc_path(sc, in, len, list, out, err, sizeof err) < 0, "path refused: %s", msg);
  is_str(err, msg, "message");
}

static void paths(void) {
  path_ok(UX_OBJ_UPLOAD, "source/a.txt", 0, "source/a.txt");
  path_ok(UX_OBJ_UPLOAD, "./source//dir/./b.txt", 0, "source/dir/b.txt");
  path_ok(UX_OBJ_UPLOAD, "derived/x/", 0, "derived/x");
  path_ok(UX_OBJ_UPLOAD, "meta", 0, "meta");
  path_ok(UX_OBJ_AGENT, "artifacts/report.pdf", 0, "artifacts/report.pdf");
  path_ok(UX_OBJ_AGENT, "logs/..x/y", 0, "logs/..x/y");
  path_ok(UX_OBJ_AGENT, "inputs/\xc3\xbc.txt", 0, "inputs/\xc3\xbc.txt");
  path_ok(UX_OBJ_AGENT, NULL, 1, "");
  path_ok(UX_OBJ_AGENT, "", 1, "");
  path_ok(UX_OBJ_AGENT, ".", 1, "");
  path_ok(UX_OBJ_AGENT, "./", 1, "");
  path_ok(UX_OBJ_AGENT, "outputs", 1, "outputs");
  path_bad(UX_OBJ_UPLOAD, NULL, 0, 0, "path is required");
  path_bad(UX_OBJ_UPLOAD, "", 0, 0, "path must not be empty");
  path_bad(UX_OBJ_UPLOAD, ".", 1, 0, "path must name an object ('.' is only allowed for list)");
  path_bad(UX_OBJ_UPLOAD, "/source/a", 9, 0, "path must be relative");
  path_bad(UX_OBJ_UPLOAD, "source/../../etc", 16, 0, "path must not contain '..'");
  path_bad(UX_OBJ_UPLOAD, "..", 2, 1, "path must not contain '..'");
  path_bad(UX_OBJ_UPLOAD, "source/a\0b", 10, 0, "path must not contain NUL bytes");
  path_bad(UX_OBJ_UPLOAD, "source/\xff", 8, 0, "path must be valid UTF-8");
  path_bad(UX_OBJ_UPLOAD, "inputs/a", 8, 0, "path must start with one of: source, derived, meta");
  path_bad(UX_OBJ_UPLOAD, "sources/a", 9, 1, "path must start with one of: source, derived, meta");
  path_bad(UX_OBJ_AGENT, "source/a", 8, 0,
           "path must start with one of: inputs, outputs, artifacts, logs, meta");
  char big[600];
  memcpy(big, "source/", 7);
  memset(big + 7, 'x', sizeof big - 7);
  path_bad(UX_OBJ_UPLOAD, big, 513, 0, "path must be at most 512 bytes");
  char out[UX_OBJ_PATH_MAX + 1];
  ok(ux_objloc_path(UX_OBJ_UPLOAD, big, 512, 0, out, err, sizeof err) == 0 && strlen(out) == 512,
     "a 512-byte path is accepted whole");
  path_bad(UX_OBJ_UPLOAD, big, sizeof big, 0, "path must be at most 512 bytes");
}

static void owners(void) {
  const char *good[] = { "tenant-a/0645ca35688bd5af1135ecc65edaa4ce", "a/b", "T.1/user@example.com",
                         "management/x_y-z", NULL };
  for (int i = 0; good[i]; i++)
    ok(ux_objloc_owner(good[i], strlen(good[i]), err, sizeof err) == 0, "owner '%s' accepted", good[i]);
  const char *bad[] = { "", "a", "/b", "a/", "a/b/c", ".a/b", "a/..", "-a/b", "a b/c", "a/b\n",
                        "a/\xc3\xbc", NULL };
  for (int i = 0; bad[i]; i++)
    ok(ux_objloc_owner(bad[i], strlen(bad[i]), err, sizeof err) < 0, "owner '%s' refused",
       shown(bad[i]));
  ok(ux_objloc_owner("a/b\0c", 5, err, sizeof err) < 0, "owner with NUL refused");
  ok(ux_objloc_owner(NULL, 0, err, sizeof err) < 0, "absent owner refused");
  char seg[300];
  memset(seg, 'a', sizeof seg);
  seg[128] = '/';
  ok(ux_objloc_owner(seg, 257, err, sizeof err) == 0, "two 128-character segments accepted");
  seg[128] = 'a';
  seg[129] = '/';
  ok(ux_objloc_owner(seg, 258, err, sizeof err) < 0, "a 129-character segment refused");
}

static void keys(void) {
  ux_objloc l;
  memset(&l, 0, sizeof l);
  char key[UX_OBJ_KEY_MAX + 1];
  l.scope = UX_OBJ_UPLOAD;
  strcpy(l.owner, "t/s");
  strcpy(l.upload_id, "u1");
  strcpy(l.path, "source/a.txt");
  ok(ux_objloc_key(&l, key, sizeof key) == 0, "upload key builds");
  is_str(key, "users/t/s/uploads/u1/source/a.txt", "upload key");
  l.path[0] = '\0';
  ux_objloc_key(&l, key, sizeof key);
  is_str(key, "users/t/s/uploads/u1", "upload prefix without path");
  l.scope = UX_OBJ_AGENT;
  strcpy(l.agent_id, "ag");
  strcpy(l.run_id, "r-1");
  strcpy(l.path, "logs/x");
  ux_objloc_key(&l, key, sizeof key);
  is_str(key, "users/t/s/agents/ag/runs/r-1/logs/x", "agent key");
  ok(ux_objloc_key(&l, key, 10) < 0, "a key that does not fit is refused");
  /* the longest locator still fits UX_OBJ_KEY_MAX */
  memset(l.owner, 'o', UX_OBJ_OWNER_MAX);
  l.owner[UX_OBJ_OWNER_MAX] = '\0';
  memset(l.agent_id, 'a', UX_OBJ_ID_MAX);
  memset(l.run_id, 'r', UX_OBJ_ID_MAX);
  memset(l.path, 'p', UX_OBJ_PATH_MAX);
  l.path[UX_OBJ_PATH_MAX] = '\0';
  ok(ux_objloc_key(&l, key, sizeof key) == 0, "the longest possible key fits");
}

static void wspaths(void) {
  char out[UX_OBJ_PATH_MAX + 1];
  ok(ux_objloc_wspath("destination", "data/uploads/a.csv", 18, "data/uploads", 0, out, err, sizeof err) == 0,
     "import destination accepted");
  is_str(out, "data/uploads/a.csv", "destination kept");
  ok(ux_objloc_wspath("destination", "./data//uploads/x/y", 19, "data/uploads", 0, out, err, sizeof err) == 0,
     "destination normalised");
  is_str(out, "data/uploads/x/y", "normalised destination");
  ok(ux_objloc_wspath("destination", "data/uploads", 12, "data/uploads", 0, out, err, sizeof err) < 0,
     "the directory itself is not a file");
  is_str(err, "destination must name a file under data/uploads/", "message");
  ok(ux_objloc_wspath("destination", "data/uploadsx/a", 15, "data/uploads", 0, out, err, sizeof err) < 0,
     "a sibling with the prefix is refused");
  ok(ux_objloc_wspath("destination", "data/uploads/../../etc/passwd", 29, "data/uploads", 0, out, err,
                      sizeof err) < 0, "'..' refused");
  is_str(err, "destination must not contain '..'", "message");
  ok(ux_objloc_wspath("destination", "/data/uploads/a", 15, "data/uploads", 0, out, err, sizeof err) < 0,
     "absolute refused");
  ok(ux_objloc_wspath("destination", NULL, 0, "data/uploads", 0, out, err, sizeof err) < 0,
     "absent refused");
  is_str(err, "destination is required", "message");
  ok(ux_objloc_wspath("workspace_path", "artifacts/out.bin", 17, "artifacts", 0, out, err, sizeof err) == 0,
     "export path accepted");
  ok(ux_objloc_wspath("workspace_path", "artifacts/", 10, "artifacts", 1, out, err, sizeof err) == 0,
     "archive form: exactly artifacts");
  ok(ux_objloc_wspath("workspace_path", "artifacts/x", 11, "artifacts", 1, out, err, sizeof err) < 0,
     "archive form refuses a file");
  is_str(err, "workspace_path must be 'artifacts' when archive is true", "message");
  ok(ux_objloc_wspath("workspace_path", "artifacts/a\0", 12, "artifacts", 0, out, err, sizeof err) < 0,
     "NUL refused");
}

static void content_types(void) {
  const char *good[] = { "application/octet-stream", "text/plain", "image/svg+xml",
                         "application/vnd.api+json", "application/x-tar", NULL };
  for (int i = 0; good[i]; i++)
    ok(ux_objloc_content_type(good[i], strlen(good[i]), err, sizeof err) == 0, "'%s' accepted", good[i]);
  const char *bad[] = { "", "text", "Text/plain", "text/plain; charset=utf-8", "text/", "/plain",
                        "text/plain/x", "text/pl ain", "-text/plain", "text/+plain", "text/plain\r\nX: y",
                        NULL };
  for (int i = 0; bad[i]; i++)
    ok(ux_objloc_content_type(bad[i], strlen(bad[i]), err, sizeof err) < 0, "'%s' refused",
       shown(bad[i]));
  char big[300] = "application/";
  memset(big + 12, 'x', 250);
  big[262] = '\0';
  ok(ux_objloc_content_type(big, strlen(big), err, sizeof err) < 0, "over 255 bytes refused");
}

static void shas(void) {
  char out[65];
  const char *up = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
  ok(ux_objloc_sha256(up, 64, out, err, sizeof err) == 0, "upper-case hex accepted");
  is_str(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "lower-cased");
  ok(ux_objloc_sha256(up, 63, out, err, sizeof err) < 0, "63 digits refused");
  ok(ux_objloc_sha256("g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 64, out, err,
                      sizeof err) < 0, "non-hex refused");
  ok(ux_objloc_sha256(NULL, 0, out, err, sizeof err) < 0, "absent refused");
}

int main(void) {
  scopes();
  ids();
  paths();
  owners();
  keys();
  wspaths();
  content_types();
  shas();
  return tap_done();
}
