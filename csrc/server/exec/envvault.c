/*
** The env vault of a service (spec §4.3): PUT stores a .env text, sealed
** with the data directory's key (vault.h), in the service's own row, so
** the vault dies with the service and nothing of it lives in the volume
** the service's code controls. GET shows metadata only; export gives the
** text back to the owner; DELETE removes it. Every later run of the
** service (execute, and the bootstrap when it next starts) gets the
** variables in its environment (ux_vault_service_env).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "server/exec/vault.h"
#include "server/fsutil.h"
#include "server/exec/routes.h"
#include "server/store/store.h"

/* The plaintext of doc's vault: malloc'd, NULL when there is none (*has
** 0) or it cannot be opened (*has 1, logged). */
static char *open_vault(ux_server *srv, json_t *doc, size_t *len, int *has) {
  unsigned char key[UX_VAULT_KEY_LEN];
  char err[256];
  json_t *sealed = json_object_get(doc, "env_vault");
  const char *id = json_string_value(json_object_get(doc, "id"));
  *has = json_is_object(sealed);
  if (!*has || !id) return NULL;
  if (ux_vault_key(srv->cfg.data, key, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: env vault: %s\n", err);
    return NULL;
  }
  char *text = ux_vault_open(key, id, sealed, len);
  OPENSSL_cleanse(key, sizeof key);
  if (!text) fprintf(stderr, "unsandboxd: the env vault of %s does not open\n", id);
  return text;
}

int ux_vault_service_env(ux_server *srv, json_t *doc, char ***env, size_t *n) {
  size_t len = 0;
  int has;
  char err[256];
  *env = NULL;
  *n = 0;
  char *text = open_vault(srv, doc, &len, &has);
  if (!has) return 0;
  int rc = text ? ux_vault_parse(text, len, env, n, err, sizeof err) : -1;
  if (text) { OPENSSL_cleanse(text, len); free(text); }
  return rc;
}

static json_t *get_service(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "services", id, r->owner);
  if (!doc) ux_reply_error(r, 404, "not_found", "no such service");
  return doc;
}

int ux_h_service_env_get(ux_req *r, const char *id) {
  const char *format = r->srv->cfg.lenient ? ux_req_query(r, "format") : NULL;
  if (format && !strcmp(format, "export"))            /* the C library's variant */
    return ux_h_service_env_export(r, id);
  json_t *doc = get_service(r, id);
  if (!doc) return -1;
  json_t *v = json_object_get(doc, "env_vault"), *j = json_object();
  json_object_set_new(j, "has_vault", json_boolean(json_is_object(v)));
  json_object_set_new(j, "count", json_integer(json_integer_value(json_object_get(v, "count"))));
  json_t *at = json_object_get(v, "updated_at");
  json_object_set(j, "updated_at", at ? at : json_null());
  json_decref(doc);
  return ux_reply_json(r, 200, j);
}

/* Parses, seals and stores text as id's vault. */
static int store_vault(ux_req *r, const char *id, const char *text, size_t len) {
  unsigned char key[UX_VAULT_KEY_LEN];
  char err[256], **env;
  size_t n;
  if (len > UX_VAULT_MAX)
    return ux_reply_error(r, 413, "payload_too_large", "the env vault holds at most %d bytes",
                          UX_VAULT_MAX);
  if (ux_vault_parse(text, len, &env, &n, err, sizeof err) != 0)
    return ux_reply_error(r, 400, "bad_request", "env: %s", err);
  ux_vault_env_free(env, n);
  if (ux_vault_key(r->srv->cfg.data, key, err, sizeof err) != 0) {
    fprintf(stderr, "unsandboxd: env vault: %s\n", err);
    return ux_reply_error(r, 500, "internal_error", "the vault key is unusable");
  }
  json_t *sealed = ux_vault_seal(key, id, text, len), *doc = NULL;
  OPENSSL_cleanse(key, sizeof key);
  if (!sealed) return ux_reply_error(r, 500, "internal_error", "cannot seal the env vault");
  json_object_set_new(sealed, "count", json_integer((json_int_t)n));
  json_object_set_new(sealed, "updated_at", json_integer(ux_now()));
  int rc = ux_store_set_field(r->srv->store, "services", id, r->owner, "env_vault", sealed, &doc);
  json_decref(sealed);
  json_decref(doc);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot store the env vault");
  json_t *j = json_object();
  json_object_set_new(j, "count", json_integer((json_int_t)n));
  json_object_set_new(j, "message", json_string("environment vault updated"));
  return ux_reply_json(r, 200, j);
}

int ux_h_service_env_put(ux_req *r, const char *id) {
  json_t *doc = get_service(r, id);
  if (!doc) return -1;
  json_decref(doc);
  return store_vault(r, id, r->body, r->body_len);
}

/* Lenient: POST {"env": "..."} (the Python SDK's form). */
int ux_h_service_env_post(ux_req *r, const char *id) {
  const char *text;
  json_t *doc = get_service(r, id);
  if (!doc) return -1;
  json_decref(doc);
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  int rc = ux_get_str(r, body, "env", 1, NULL, &text) < 0 ? -1
         : store_vault(r, id, text, json_string_length(json_object_get(body, "env")));
  json_decref(body);
  return rc;
}

int ux_h_service_env_export(ux_req *r, const char *id) {
  size_t len = 0;
  int has;
  json_t *doc = get_service(r, id);
  if (!doc) return -1;
  char *text = open_vault(r->srv, doc, &len, &has);
  json_decref(doc);
  if (!has) return ux_reply_error(r, 404, "not_found", "the service has no env vault");
  if (!text) return ux_reply_error(r, 500, "internal_error", "the env vault cannot be opened");
  json_t *j = json_object();
  json_object_set_new(j, "env", ux_json_bytes(text, len));
  OPENSSL_cleanse(text, len);
  free(text);
  return ux_reply_json(r, 200, j);
}

/* ux_store_modify's edit: drops the vault, refusing when there is none. */
static int drop_vault(json_t *doc, void *ctx) {
  (void)ctx;
  return json_object_del(doc, "env_vault") == 0 ? 0 : 1;
}

int ux_h_service_env_delete(ux_req *r, const char *id) {
  int rc = ux_store_modify(r->srv->store, "services", id, r->owner, drop_vault, NULL, NULL);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such service");
  if (rc == 2) return ux_reply_error(r, 404, "not_found", "the service has no env vault");
  if (rc != 1) return ux_reply_error(r, 500, "internal_error", "cannot delete the env vault");
  json_t *j = json_object();
  json_object_set_new(j, "message", json_string("environment vault deleted"));
  return ux_reply_json(r, 200, j);
}
