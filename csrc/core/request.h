/*
** Signed requests for the execution API: the one place a request is
** built. Each call takes a fresh timestamp (time(NULL)), signs
** "<ts>:<METHOD>:<path without query>:<exact body>" with unsb_sign, adds
** Authorization: Bearer <public key>, X-Timestamp and X-Signature, and sends
** the same body bytes through the HTTP engine.
*/
#ifndef UNSB_REQUEST_H
#define UNSB_REQUEST_H

#include <stddef.h>

#include "core/credentials.h"
#include "core/sign.h"
#include "core/error.h"
#include "core/http.h"

typedef struct {
  const char *method;              /* upper case letters */
  const char *path;                /* "/..." with an optional query */
  const char *body;                /* NULL = none */
  size_t body_len;
  long timeout_ms;                 /* > 0 */
  const char *const *headers;      /* extra "Name: value" lines */
  size_t n_headers;
  const unsb_http_stream *stream;  /* NULL = buffered (see http.h) */
} unsb_api_request;

/* The inputs of a request, as err->arg names them: the method, the path,
** the body, and the options (headers, timeout). */
enum { UNSB_REQ_METHOD = 1, UNSB_REQ_PATH = 2, UNSB_REQ_BODY = 3, UNSB_REQ_HEADERS = 4 };

/* Misuse checks, so a binding can refuse a request before anything is
** sent: method of upper-case letters, path starting with '/' without
** blanks or control characters, header lines "Name: value" without CR/LF,
** and no extra header that would replace an authentication header. 0, or
** -1 with validation (err->arg: which input, UNSB_REQ_*). */
int unsb_request_check(const unsb_api_request *r, unsb_error *err);

/* Starts r to base_url + path as a transfer of h (see unsb_http_open):
** signed by signer (keyed with cred's secret) as cred's public key, or
** unsigned when cred is NULL (GET /health). r->body must stay valid until
** the transfer is closed; the rest is copied. */
unsb_http_xfer *unsb_request_open(unsb_http *h, const char *base_url,
                                  const unsb_credentials *cred, const unsb_signer *signer,
                                  const unsb_api_request *r, unsb_error *err);

#endif
