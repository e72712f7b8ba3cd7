/*
** The env vault's pieces (vault.h) and the store's edit transaction
** (store_edit.c): sealing round-trips and refuses anything tampered, a
** vault bound to another service, or a malformed sealed object; the key
** file is made 0600 once and a loose or wrong-sized one is refused; the
** .env parser accepts what a run can take and names the line it refuses;
** ux_store_modify writes, refuses and reports a missing row, and
** ux_store_set_owner moves a row only from its owner.
*/
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base64.h"
#include "server/exec/vault.h"
#include "server/mem.h"
#include "server/store/store.h"
#include "tests/tap.h"

static void test_key(const char *dir) {
  unsigned char k1[UX_VAULT_KEY_LEN], k2[UX_VAULT_KEY_LEN];
  char err[256], path[512];
  struct stat st;
  ok(ux_vault_key(dir, k1, err, sizeof err) == 0, "the key is made on first use (%s)", err);
  snprintf(path, sizeof path, "%s/vault.key", dir);
  ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == UX_VAULT_KEY_LEN,
     "vault.key is 32 bytes, mode 0600");
  ok(ux_vault_key(dir, k2, err, sizeof err) == 0 && !memcmp(k1, k2, sizeof k1),
     "the same key is read back");
  ok(chmod(path, 0644) == 0 && ux_vault_key(dir, k2, err, sizeof err) == -1,
     "a key readable by others is refused");
  ok(chmod(path, 0600) == 0 && truncate(path, 10) == 0 && ux_vault_key(dir, k2, err, sizeof err) == -1,
     "a key of the wrong size is refused");
  unlink(path);
  ok(symlink("/etc/hostname", path) == 0 && ux_vault_key(dir, k2, err, sizeof err) == -1,
     "a symlinked key file is refused");
  unlink(path);
}

static void test_seal(void) {
  unsigned char key[UX_VAULT_KEY_LEN], other[UX_VAULT_KEY_LEN];
  size_t len = 0;
  memset(key, 7, sizeof key);
  memset(other, 8, sizeof other);
  const char *text = "A=1\nB=two\n";
  json_t *s = ux_vault_seal(key, "svc-1", text, strlen(text));
  ok(s != NULL, "seal");
  char *plain = ux_vault_open(key, "svc-1", s, &len);
  ok(plain && len == strlen(text) && !memcmp(plain, text, len), "open gives the text back");
  free(plain);
  const char *sd = json_string_value(json_object_get(s, "data"));
  size_t rn = 0;
  unsigned char *sealed = unsb_base64_decode(sd, strlen(sd), &rn);
  ok(sealed && rn == strlen(text) + 16 && !memmem(sealed, rn, "B=two", 5),
     "the sealed bytes are the text's length plus a tag, not the text");
  free(sealed);
  ok(!ux_vault_open(key, "svc-2", s, &len), "a vault bound to another service does not open");
  ok(!ux_vault_open(other, "svc-1", s, &len), "another key does not open it");
  json_t *t = ux_vault_seal(key, "svc-1", text, strlen(text));
  ok(t && strcmp(json_string_value(json_object_get(s, "nonce")),
                 json_string_value(json_object_get(t, "nonce"))) != 0, "every seal has a fresh nonce");
  /* flip one byte of the ciphertext */
  size_t n = 0;
  const char *b = json_string_value(json_object_get(s, "data"));
  unsigned char *raw = unsb_base64_decode(b, strlen(b), &n);
  raw[0] ^= 1;
  char *enc = unsb_base64_encode(raw, n, NULL);
  json_object_set_new(t, "data", json_string(enc));
  json_object_set(t, "nonce", json_object_get(s, "nonce"));
  ok(!ux_vault_open(key, "svc-1", t, &len), "a tampered ciphertext does not open");
  free(raw);
  free(enc);
  json_object_set_new(t, "data", json_string("QUJD"));
  ok(!ux_vault_open(key, "svc-1", t, &len), "a ciphertext shorter than its tag does not open");
  json_object_set_new(t, "nonce", json_string("!!"));
  ok(!ux_vault_open(key, "svc-1", t, &len), "a malformed nonce does not open");
  json_t *empty = json_object();
  ok(!ux_vault_open(key, "svc-1", empty, &len), "an object without fields does not open");
  char *big = calloc(1, UX_VAULT_MAX + 2);
  memset(big, 'a', UX_VAULT_MAX + 1);
  ok(!ux_vault_seal(key, "svc-1", big, UX_VAULT_MAX + 1), "more than 64 KiB is not sealed");
  free(big);
  json_decref(empty);
  json_decref(s);
  json_decref(t);
}

static int parses(const char *text, size_t *n, char ***env) {
  char err[256];
  return ux_vault_parse(text, strlen(text), env, n, err, sizeof err);
}

