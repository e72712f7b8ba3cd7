/*
** One transfer's libcurl side (see http_xfer.h): the body and header
** callbacks and the options. Buffered and streamed transfers share one
** path: the body callback either appends to the response or hands the
** bytes to the caller's stream, decided once when the headers are
** complete. Every response header the caller asked for is kept, capped.
*/
#include "core/http_xfer.h"
#include "core/clock.h"
#include "core/headers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_ID_MAX 256    /* request ids are short; cap what we keep */
#define UPLOAD_BUFFER (512L * 1024)   /* libcurl's largest is 2 MiB */
#define RECEIVE_BUFFER (512L * 1024)  /* a large download's (libcurl's default: 16 KiB) */

/* ---------------------------------------------------------------------
** the body
** ------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  unsb_http_xfer *x = ud;
  unsb_http_response *r = &x->resp;
  size_t len = size * n;
  if (x->streaming) {
    if (!x->first_data_us) x->first_data_us = unsb_monotonic_us();
    int rc = x->stream.on_data(x->stream.ud, data, len);
    if (rc == UNSB_HTTP_PAUSE) {
      x->paused = 1;
      return CURL_WRITEFUNC_PAUSE;    /* curl offers the same bytes again */
    }
    if (rc != 0) {
      x->cancelled = 1;
      return 0;                       /* aborts the transfer */
    }
    r->streamed += len;
    return len;
  }
  if (len > x->max - r->body_len) {   /* abort: the cap is a refusal, not a cut */
    x->too_big = 1;
    return 0;
  }
  if (r->body_len + len + 1 > x->cap) {
    /* small first: most answers are a few hundred bytes, and a request
    ** under 1 KiB stays out of malloc's large bins (which consolidate) */
    size_t cap = x->cap ? x->cap : 512;
    while (cap < r->body_len + len + 1) cap *= 2;
    char *b = realloc(r->body, cap);
    if (!b) {
      x->oom = 1;
      return 0;
    }
    r->body = b;
    x->cap = cap;
  }
  memcpy(r->body + r->body_len, data, len);
  r->body_len += len;
  r->body[r->body_len] = '\0';
  return len;
}

/* The request body from a file, straight into libcurl's buffer. */
static size_t on_read(char *buf, size_t size, size_t n, void *ud) {
  unsb_http_xfer *x = ud;
  for (;;) {
    ssize_t got = read(x->body_fd, buf, size * n);
    if (got >= 0) return (size_t)got;   /* 0 early: libcurl fails the short upload */
    if (errno == EINTR) continue;
    x->read_failed = 1;
    x->read_errno = errno;
    return CURL_READFUNC_ABORT;
  }
}

/* ---------------------------------------------------------------------
** headers
** ------------------------------------------------------------------- */

/* The blank line after the final response's headers: the stream decides
** what happens to the body. Returns 0 to go on, -1 to cancel. */
static int end_of_head(unsb_http_xfer *x) {
  long status = 0;
  char *ctype = NULL;
  int mode;
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || x->head_done) return 0;     /* 1xx, or trailers */
  x->head_done = 1;
  curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ctype);
  if (x->stream.on_head) mode = x->stream.on_head(x->stream.ud, status, ctype);
  else mode = status >= 200 && status < 300 ? UNSB_HTTP_STREAM : UNSB_HTTP_BUFFER;
  if (mode == UNSB_HTTP_CANCEL) {
    x->cancelled = 1;
    return -1;
  }
  x->streaming = mode == UNSB_HTTP_STREAM;
  return 0;
}

static void forget_headers(unsb_http_response *r) {
  free(r->request_id);
  r->request_id = NULL;
  r->retry_after = -1;
  for (size_t i = 0; i < UNSB_HTTP_CAPTURE_MAX; i++) {
    free(r->captured[i]);
    r->captured[i] = NULL;
  }
}

/* Keeps the value of a header the caller asked for (the last one wins). */
static void capture(unsb_http_xfer *x, const char *line, size_t len) {
  size_t vlen;
  const char *v;
  for (size_t i = 0; i < x->n_capture; i++) {
    if (!(v = unsb_header_value(line, len, x->capture[i], &vlen))) continue;
    free(x->resp.captured[i]);
    x->resp.captured[i] = strndup(v, vlen < UNSB_HTTP_CAPTURE_VALUE_MAX ? vlen
                                                                        : UNSB_HTTP_CAPTURE_VALUE_MAX);
    if (!x->resp.captured[i]) x->oom = 1;
    return;
  }
}

