/*
** accounts.csv and the account selector: the input is split into a
** selector line and the two CSV files (home and working directory), which
** are written to a scratch directory; resolution must never crash and
** must name a source when it succeeds.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/credentials.h"

static char root[64];

static void write_file(const char *path, const uint8_t *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (len) fwrite(data, 1, len, f);
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char home[128], cwd[128], path[192], selector[64] = "";
  if (!root[0]) {
    snprintf(root, sizeof root, "/tmp/unsb-fuzz-acc-%ld", (long)getpid());
    mkdir(root, 0700);
  }
  snprintf(home, sizeof home, "%s/home", root);
  snprintf(cwd, sizeof cwd, "%s/cwd", root);
  mkdir(home, 0700);
  mkdir(cwd, 0700);
  snprintf(path, sizeof path, "%s/.unsandbox", home);
  mkdir(path, 0700);
  /* selector \n home.csv \0 cwd.csv */
  const uint8_t *nl = memchr(data, '\n', size);
  size_t sel = nl ? (size_t)(nl - data) : 0;
  if (sel >= sizeof selector) sel = sizeof selector - 1;
  memcpy(selector, data, sel);
  selector[sel] = '\0';
  const uint8_t *rest = nl ? nl + 1 : data;
  size_t left = size - (size_t)(rest - data);
  const uint8_t *split = memchr(rest, '\0', left);
  size_t first = split ? (size_t)(split - rest) : left;
  snprintf(path, sizeof path, "%s/.unsandbox/accounts.csv", home);
  write_file(path, rest, first);
  snprintf(path, sizeof path, "%s/accounts.csv", cwd);
  write_file(path, split ? split + 1 : rest, split ? left - first - 1 : 0);

  unsb_cred_opts o;
  unsb_credentials c;
  unsb_error err;
  unsb_cred_opts_init(&o);
  o.home = home;
  o.cwd = cwd;
  o.env_account = selector[0] == 'A' ? selector + 1 : NULL;    /* UNSANDBOX_ACCOUNT */
  if (selector[0] == 'I') o.account = atoll(selector + 1);      /* an explicit index */
  if (unsb_credentials_resolve(&o, &c, &err) == 0) {
    if (!c.public_key || !c.secret || !c.source || !*c.public_key || !c.secret_len) {
      fprintf(stderr, "resolved pk='%s' secret_len=%zu source='%s'\n", c.public_key ? c.public_key : "(null)",
              c.secret_len, c.source ? c.source : "(null)");
      abort();
    }
    unsb_credentials_free(&c);
  } else if (err.kind != UNSB_ECREDENTIALS && err.kind != UNSB_ENOMEM) {
    fprintf(stderr, "kind %d: %s\n", (int)err.kind, err.message);
    abort();
  }
  return 0;
}
