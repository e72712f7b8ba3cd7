/*
** cp_meta (see cp/tables/meta.h).
*/
#include "server/cp/tables/meta.h"

#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "server/store/db.h"

#define SECRET_MAX 64

int ux_meta_create(ux_store *st) {
  return ux_db_exec(st, "CREATE TABLE IF NOT EXISTS cp_meta(name TEXT PRIMARY KEY, value BLOB NOT NULL);",
                    "");
}

/* Made and stored the first time (INSERT OR IGNORE, then read back: two
** servers starting on one data directory agree on the one that won). */
int ux_meta_secret(ux_store *st, const char *name, unsigned char *out, size_t len) {
  unsigned char fresh[SECRET_MAX];
  if (len == 0 || len > sizeof fresh || RAND_bytes(fresh, (int)len) != 1) return -1;
  int rc = ux_db_exec(st, "INSERT OR IGNORE INTO cp_meta(name, value) VALUES(?1, ?2)", "sb",
                      name, (const void *)fresh, len);
  OPENSSL_cleanse(fresh, sizeof fresh);
  json_t *row = rc < 0 ? NULL : ux_db_row(st, "SELECT hex(value) AS v FROM cp_meta WHERE name = ?1",
                                          "s", name);
  const char *hex = json_string_value(json_object_get(row, "v"));
  int ok = hex && strlen(hex) == 2 * len;
  for (size_t i = 0; ok && i < len; i++) {
    unsigned v;
    ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
    out[i] = (unsigned char)v;
  }
  json_decref(row);
  return ok ? 0 : -1;
}