static size_t on_header(char *line, size_t size, size_t n, void *ud) {
  unsb_http_xfer *x = ud;
  unsb_http_response *r = &x->resp;
  size_t len = size * n, vlen;
  const char *v;
  if (x->has_stream && (len == 2 || len == 1) && (line[0] == '\r' || line[0] == '\n')) {
    if (end_of_head(x) != 0) return 0;   /* aborts the transfer */
  } else if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
    forget_headers(r);   /* a new response (after a 100 Continue) */
  } else if ((v = unsb_header_value(line, len, "X-Request-Id", &vlen))) {
    free(r->request_id);
    r->request_id = strndup(v, vlen < REQUEST_ID_MAX ? vlen : REQUEST_ID_MAX);
    if (!r->request_id) x->oom = 1;
  } else if ((v = unsb_header_value(line, len, "Retry-After", &vlen))) {
    r->retry_after = unsb_retry_after(v, vlen, (int64_t)time(NULL));
  } else {
    capture(x, line, len);
  }
  return x->oom ? 0 : len;
}

/* ---------------------------------------------------------------------
** options
** ------------------------------------------------------------------- */

static int has_header(const unsb_http_request *req, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = 0; i < req->n_headers; i++)
    if (strncasecmp(req->headers[i], name, nl) == 0 && req->headers[i][nl] == ':') return 1;
  return 0;
}

static int body_method(const char *m) {
  return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

static struct curl_slist *build_headers(const unsb_http_request *req) {
  struct curl_slist *list = NULL, *next;
  /* no "Expect: 100-continue" round trip before large bodies */
  const char *fixed[2] = {"Expect:", NULL};
  if (!has_header(req, "Content-Type")) {
    if ((req->body && req->body_len > 0) || (req->has_body_fd && req->body_fd_len > 0))
      fixed[1] = "Content-Type: application/json";
    else if (body_method(req->method)) fixed[1] = "Content-Type:";  /* drop curl's form type */
  }
  for (size_t i = 0; i < 2; i++) {
    if (!fixed[i]) continue;
    if (!(next = curl_slist_append(list, fixed[i]))) goto oom;
    list = next;
  }
  for (size_t i = 0; i < req->n_headers; i++) {
    if (!(next = curl_slist_append(list, req->headers[i]))) goto oom;
    list = next;
  }
  return list;
oom:
  curl_slist_free_all(list);
  return NULL;
}

/* The host of a URL (for messages), parsed by libcurl; the engine keeps
** the last one by its scheme and authority, since its calls share them. */
static void url_host(unsb_http *h, const char *url, char *out, size_t size) {
  const char *sep = strstr(url, "://");
  size_t n = sep ? strcspn(sep + 3, "/?#") + (size_t)(sep + 3 - url) : 0;
  if (n && n < sizeof h->origin && strncmp(url, h->origin, n) == 0 && h->origin[n] == '\0') {
    snprintf(out, size, "%s", h->origin_host);
    return;
  }
  CURLU *u = curl_url();
  char *host = NULL;
  snprintf(out, size, "(unknown host)");
  if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    snprintf(out, size, "%s", host);
    if (n && n < sizeof h->origin) {
      memcpy(h->origin, url, n);
      h->origin[n] = '\0';
      snprintf(h->origin_host, sizeof h->origin_host, "%s", host);
    }
  }
  curl_free(host);
  curl_url_cleanup(u);
}

