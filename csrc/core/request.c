/*
** Building and sending signed requests (see request.h).
*/
#include "core/request.h"
#include "core/sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/crypto.h>

static const char *const AUTH_HEADERS[] = {"Authorization", "X-Timestamp", "X-Signature"};

static int header_named(const char *line, const char *name) {
  size_t n = strlen(name);
  return strncasecmp(line, name, n) == 0 && line[n] == ':';
}

int unsb_request_check(const unsb_api_request *r, unsb_error *err) {
  const char *p;
  if (!r->method || !*r->method)
    return unsb_invalid(err, UNSB_REQ_METHOD, "method: must not be empty");
  for (p = r->method; *p; p++)
    if (*p < 'A' || *p > 'Z')
      return unsb_invalid(err, UNSB_REQ_METHOD, "method: upper-case letters expected, got '%s'", r->method);
  if (!r->path || r->path[0] != '/')
    return unsb_invalid(err, UNSB_REQ_PATH, "path: must start with '/'");
  for (p = r->path; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f)
      return unsb_invalid(err, UNSB_REQ_PATH, "path: blank or control character in '%s'", r->path);
  for (size_t i = 0; i < r->n_headers; i++) {
    const char *h = r->headers[i], *colon = strchr(h, ':');
    if (!colon || colon == h || strpbrk(h, "\r\n"))
      return unsb_invalid(err, UNSB_REQ_HEADERS, "headers: malformed header line");
    for (p = h; p < colon; p++)
      if ((unsigned char)*p <= ' ' || *p == 0x7f)
        return unsb_invalid(err, UNSB_REQ_HEADERS, "headers: bad header name");
    for (size_t k = 0; k < sizeof AUTH_HEADERS / sizeof *AUTH_HEADERS; k++)
      if (header_named(h, AUTH_HEADERS[k]))
        return unsb_invalid(err, UNSB_REQ_HEADERS, "headers: %s is set by the client itself",
                         AUTH_HEADERS[k]);
  }
  if (r->timeout_ms <= 0)
    return unsb_invalid(err, UNSB_REQ_HEADERS, "timeout: must be positive");
  return 0;
}

unsb_http_xfer *unsb_request_open(unsb_http *h, const char *base_url,
                                  const unsb_credentials *cred, const unsb_signer *signer,
                                  const unsb_api_request *r, unsb_error *err) {
  char ts[32], sig[UNSB_SIGNATURE_HEX_LEN + 1];
  char *url = NULL, *signed_path = NULL, *auth = NULL, *xts = NULL, *xsig = NULL;
  const char **headers = NULL;
  size_t n = 0;
  unsb_http_xfer *x = NULL;

  if (unsb_request_check(r, err) != 0) return NULL;
  if (asprintf(&url, "%s%s", base_url, r->path) < 0) url = NULL;
  headers = calloc(r->n_headers + 3, sizeof *headers);
  if (!url || !headers) {
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    goto done;
  }
  if (cred) {
    /* a fresh timestamp for every request, polls and retries included */
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    /* the query string is never signed */
    signed_path = strndup(r->path, unsb_path_for_signing(r->path));
    if (!signed_path || unsb_signer_sign(signer, ts, r->method, signed_path, r->body,
                                         r->body ? r->body_len : 0, sig) != 0) {
      unsb_fail(err, UNSB_EPROTOCOL, "signing the request failed");
      goto done;
    }
    if (asprintf(&auth, "Authorization: Bearer %s", cred->public_key) < 0) auth = NULL;
    if (asprintf(&xts, "X-Timestamp: %s", ts) < 0) xts = NULL;
    if (asprintf(&xsig, "X-Signature: %s", sig) < 0) xsig = NULL;
    if (!auth || !xts || !xsig) {
      unsb_fail(err, UNSB_ENOMEM, "out of memory");
      goto done;
    }
    headers[n++] = auth;
    headers[n++] = xts;
    headers[n++] = xsig;
  }
  for (size_t i = 0; i < r->n_headers; i++) headers[n++] = r->headers[i];

  unsb_http_request hr = {
    .method = r->method, .url = url, .headers = headers, .n_headers = n,
    .body = r->body, .body_len = r->body ? r->body_len : 0, .timeout_ms = r->timeout_ms,
    .stream = r->stream,
  };
  x = unsb_http_open(h, &hr, err);   /* libcurl has copied the URL and headers */
done:
  OPENSSL_cleanse(sig, sizeof sig);
  free(url);
  free(signed_path);
  free(auth);
  free(xts);
  free(xsig);
  free(headers);
  return x;
}
