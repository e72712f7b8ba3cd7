/*
** Client state (see client.h).
*/
#include "core/client.h"
#include "core/sign.h"
#include "core/validate.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

struct unsb_client {
  char *url;
  long timeout_ms;
  long connect_timeout_ms;
  char *ca_file;              /* a copy, for the terminal's own TLS (ws/client.h) */
  unsb_http *http;
  /* credential options, deep copies; the secret wiped on free */
  unsb_cred_opts cred_opts;
  char *strings[8];
  char *opt_secret;
  size_t opt_secret_len;
  /* resolved on the first signed request */
  int resolved;
  unsb_credentials cred;
  unsb_signer *signer;        /* keyed with cred's secret, wiped on free */
};

static const char *keep(unsb_client *c, int slot, const char *s, int *oom) {
  if (!s) return NULL;
  c->strings[slot] = strdup(s);
  if (!c->strings[slot]) *oom = 1;
  return c->strings[slot];
}

unsb_client *unsb_client_new(const unsb_client_config *cfg, unsb_error *err) {
  const char *url = cfg->url ? cfg->url : getenv("UNSANDBOX_URL");
  unsb_client *c;
  int oom = 0;
  const char *why;

  if (!url || !*url) url = UNSB_DEFAULT_URL;
  if ((why = unsb_url_check(url))) {
    if (cfg->url) unsb_invalid(err, 1, "%s", why);
    else unsb_invalid(err, UNSB_ARG_ENV, "UNSANDBOX_URL: %s", why);
    return NULL;
  }
  c = calloc(1, sizeof *c);
  if (!c) { unsb_fail(err, UNSB_ENOMEM, "out of memory"); return NULL; }
  c->url = strdup(url);
  if (c->url) {
    size_t n = strlen(c->url);
    while (n > 0 && c->url[n - 1] == '/') c->url[--n] = '\0';
  }
  c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : UNSB_DEFAULT_TIMEOUT_MS;
  c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms
                                                      : UNSB_DEFAULT_CONNECT_TIMEOUT_MS;
  if (cfg->ca_file && !(c->ca_file = strdup(cfg->ca_file))) oom = 1;

  const unsb_cred_opts *o = &cfg->cred;
  unsb_cred_opts *k = &c->cred_opts;
  unsb_cred_opts_init(k);
  k->account = o->account;
  k->public_key = keep(c, 0, o->public_key, &oom);
  k->home = keep(c, 1, o->home, &oom);
  k->cwd = keep(c, 2, o->cwd, &oom);
  k->env_public_key = keep(c, 3, o->env_public_key, &oom);
  k->env_account = keep(c, 4, o->env_account, &oom);
  /* secrets: kept apart so they can be wiped */
  if (o->secret_key) {
    c->opt_secret = malloc(o->secret_len + 1);
    if (c->opt_secret) {
      memcpy(c->opt_secret, o->secret_key, o->secret_len);
      c->opt_secret[o->secret_len] = '\0';
      c->opt_secret_len = o->secret_len;
    } else oom = 1;
    k->secret_key = c->opt_secret;
    k->secret_len = c->opt_secret_len;
  }
  if (o->env_secret_key) {
    c->strings[5] = strdup(o->env_secret_key);
    if (!c->strings[5]) oom = 1;
    k->env_secret_key = c->strings[5];
  }

  unsb_http_config hc = {
    .connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms
                                                      : UNSB_DEFAULT_CONNECT_TIMEOUT_MS,
    .ca_file = cfg->ca_file,
    .max_response = cfg->max_response > 0 ? cfg->max_response : UNSB_DEFAULT_MAX_RESPONSE,
    .loop = cfg->loop,
    .max_concurrency = cfg->max_concurrency,
  };
  if (oom || !c->url) {
    unsb_client_free(c);
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  c->http = unsb_http_new(&hc, err);
  if (!c->http) {
    unsb_client_free(c);
    return NULL;
  }
  return c;
}

void unsb_client_free(unsb_client *c) {
  if (!c) return;
  unsb_credentials_free(&c->cred);
  unsb_signer_free(c->signer);
  if (c->opt_secret) {
    OPENSSL_cleanse(c->opt_secret, c->opt_secret_len);
    free(c->opt_secret);
  }
  for (size_t i = 0; i < sizeof c->strings / sizeof *c->strings; i++) {
    if (c->strings[i]) OPENSSL_cleanse(c->strings[i], strlen(c->strings[i]));
    free(c->strings[i]);
  }
  unsb_http_free(c->http);
  free(c->ca_file);
  free(c->url);
  free(c);
}

const char *unsb_client_url(const unsb_client *c) { return c->url; }
unsb_http *unsb_client_http(unsb_client *c) { return c->http; }
long unsb_client_timeout(const unsb_client *c) { return c->timeout_ms; }
const char *unsb_client_ca_file(const unsb_client *c) { return c->ca_file; }
long unsb_client_connect_timeout(const unsb_client *c) { return c->connect_timeout_ms; }

int unsb_client_credentials(unsb_client *c, const unsb_credentials **out, unsb_error *err) {
  if (!c->resolved) {
    /* a failure is not kept: the user may create the file and retry */
    if (unsb_credentials_resolve(&c->cred_opts, &c->cred, err) != 0) return -1;
    c->resolved = 1;
  }
  *out = &c->cred;
  return 0;
}

int unsb_client_prepare(unsb_client *c, unsb_error *err) {
  const unsb_credentials *cred;
  if (unsb_client_credentials(c, &cred, err) != 0) return -1;
  if (!c->signer && !(c->signer = unsb_signer_new(cred->secret, cred->secret_len)))
    return unsb_fail(err, UNSB_EPROTOCOL, "cannot make the request signer (OpenSSL)");
  return 0;
}

unsb_http_xfer *unsb_client_open(unsb_client *c, const unsb_api_request *r, int sign,
                                 unsb_error *err) {
  const unsb_credentials *cred = NULL;
  unsb_api_request req = *r;
  if (req.timeout_ms <= 0) req.timeout_ms = c->timeout_ms;
  if (unsb_request_check(&req, err) != 0) return NULL;
  if (sign && unsb_client_prepare(c, err) != 0) return NULL;
  if (sign) cred = &c->cred;
  return unsb_request_open(c->http, c->url, cred, c->signer, &req, err);
}