static int set_options(unsb_http_xfer *x, const unsb_http_request *req) {
  CURL *e = x->easy;
  int bad = 0;
#define SET(opt, val) (bad |= curl_easy_setopt(e, opt, val) != CURLE_OK)
  curl_easy_reset(e);
  SET(CURLOPT_URL, req->url);
  SET(CURLOPT_PRIVATE, (void *)x);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
  SET(CURLOPT_ERRORBUFFER, x->errbuf);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  SET(CURLOPT_WRITEDATA, x);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, x);
  SET(CURLOPT_TIMEOUT_MS, req->timeout_ms);
  SET(CURLOPT_CONNECTTIMEOUT_MS, x->h->connect_timeout_ms);
  SET(CURLOPT_SSL_VERIFYPEER, 1L);
  SET(CURLOPT_SSL_VERIFYHOST, 2L);
  if (x->h->ca_file) SET(CURLOPT_CAINFO, x->h->ca_file);
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  /* Over TLS, a new transfer waits for the handshake of a connection
  ** being made to learn (ALPN) whether it multiplexes (HTTP/2) rather than
  ** opening one more. Never over plain HTTP: there nothing is learnt
  ** before the first response, so every other transfer would wait for it
  ** and concurrent calls on a fresh client would run one at a time. */
  if (strncasecmp(req->url, "https:", 6) == 0 && !req->connect_only) SET(CURLOPT_PIPEWAIT, 1L);
  if (req->connect_only) {
    /* the caller's own protocol follows on the connection: HTTP/1.1's
    ** upgrade, so ALPN must not agree on HTTP/2 */
    SET(CURLOPT_CONNECT_ONLY, 1L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (req->verbose) SET(CURLOPT_VERBOSE, 1L);
  }
  if (req->large) SET(CURLOPT_BUFFERSIZE, RECEIVE_BUFFER);
  SET(CURLOPT_USERAGENT, "unsandbox-lua");
  SET(CURLOPT_HTTPHEADER, x->headers);
  if (req->has_body_fd) {
    /* the file's bytes as libcurl asks for them, in pieces of its upload
    ** buffer (made large: a read and a send per 512 KiB, not per 64) */
    SET(CURLOPT_UPLOAD, 1L);
    SET(CURLOPT_CUSTOMREQUEST, req->method);
    SET(CURLOPT_READFUNCTION, on_read);
    SET(CURLOPT_READDATA, x);
    SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_fd_len);
    SET(CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFFER);
  } else if (strcmp(req->method, "GET") == 0 && !req->body) {
    SET(CURLOPT_HTTPGET, 1L);
  } else if (strcmp(req->method, "HEAD") == 0) {
    SET(CURLOPT_NOBODY, 1L);
  } else {
    SET(CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body || body_method(req->method)) {
      /* the exact bytes, with a Content-Length: never chunked */
      SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
      SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }
  }
#undef SET
  return bad ? -1 : 0;
}

int unsb_xfer_setup(unsb_http_xfer *x, const unsb_http_request *req, unsb_error *err) {
  url_host(x->h, req->url, x->host, sizeof x->host);
  x->timeout_ms = req->timeout_ms;
  x->max = x->h->max_response;
  x->resp.retry_after = -1;
  if (req->stream) {
    x->stream = *req->stream;
    x->has_stream = 1;
  }
  x->connect_only = req->connect_only;
  x->body_fd = req->has_body_fd ? req->body_fd : -1;
  x->n_capture = req->n_capture;
  for (size_t i = 0; i < req->n_capture; i++)
    snprintf(x->capture[i], UNSB_HTTP_NAME_MAX, "%s", req->capture[i]);
  if (!(x->headers = build_headers(req))) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  if (set_options(x, req) != 0) return unsb_fail(err, UNSB_ETRANSPORT, "libcurl refused an option");
  return 0;
}

/* ---------------------------------------------------------------------
** errors
** ------------------------------------------------------------------- */