static void test_parse(void) {
  char **env, err[256];
  size_t n;
  ok(parses("A=1\n# c\n\n  export B='x y'\r\nC=\"q\"\nD=\n", &n, &env) == 0 && n == 4 &&
     !strcmp(env[0], "A=1") && !strcmp(env[1], "B=x y") && !strcmp(env[2], "C=q") && !strcmp(env[3], "D="),
     "comments, blanks, export, quotes, CRLF and empty values");
  ux_vault_env_free(env, n);
  ok(parses("", &n, &env) == 0 && n == 0, "an empty vault is fine");
  ux_vault_env_free(env, n);
  ok(parses("A=1\nnonsense\n", &n, &env) == -1, "a line without '=' is refused");
  ok(ux_vault_parse("A=1\nnonsense\n", 12, &env, &n, err, sizeof err) == -1 && strstr(err, "line 2"),
     "the refusal names the line (%s)", err);
  ok(parses("=x\n", &n, &env) == -1, "an empty name is refused");
  ok(parses("1A=x\n", &n, &env) == -1, "a name starting with a digit is refused");
  ok(parses("A-B=x\n", &n, &env) == -1, "a name with '-' is refused");
  ok(ux_vault_parse("A=x\0y", 5, &env, &n, err, sizeof err) == -1, "a NUL byte is refused");
  size_t big = 300 * 6;
  char *many = malloc(big + 1), *p = many;
  for (int i = 0; i < 300; i++) p += sprintf(p, "V%03d=\n", i);
  ok(ux_vault_parse(many, (size_t)(p - many), &env, &n, err, sizeof err) == -1,
     "more than 256 variables are refused (%s)", err);
  free(many);
}

static int add_x(json_t *doc, void *ctx) {
  (void)ctx;
  return json_object_set_new(doc, "x", json_integer(1));
}
static int refuse(json_t *doc, void *ctx) { (void)doc; (void)ctx; return 1; }

typedef struct { ux_store *st; int base, fails; } adder;

static int append_item(json_t *doc, void *ctx) {
  json_t *list = json_object_get(doc, "items");
  return json_array_append_new(list, json_integer(*(int *)ctx));
}

static void *add_many(void *arg) {
  adder *a = arg;
  for (int i = 0; i < 200; i++) {
    int v = a->base + i;
    if (ux_store_modify(a->st, "images", "race", NULL, append_item, &v, NULL) != 1) a->fails++;
  }
  return NULL;
}

/* Two threads append 200 items each to one document: none is lost. */
static void test_modify_race(ux_store *st) {
  json_t *d = json_pack("{s:s,s:I,s:[]}", "id", "race", "created_at", (json_int_t)1, "items");
  ok(ux_store_insert(st, "images", "race", "alice", "ready", d) == 0, "race row");
  json_decref(d);
  adder a = { st, 0, 0 }, b = { st, 1000, 0 };
  pthread_t ta, tb;
  int started = pthread_create(&ta, NULL, add_many, &a) == 0 && pthread_create(&tb, NULL, add_many, &b) == 0;
  ok(started, "two editing threads start");
  if (!started) return;
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  json_t *got = ux_store_get(st, "images", "race", "alice");
  ok(a.fails == 0 && b.fails == 0 && json_array_size(json_object_get(got, "items")) == 400,
     "400 concurrent edits: none lost (%zu)", json_array_size(json_object_get(got, "items")));
  json_decref(got);
}

static void test_store(const char *dir) {
  char err[256];
  ux_store *st = ux_store_open(dir, err, sizeof err);
  ok(st != NULL, "store opens");
  if (!st) return;
  json_t *d = json_pack("{s:s,s:I}", "id", "img1", "created_at", (json_int_t)1), *out = NULL;
  ok(ux_store_insert(st, "images", "img1", "alice", "ready", d) == 0, "images is a table");
  ok(ux_store_modify(st, "images", "img1", "alice", add_x, NULL, &out) == 1 &&
     json_integer_value(json_object_get(out, "x")) == 1, "modify writes and returns the document");
  json_decref(out);
  ok(ux_store_modify(st, "images", "img1", "bob", add_x, NULL, NULL) == 0, "another owner's row is absent");
  ok(ux_store_modify(st, "images", "nope", NULL, add_x, NULL, NULL) == 0, "a missing row is 0");
  ok(ux_store_modify(st, "images", "img1", "alice", refuse, NULL, NULL) == 2, "a refusal is 2");
  ok(ux_store_modify(st, "bogus", "img1", "alice", add_x, NULL, NULL) == -1, "an unknown table is -1");
  ok(ux_store_set_owner(st, "images", "img1", "bob", "carol") == 0, "only the owner gives a row away");
  ok(ux_store_set_owner(st, "images", "img1", "alice", "bob") == 1, "the owner gives it away");
  json_t *got = ux_store_get(st, "images", "img1", "bob");
  ok(got && !strcmp(json_string_value(json_object_get(got, "owner_api_key")), "bob") &&
     json_integer_value(json_object_get(got, "x")) == 1, "the new owner has it, owner_api_key set");
  json_decref(got);
  ok(!ux_store_get(st, "images", "img1", "alice"), "the old owner no longer has it");
  json_decref(d);
  test_modify_race(st);
  ux_store_close(st);
}

int main(void) {
  char dir[] = "/tmp/unsb-vault-XXXXXX";
  ux_mem_init();
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
  test_key(dir);
  test_seal();
  test_parse();
  test_store(dir);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return tap_done();
}
