/*
** Credential resolution: every tier, the CSV rules, and the messages, with
** HOME and the working directory in a fresh mkdtemp directory and the
** environment set with setenv.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/credentials.h"
#include "tests/tap.h"

static char root[64], home[128], cwd[128], home_csv[256], cwd_csv[256];

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); exit(2); }
  fputs(text, f);
  fclose(f);
}

static void clear_env(void) {
  unsetenv("UNSANDBOX_PUBLIC_KEY");
  unsetenv("UNSANDBOX_SECRET_KEY");
  unsetenv("UNSANDBOX_ACCOUNT");
}

/* Options as a program sees them: the process environment, our cwd. */
static unsb_cred_opts env_opts(void) {
  unsb_cred_opts o;
  unsb_cred_opts_init(&o);
  unsb_cred_opts_from_environ(&o);
  o.cwd = cwd;
  return o;
}

/* Resolves and checks public key, secret and source (NULLs = expect failure). */
static void expect(const char *what, unsb_cred_opts o, const char *pk, const char *sk,
                   const char *source) {
  unsb_credentials c;
  unsb_error err = {0};
  int rc = unsb_credentials_resolve(&o, &c, &err);
  if (!pk) {
    ok(rc == -1 && err.kind == UNSB_ECREDENTIALS, "%s: fails with kind credentials", what);
    return;
  }
  ok(rc == 0, "%s: resolves", what);
  if (rc != 0) { printf("#   %s\n", err.message); return; }
  is_str(c.public_key, pk, "%s: public key", what);
  is_str(c.secret, sk, "%s: secret", what);
  ok(c.secret_len == strlen(sk), "%s: secret length", what);
  is_str(c.source, source, "%s: source", what);
  unsb_credentials_free(&c);
  unsb_credentials_free(&c);   /* idempotent */
  ok(c.secret == NULL && c.public_key == NULL, "%s: freed", what);
}

/* Resolves expecting failure; returns the message (static buffer). */
static const char *failure(unsb_cred_opts o) {
  static unsb_error err;
  unsb_credentials c;
  memset(&err, 0, sizeof err);
  if (unsb_credentials_resolve(&o, &c, &err) == 0) {
    unsb_credentials_free(&c);
    return "(resolved)";
  }
  return err.message;
}

#define has(msg, part, ...) ok(strstr((msg), (part)) != NULL, __VA_ARGS__)

