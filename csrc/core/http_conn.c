/*
** The connection of a connect_only transfer (see http.h): libcurl has
** made it (the resolver, TCP, TLS with the engine's verification and CA
** file, the connect timeout), and stays its owner, since TLS lives in
** libcurl's connection filters: bytes go through curl_easy_send and
** curl_easy_recv, never through the socket itself. The easy handle stays
** in the multi handle for as long as the connection is used (libcurl
** closes a connect-only connection when its handle leaves the multi
** handle), which is what http.c's collect keeps; the caller watches the
** socket on the shared loop.
*/
#include "core/http_xfer.h"

/* The curl codes of a broken or refused TLS set-up. */
static int tls_failure(int rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
      return 1;
    default:
      return 0;
  }
}

int unsb_http_connected(const unsb_http_xfer *x, const char *name, unsb_error *err) {
  const char *detail;
  if (!x->done) return 0;
  if (x->held) return 1;
  detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror((CURLcode)x->rc);
  if (x->rc == CURLE_OPERATION_TIMEDOUT || x->queue_timeout)
    return unsb_fail(err, UNSB_ETIMEOUT, "no connection to %s within %ld ms (%s)", name,
                     x->timeout_ms, detail);
  if (x->rc == CURLE_URL_MALFORMAT)
    return unsb_fail(err, UNSB_EVALIDATION, "bad URL %s: %s", name, detail);
  if (tls_failure(x->rc))
    return unsb_fail(err, UNSB_ETRANSPORT, "TLS with %s failed (its certificate or host name could "
                     "not be verified, or the TLS handshake broke): %s", name, detail);
  if (x->rc == CURLE_OK)   /* done without a connection: closed, or a start that failed */
    return unsb_fail(err, UNSB_ETRANSPORT, "cannot connect to %s", name);
  return unsb_fail(err, UNSB_ETRANSPORT, "cannot connect to %s: %s", name, detail);
}

int unsb_http_socket(const unsb_http_xfer *x) {
  curl_socket_t s = CURL_SOCKET_BAD;
  if (!x->held || curl_easy_getinfo(x->easy, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK) return -1;
  return s == CURL_SOCKET_BAD ? -1 : (int)s;
}

int unsb_http_send(unsb_http_xfer *x, const void *buf, size_t len, size_t *n, unsb_error *err) {
  CURLcode rc;
  *n = 0;
  if (!x->held) return unsb_fail(err, UNSB_ETRANSPORT, "no connection to %s", x->host);
  rc = curl_easy_send(x->easy, buf, len, n);
  if (rc == CURLE_OK) return 1;
  if (rc == CURLE_AGAIN) return 0;
  return unsb_fail(err, UNSB_ETRANSPORT, "writing to %s failed: %s", x->host,
                   curl_easy_strerror(rc));
}

int unsb_http_recv(unsb_http_xfer *x, void *buf, size_t len, size_t *n, unsb_error *err) {
  CURLcode rc;
  *n = 0;
  if (!x->held) return unsb_fail(err, UNSB_ETRANSPORT, "no connection to %s", x->host);
  rc = curl_easy_recv(x->easy, buf, len, n);
  if (rc == CURLE_OK) return 1;
  if (rc == CURLE_AGAIN) return 0;
  return unsb_fail(err, UNSB_ETRANSPORT, "reading from %s failed: %s", x->host,
                   curl_easy_strerror(rc));
}
