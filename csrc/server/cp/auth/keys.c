/*
** API keys (see cp/auth/keys.h). The random parts come from RAND_bytes; the
** lookup hashes the presented value whatever the prefix finds, so an
** unknown prefix costs what a known one does.
*/
#include "server/cp/auth/keys.h"

#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "core/base64.h"
#include "core/digest.h"
#include "server/cp/tables/keys.h"
#include "server/fsutil.h"

#define PREFIX_LEN 12
#define LAST_USED_EVERY 300

static char *urlsafe(size_t nbytes) {
  unsigned char raw[32];
  if (nbytes > sizeof raw || RAND_bytes(raw, (int)nbytes) != 1) return NULL;
  char *s = unsb_base64url_encode(raw, nbytes, NULL);
  OPENSSL_cleanse(raw, sizeof raw);
  return s;
}

json_t *ux_cp_key_issue(ux_cp *cp, const char *tenant, const char *label,
                        int act_as_subjects, long long expires_at) {
  unsigned char idb[8], hash[SHA256_DIGEST_LENGTH];
  char id[17], key[200];
  char *a = urlsafe(9), *b = urlsafe(32);
  json_t *out = NULL;
  if (!a || !b || RAND_bytes(idb, sizeof idb) != 1) goto done;
  unsb_hex(idb, sizeof idb, id);
  snprintf(key, sizeof key, "sk_%s_%s_%s", a, tenant ? tenant : "admin", b);
  SHA256((const unsigned char *)key, strlen(key), hash);
  char prefix[PREFIX_LEN + 1];
  snprintf(prefix, sizeof prefix, "%s", key);
  const char *perms = act_as_subjects ? "[\"act_as_subjects\"]" : "[]";
  if (ux_apikeys_add(cp->srv->store, id, tenant, prefix, hash, sizeof hash, label, perms,
                     (long long)ux_now(), expires_at) != 1)
    goto done;
  out = json_object();
  json_object_set_new(out, "id", json_string(id));
  json_object_set_new(out, "tenant_id", tenant ? json_string(tenant) : json_null());
  json_object_set_new(out, "label", json_string(label));
  json_object_set_new(out, "api_key", json_string(key));
  json_object_set_new(out, "permissions", json_loads(perms, 0, NULL));
  json_object_set_new(out, "expires_at", expires_at ? json_integer(expires_at) : json_null());
  json_object_set_new(out, "note", json_string("api_key is shown once and cannot be retrieved later"));
done:
  OPENSSL_cleanse(key, sizeof key);
  free(a);
  free(b);
  return out;
}

json_t *ux_cp_key_find(ux_cp *cp, const char *bearer, int *broken) {
  unsigned char hash[SHA256_DIGEST_LENGTH];
  char prefix[PREFIX_LEN + 1], hex[2 * SHA256_DIGEST_LENGTH + 1];
  long long now = ux_now();
  *broken = 0;
  SHA256((const unsigned char *)bearer, strlen(bearer), hash);
  unsb_hex(hash, sizeof hash, hex);
  snprintf(prefix, sizeof prefix, "%s", bearer);
  json_t *rows = ux_apikeys_by_prefix(cp->srv->store, prefix, now);
  if (!rows) { *broken = 1; return NULL; }
  json_t *found = NULL, *row;
  size_t i;
  json_array_foreach(rows, i, row) {
    const char *h = json_string_value(json_object_get(row, "h"));
    if (h && strlen(h) == strlen(hex) && CRYPTO_memcmp(h, hex, strlen(hex)) == 0 && !found)
      found = json_incref(row);
  }
  json_decref(rows);
  if (found) {
    json_object_del(found, "h");
    ux_apikeys_touch(cp->srv->store, json_string_value(json_object_get(found, "id")), now,
                     LAST_USED_EVERY);
  }
  return found;
}

json_t *ux_cp_key_list(ux_cp *cp, const char *tenant) {
  json_t *rows = ux_apikeys_list(cp->srv->store, tenant);
  json_t *row;
  size_t i;
  json_array_foreach(rows, i, row) {
    json_t *p = json_loads(json_string_value(json_object_get(row, "permissions")), 0, NULL);
    json_object_set_new(row, "permissions", p ? p : json_array());
  }
  return rows;
}