int main(void) {
  char src[320];
  const char *msg;
  struct stat st;
  unsb_cred_opts o;

  strcpy(root, "/tmp/unsb-cred-XXXXXX");
  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  snprintf(home, sizeof home, "%s/home", root);
  snprintf(cwd, sizeof cwd, "%s/work", root);
  snprintf(home_csv, sizeof home_csv, "%s/.unsandbox/accounts.csv", home);
  snprintf(cwd_csv, sizeof cwd_csv, "%s/accounts.csv", cwd);
  mkdir(home, 0700);
  mkdir(cwd, 0700);
  setenv("HOME", home, 1);
  clear_env();

  /* nothing anywhere: every place is named; nothing is created */
  msg = failure(env_opts());
  has(msg, "no credentials found", "empty: says nothing found");
  has(msg, "arguments", "empty: names the arguments");
  has(msg, "UNSANDBOX_PUBLIC_KEY/UNSANDBOX_SECRET_KEY (not set)", "empty: names the environment");
  has(msg, home_csv, "empty: names the home file");
  has(msg, cwd_csv, "empty: names the cwd file");
  ok(stat(home_csv, &st) != 0 && errno == ENOENT, "lookup creates no file");
  snprintf(src, sizeof src, "%s/.unsandbox", home);
  ok(stat(src, &st) != 0 && errno == ENOENT, "lookup creates no directory");

  /* tier 1: explicit keys */
  o = env_opts();
  o.public_key = "pk-arg";
  o.secret_key = "sk-arg";
  o.secret_len = 6;
  expect("explicit keys", o, "pk-arg", "sk-arg", "arguments");
  o.secret_key = NULL;
  o.secret_len = 0;
  expect("public key without secret", o, NULL, NULL, NULL);
  has(failure(o), "public_key and secret_key", "half a pair: says both are needed");
  o.public_key = NULL;
  o.secret_key = "sk";
  o.secret_len = 2;
  expect("secret without public key", o, NULL, NULL, NULL);
  o.public_key = "";
  expect("empty public key", o, NULL, NULL, NULL);

  /* the CSV rules: CRLF, comments, blank lines, blanks, 3rd column, junk */
  snprintf(src, sizeof src, "%s/.unsandbox", home);
  mkdir(src, 0700);
  write_file(home_csv,
             "# accounts\r\n"
             "\r\n"
             "  pk-zero , sk-zero \r\n"
             "   \t\r\n"
             "   # indented comment\n"
             "only-one-field\n"
             ",sk-without-pk\n"
             "pk-one,sk-one,work account\r\n"
             "pk-two,sk-two");
  expect("home csv row 0 (CRLF, comment, blanks)", env_opts(), "pk-zero", "sk-zero",
         (snprintf(src, sizeof src, "%s:0", home_csv), src));

  /* a control byte or a NUL inside a key: not a key pair, not counted */
  {
    static const char rows[] = "pk-\0nul,sk-nul\n\x01pk-ctl,sk-ctl\npk-del,sk\x7f\npk-good,sk-good\n";
    FILE *f = fopen(home_csv, "wb");
    if (!f || fwrite(rows, 1, sizeof rows - 1, f) != sizeof rows - 1) { perror(home_csv); exit(2); }
    fclose(f);
    expect("rows with control bytes are skipped", env_opts(), "pk-good", "sk-good",
           (snprintf(src, sizeof src, "%s:0", home_csv), src));
    write_file(home_csv, "  pk-zero , sk-zero \r\npk-one,sk-one,work account\r\npk-two,sk-two");
  }

  /* tier 3 beats the files */
  setenv("UNSANDBOX_PUBLIC_KEY", "pk-env", 1);
  setenv("UNSANDBOX_SECRET_KEY", "sk-env", 1);
  expect("environment before the files", env_opts(), "pk-env", "sk-env", "environment");
  /* tier 1 beats the environment */
  o = env_opts();
  o.public_key = "pk-arg";
  o.secret_key = "sk-arg";
  o.secret_len = 6;
  expect("arguments before the environment", o, "pk-arg", "sk-arg", "arguments");
  /* tier 2: an explicit account ignores the environment */
  o = env_opts();
  o.account = 1;
  expect("explicit account 1 (third column dropped)", o, "pk-one", "sk-one",
         (snprintf(src, sizeof src, "%s:1", home_csv), src));
  o.account = 2;
  expect("explicit account 2 (no final newline)", o, "pk-two", "sk-two",
         (snprintf(src, sizeof src, "%s:2", home_csv), src));
  /* only one of the pair in the environment: not used */
  unsetenv("UNSANDBOX_SECRET_KEY");
  expect("half a pair in the environment falls through", env_opts(), "pk-zero", "sk-zero",
         (snprintf(src, sizeof src, "%s:0", home_csv), src));
  setenv("UNSANDBOX_SECRET_KEY", "", 1);
  expect("empty secret in the environment falls through", env_opts(), "pk-zero", "sk-zero",
         (snprintf(src, sizeof src, "%s:0", home_csv), src));
  clear_env();

  /* tier 4: UNSANDBOX_ACCOUNT */
  setenv("UNSANDBOX_ACCOUNT", "2", 1);
  expect("UNSANDBOX_ACCOUNT=2", env_opts(), "pk-two", "sk-two",
         (snprintf(src, sizeof src, "%s:2", home_csv), src));
  setenv("UNSANDBOX_ACCOUNT", " 1 ", 1);
  expect("UNSANDBOX_ACCOUNT with blanks", env_opts(), "pk-one", "sk-one",
         (snprintf(src, sizeof src, "%s:1", home_csv), src));
  setenv("UNSANDBOX_ACCOUNT", "", 1);
  expect("empty UNSANDBOX_ACCOUNT = 0", env_opts(), "pk-zero", "sk-zero",
         (snprintf(src, sizeof src, "%s:0", home_csv), src));
  setenv("UNSANDBOX_ACCOUNT", "abc", 1);
  msg = failure(env_opts());
  has(msg, "UNSANDBOX_ACCOUNT='abc'", "bad UNSANDBOX_ACCOUNT: quotes the value");
  has(msg, home_csv, "bad UNSANDBOX_ACCOUNT: names the home file");
  setenv("UNSANDBOX_ACCOUNT", "-1", 1);
  has(failure(env_opts()), "UNSANDBOX_ACCOUNT='-1'", "negative UNSANDBOX_ACCOUNT is refused");
  setenv("UNSANDBOX_ACCOUNT", "1.5", 1);
  has(failure(env_opts()), "not a row index", "fractional UNSANDBOX_ACCOUNT is refused");
  setenv("UNSANDBOX_ACCOUNT", "7", 1);
  msg = failure(env_opts());
  has(msg, "account 7", "missing row: names the index");
  has(msg, home_csv, "missing row: names the home file");
  has(msg, "3 accounts, no row 7", "missing row: says how many rows there are");
  has(msg, cwd_csv, "missing row: names the cwd file too");
  /* environment keys beat a bad UNSANDBOX_ACCOUNT */
  setenv("UNSANDBOX_ACCOUNT", "abc", 1);
  setenv("UNSANDBOX_PUBLIC_KEY", "pk-env", 1);
  setenv("UNSANDBOX_SECRET_KEY", "sk-env", 1);
  expect("env keys win over a bad UNSANDBOX_ACCOUNT", env_opts(), "pk-env", "sk-env",
         "environment");
  clear_env();

  /* the cwd file after the home file, same index */
  write_file(cwd_csv, "pk-c0,sk-c0\npk-c1,sk-c1\npk-c2,sk-c2\npk-c3,sk-c3\n");
  o = env_opts();
  o.account = 3;
  expect("explicit account missing at home, found in ./accounts.csv", o, "pk-c3", "sk-c3",
         (snprintf(src, sizeof src, "%s:3", cwd_csv), src));
  o.account = 9;
  msg = failure(o);
  has(msg, "account 9", "explicit account missing: names the index");
  has(msg, home_csv, "explicit account missing: names the home file");
  has(msg, cwd_csv, "explicit account missing: names the cwd file");

  /* no HOME: the cwd file still counts */
  unsetenv("HOME");
  expect("HOME unset: ./accounts.csv", env_opts(), "pk-c0", "sk-c0",
         (snprintf(src, sizeof src, "%s:0", cwd_csv), src));
  unlink(cwd_csv);
  msg = failure(env_opts());
  has(msg, "HOME not set", "HOME unset: says so");
  has(msg, cwd_csv, "HOME unset: names the cwd file");
  setenv("HOME", home, 1);

  /* an unreadable accounts file is "not found there", not an error */
  unlink(home_csv);
  mkdir(home_csv, 0700);                 /* a directory where the file should be */
  write_file(cwd_csv, "pk-c0,sk-c0\n");
  expect("unreadable home file: ./accounts.csv used", env_opts(), "pk-c0", "sk-c0",
         (snprintf(src, sizeof src, "%s:0", cwd_csv), src));
  unlink(cwd_csv);
  has(failure(env_opts()), "unreadable", "unreadable home file: named as unreadable");

  /* cleanup */
  rmdir(home_csv);
  snprintf(src, sizeof src, "%s/.unsandbox", home);
  rmdir(src);
  rmdir(home);
  rmdir(cwd);
  rmdir(root);
  return tap_done();
}
