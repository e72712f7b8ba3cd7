/*
** A client of the execution API: base URL, timeouts, the HTTP engine, and
** credentials resolved once, on the first signed request, then kept (the
** secret only in C memory, wiped when the client is freed).
*/
#ifndef UNSB_CLIENT_H
#define UNSB_CLIENT_H

#include <stddef.h>

#include "core/credentials.h"
#include "core/error.h"
#include "core/http.h"
#include "core/request.h"

#define UNSB_DEFAULT_URL "https://api.unsandbox.com"
#define UNSB_DEFAULT_TIMEOUT_MS 120000L
#define UNSB_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define UNSB_DEFAULT_MAX_RESPONSE ((size_t)64 * 1024 * 1024)

typedef struct unsb_client unsb_client;

typedef struct {
  const char *url;            /* NULL = UNSANDBOX_URL, else UNSB_DEFAULT_URL */
  long timeout_ms;            /* <= 0 = default */
  long connect_timeout_ms;    /* <= 0 = default */
  const char *ca_file;        /* NULL = system store */
  size_t max_response;        /* 0 = default */
  unsb_cred_opts cred;        /* copied; resolved lazily */
  unsb_loop *loop;            /* the event loop to share; NULL = a private one */
  int max_concurrency;        /* transfers at once; 0 = UNSB_HTTP_DEFAULT_CONCURRENCY */
} unsb_client_config;

/* Checks the URL (unsb_url_check; trailing '/' removed) and copies
** everything. NULL with err (validation: err->arg 1 for the URL given,
** UNSB_ARG_ENV for UNSANDBOX_URL's; or transport). */
unsb_client *unsb_client_new(const unsb_client_config *cfg, unsb_error *err);

/* Wipes the credentials and frees everything; NULL is fine. */
void unsb_client_free(unsb_client *c);

const char *unsb_client_url(const unsb_client *c);
long unsb_client_timeout(const unsb_client *c);
/* What the terminal (ws/client.h) connects with: the same CA file (NULL =
** the system store) and connect timeout as the client's HTTP engine. */
const char *unsb_client_ca_file(const unsb_client *c);
long unsb_client_connect_timeout(const unsb_client *c);

/* The credentials, resolving them on first use. 0 or -1 (credentials). */
int unsb_client_credentials(unsb_client *c, const unsb_credentials **out, unsb_error *err);

/* What the first signed request would do, done now: the credentials
** resolved and the signer keyed with the secret (which maps libcrypto).
** 0, or -1 (credentials; protocol when OpenSSL fails). */
int unsb_client_prepare(unsb_client *c, unsb_error *err);

/* r (timeout_ms <= 0 = the client's timeout) as an open transfer of the
** client's engine (see unsb_request_open), signed when sign is non-zero:
** credentials are resolved first then. */
unsb_http_xfer *unsb_client_open(unsb_client *c, const unsb_api_request *r, int sign,
                                 unsb_error *err);

unsb_http *unsb_client_http(unsb_client *c);

#endif