int unsb_xfer_fail(const unsb_http_xfer *x, int rc, unsb_error *err) {
  const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror((CURLcode)rc);
  if (x->cancelled) return unsb_fail(err, UNSB_ECANCELLED, "request to %s cancelled", x->host);
  if (x->queue_timeout)
    return unsb_fail(err, UNSB_ETIMEOUT,
                     "request to %s timed out after %ld ms waiting for one of the client's "
                     "%d transfer slots (max_concurrency); nothing was sent",
                     x->host, x->timeout_ms, x->h->cap);
  if (x->too_big)
    return unsb_fail(err, UNSB_EPROTOCOL,
                     "response from %s is larger than max_response (%zu bytes); refused",
                     x->host, x->max);
  if (x->oom)
    return unsb_fail(err, UNSB_ENOMEM, "out of memory reading a response from %s", x->host);
  if (x->read_failed)
    return unsb_fail(err, UNSB_EIO, "cannot read the body sent to %s: %s", x->host,
                     strerror(x->read_errno));
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return unsb_fail(err, UNSB_ETIMEOUT, "request to %s timed out after %ld ms (%s)",
                       x->host, x->timeout_ms, detail);
    case CURLE_URL_MALFORMAT:
      return unsb_fail(err, UNSB_EVALIDATION, "bad URL for host %s: %s", x->host, detail);
    /* the URL's scheme was checked before (http/https only), so these
    ** come from the peer's bytes: an HTTP/0.9 reply, a mangled status line */
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_WEIRD_SERVER_REPLY:
      return unsb_fail(err, UNSB_EPROTOCOL, "malformed response from %s: %s", x->host, detail);
    /* what a new user meets first, with what to do about it */
    case CURLE_SSL_CONNECT_ERROR:
      return unsb_fail(err, UNSB_ETRANSPORT, "TLS handshake with %s failed (%s); if that server "
                       "speaks plain HTTP (a local unsandboxd does), use an http:// URL",
                       x->host, detail);
    case CURLE_COULDNT_CONNECT:
      return unsb_fail(err, UNSB_ETRANSPORT, "nothing accepted the connection to %s (%s): is the "
                       "server running, and is this its port? (a local one: un local status)",
                       x->host, detail);
    default:
      return unsb_fail(err, UNSB_ETRANSPORT, "transport error talking to %s: %s (%s)",
                       x->host, curl_easy_strerror((CURLcode)rc), detail);
  }
}

/* ---------------------------------------------------------------------
** timing
** ------------------------------------------------------------------- */

static int64_t info_us(CURL *e, CURLINFO what) {
  curl_off_t v = 0;
  if (curl_easy_getinfo(e, what, &v) != CURLE_OK || v < 0) return 0;
  return (int64_t)v;
}

static int64_t gap(int64_t later, int64_t earlier) {
  return later > earlier ? later - earlier : 0;
}

/* libcurl's timers are cumulative from the transfer's start (each 0 when
** its phase did not happen); the parts are the gaps between them. */
void unsb_http_timing_of(const unsb_http_xfer *x, unsb_http_timing *t) {
  int64_t now = unsb_monotonic_us();
  memset(t, 0, sizeof *t);
  int64_t end = x->ended_us ? x->ended_us : now;
  t->first_data_us = x->first_data_us ? x->first_data_us - x->opened_us : -1;
  t->queue_us = (x->started_us ? x->started_us : end) - x->opened_us;
  /* our own clock from open to end: it spans libcurl's, so the parts fit */
  t->total_us = end - x->opened_us;
  if (!x->started_us) return;
  CURL *e = x->easy;
  int64_t nl = info_us(e, CURLINFO_NAMELOOKUP_TIME_T), c = info_us(e, CURLINFO_CONNECT_TIME_T);
  int64_t a = info_us(e, CURLINFO_APPCONNECT_TIME_T), p = info_us(e, CURLINFO_PRETRANSFER_TIME_T);
  int64_t s = info_us(e, CURLINFO_STARTTRANSFER_TIME_T), all = info_us(e, CURLINFO_TOTAL_TIME_T);
  t->resolve_us = nl;
  t->connect_us = gap(c, nl);
  t->tls_us = a ? gap(a, c) : 0;
  t->server_us = s ? gap(s, p) : 0;
  t->transfer_us = s ? gap(all, s) : 0;
  if (!x->done) t->transfer_us = s ? gap(now - x->started_us, s) : 0;
  long reqsize = 0, hdrsize = 0, conns = 0;
  curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &reqsize);
  curl_easy_getinfo(e, CURLINFO_HEADER_SIZE, &hdrsize);
  curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns);
  t->bytes_out = (uint64_t)reqsize + (uint64_t)info_us(e, CURLINFO_SIZE_UPLOAD_T);
  t->bytes_in = (uint64_t)hdrsize + (uint64_t)info_us(e, CURLINFO_SIZE_DOWNLOAD_T);
  t->new_connections = conns;
  t->sent = reqsize > 0;
}
