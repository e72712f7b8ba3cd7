/*
** HTTP engine on libcurl (see http.h). Buffered and streamed transfers
** share one path: the body callback either appends to the response or
** hands the bytes to the caller's stream, decided once when the headers
** are complete.
*/
#include "core/http.h"
#include "core/clock.h"
#include "core/headers.h"
#include "core/interrupt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <curl/curl.h>

#define HEADER_VALUE_MAX 256    /* request ids are short; cap what we keep */

struct unsb_http {
  CURLM *multi;
  CURL *easy;                   /* reused: its connections stay in the multi */
  long connect_timeout_ms;
  char *ca_file;
  size_t max_response;
  int busy;                     /* a transfer is running (callbacks may not start one) */
};

/* ---------------------------------------------------------------------
** process-wide initialisation
** ------------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int unsb_http_global_init(void) {
  pthread_once(&global_once, global_init);
  return global_rc == CURLE_OK ? 0 : -1;
}

unsb_http *unsb_http_new(const unsb_http_config *cfg, unsb_error *err) {
  unsb_http *h;
  if (unsb_http_global_init() != 0) {
    unsb_fail(err, UNSB_ETRANSPORT, "libcurl initialisation failed");
    return NULL;
  }
  h = calloc(1, sizeof *h);
  if (!h) { unsb_fail(err, UNSB_ENOMEM, "out of memory"); return NULL; }
  h->multi = curl_multi_init();
  h->easy = curl_easy_init();
  h->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
  if (!h->multi || !h->easy || (cfg->ca_file && !h->ca_file)) {
    unsb_http_free(h);
    unsb_fail(err, UNSB_ETRANSPORT, "cannot create a libcurl handle");
    return NULL;
  }
  h->connect_timeout_ms = cfg->connect_timeout_ms;
  h->max_response = cfg->max_response;
  return h;
}

void unsb_http_free(unsb_http *h) {
  if (!h) return;
  /* the easy handle is never left in the multi between calls */
  if (h->easy) curl_easy_cleanup(h->easy);
  if (h->multi) curl_multi_cleanup(h->multi);
  free(h->ca_file);
  free(h);
}

void unsb_http_response_free(unsb_http_response *resp) {
  if (!resp) return;
  free(resp->body);
  free(resp->request_id);
  free(resp->content_type);
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
}

/* ---------------------------------------------------------------------
** callbacks
** ------------------------------------------------------------------- */

typedef struct {
  unsb_http_response *resp;
  size_t cap;
  size_t max;
  int too_big;
  int oom;                          /* an allocation in a callback failed */
  CURL *easy;
  const unsb_http_stream *stream;   /* NULL = buffered transfer */
  int head_done;                    /* the final response's headers were seen */
  int streaming;                    /* body goes to stream->on_data */
  int cancelled;                    /* a stream callback said stop */
} transfer;

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  unsb_http_response *r = t->resp;
  size_t len = size * n;
  if (t->streaming) {
    if (t->stream->on_data(t->stream->ud, data, len) != 0) {
      t->cancelled = 1;
      return 0;                       /* aborts the transfer */
    }
    r->streamed += len;
    return len;
  }
  if (len > t->max - r->body_len) {   /* abort: the cap is a refusal, not a cut */
    t->too_big = 1;
    return 0;
  }
  if (r->body_len + len + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 16384;
    while (cap < r->body_len + len + 1) cap *= 2;
    char *b = realloc(r->body, cap);
    if (!b) { t->oom = 1; return 0; }
    r->body = b;
    t->cap = cap;
  }
  memcpy(r->body + r->body_len, data, len);
  r->body_len += len;
  r->body[r->body_len] = '\0';
  return len;
}

/* The blank line after the final response's headers: the stream decides
** what happens to the body. Returns 0 to go on, -1 to cancel. */
static int end_of_head(transfer *t) {
  long status = 0;
  char *ctype = NULL;
  int mode;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || t->head_done) return 0;     /* 1xx, or trailers */
  t->head_done = 1;
  curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ctype);
  if (t->stream->on_head) mode = t->stream->on_head(t->stream->ud, status, ctype);
  else mode = status >= 200 && status < 300 ? UNSB_HTTP_STREAM : UNSB_HTTP_BUFFER;
  if (mode == UNSB_HTTP_CANCEL) {
    t->cancelled = 1;
    return -1;
  }
  t->streaming = mode == UNSB_HTTP_STREAM;
  return 0;
}

static size_t on_header(char *line, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  unsb_http_response *r = t->resp;
  size_t len = size * n, vlen;
  const char *v;
  if (t->stream && (len == 2 || len == 1) && (line[0] == '\r' || line[0] == '\n')) {
    if (end_of_head(t) != 0) return 0;   /* aborts the transfer */
  } else if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
    /* a new response (after a 100 Continue): forget the previous headers */
    free(r->request_id);
    r->request_id = NULL;
    r->retry_after = -1;
  } else if ((v = unsb_header_value(line, len, "X-Request-Id", &vlen))) {
    free(r->request_id);
    r->request_id = strndup(v, vlen < HEADER_VALUE_MAX ? vlen : HEADER_VALUE_MAX);
    if (!r->request_id) t->oom = 1;
  } else if ((v = unsb_header_value(line, len, "Retry-After", &vlen))) {
    r->retry_after = unsb_retry_after(v, vlen, (int64_t)time(NULL));
  }
  return len;
}

/* ---------------------------------------------------------------------
** one transfer
** ------------------------------------------------------------------- */

static void url_host(const char *url, char *out, size_t size) {
  CURLU *u = curl_url();
  char *host = NULL;
  snprintf(out, size, "(unknown host)");
  if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
    snprintf(out, size, "%s", host);
  curl_free(host);
  curl_url_cleanup(u);
}

static int has_header(const unsb_http_request *req, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = 0; i < req->n_headers; i++)
    if (strncasecmp(req->headers[i], name, nl) == 0 && req->headers[i][nl] == ':') return 1;
  return 0;
}

/* CR or LF in a header line would let a value start a new header. */
static int check_headers(const unsb_http_request *req, unsb_error *err) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (!req->headers[i] || strpbrk(req->headers[i], "\r\n"))
      return unsb_fail(err, UNSB_EVALIDATION, "header line %zu contains CR or LF", i + 1);
  return 0;
}

static struct curl_slist *build_headers(const unsb_http_request *req, int body_method) {
  struct curl_slist *list = NULL, *next;
  /* no "Expect: 100-continue" round trip before large bodies */
  const char *fixed[2] = {"Expect:", NULL};
  if (!has_header(req, "Content-Type")) {
    if (req->body && req->body_len > 0) fixed[1] = "Content-Type: application/json";
    else if (body_method) fixed[1] = "Content-Type:";  /* drop curl's form type */
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

static int setup(unsb_http *h, const unsb_http_request *req, transfer *t,
                 struct curl_slist *headers, char *errbuf, int body_method) {
  CURL *e = h->easy;
  int bad = 0;
#define SET(opt, val) (bad |= curl_easy_setopt(e, opt, val) != CURLE_OK)
  curl_easy_reset(e);
  SET(CURLOPT_URL, req->url);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
  SET(CURLOPT_ERRORBUFFER, errbuf);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  SET(CURLOPT_WRITEDATA, t);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, t);
  SET(CURLOPT_TIMEOUT_MS, req->timeout_ms);
  SET(CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
  SET(CURLOPT_SSL_VERIFYPEER, 1L);
  SET(CURLOPT_SSL_VERIFYHOST, 2L);
  if (h->ca_file) SET(CURLOPT_CAINFO, h->ca_file);
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  SET(CURLOPT_USERAGENT, "unsandbox-lua");
  SET(CURLOPT_HTTPHEADER, headers);
  if (strcmp(req->method, "GET") == 0 && !req->body) {
    SET(CURLOPT_HTTPGET, 1L);
  } else if (strcmp(req->method, "HEAD") == 0) {
    SET(CURLOPT_NOBODY, 1L);
  } else {
    SET(CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body || body_method) {
      /* the exact bytes, with a Content-Length: never chunked */
      SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
      SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }
  }
#undef SET
  return bad ? -1 : 0;
}

#define DRIVE_INTERRUPTED (-1)
#define DRIVE_CANCELLED (-2)

/* Drives the multi handle until the transfer ends; CURLE_OK or its code,
** DRIVE_INTERRUPTED or DRIVE_CANCELLED (by the stream's tick). */
static int drive(unsb_http *h, const unsb_http_stream *stream) {
  int running = 1;
  for (;;) {
    if (curl_multi_perform(h->multi, &running) != CURLM_OK) return CURLE_FAILED_INIT;
    if (!running) break;
    /* right after each round, outside any libcurl callback: the tick can
    ** hand what on_data queued to code that may not run inside libcurl */
    if (stream && stream->on_tick && stream->on_tick(stream->ud) != 0) return DRIVE_CANCELLED;
    if (curl_multi_poll(h->multi, NULL, 0, UNSB_SLICE_MS, NULL) != CURLM_OK)
      return CURLE_FAILED_INIT;
    if (unsb_interrupt_take()) return DRIVE_INTERRUPTED;
  }
  int left;
  CURLMsg *m;
  while ((m = curl_multi_info_read(h->multi, &left)))
    if (m->msg == CURLMSG_DONE && m->easy_handle == h->easy) return m->data.result;
  return CURLE_FAILED_INIT;
}

static int map_error(int rc, const transfer *t, const unsb_http_request *req,
                     const char *errbuf, unsb_error *err) {
  char host[256];
  const char *detail = errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)rc);
  url_host(req->url, host, sizeof host);
  if (rc == DRIVE_INTERRUPTED)
    return unsb_fail(err, UNSB_EINTERRUPTED, "request to %s interrupted", host);
  if (rc == DRIVE_CANCELLED || t->cancelled)
    return unsb_fail(err, UNSB_ECANCELLED, "request to %s cancelled", host);
  if (t->oom) return unsb_fail(err, UNSB_ENOMEM, "out of memory reading a response from %s", host);
  if (t->too_big)
    return unsb_fail(err, UNSB_EPROTOCOL,
                     "response from %s is larger than max_response (%zu bytes); refused",
                     host, t->max);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return unsb_fail(err, UNSB_ETIMEOUT, "request to %s timed out after %ld ms (%s)",
                       host, req->timeout_ms, detail);
    case CURLE_URL_MALFORMAT:
      return unsb_fail(err, UNSB_EVALIDATION, "bad URL for host %s: %s", host, detail);
    /* the URL's scheme was checked before (http/https only), so these
    ** come from the peer's bytes: an HTTP/0.9 reply, a mangled status line */
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_WEIRD_SERVER_REPLY:
      return unsb_fail(err, UNSB_EPROTOCOL, "malformed response from %s: %s", host, detail);
    default:
      return unsb_fail(err, UNSB_ETRANSPORT, "transport error talking to %s: %s (%s)",
                       host, curl_easy_strerror((CURLcode)rc), detail);
  }
}

/* Adds the prepared transfer, drives it to its end and removes it again
** (mid-transfer, that closes its connection). 0 with *rc = a CURLcode or
** DRIVE_*, or -1 with err when the transfer could not be set up. */
static int run(unsb_http *h, const unsb_http_request *req, transfer *t, char *errbuf,
               int body_method, int *rc, unsb_error *err) {
  struct curl_slist *headers = build_headers(req, body_method);
  if (!headers) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  if (setup(h, req, t, headers, errbuf, body_method) != 0) {
    curl_slist_free_all(headers);
    return unsb_fail(err, UNSB_ETRANSPORT, "libcurl refused an option");
  }
  if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK) {
    curl_slist_free_all(headers);
    return unsb_fail(err, UNSB_ETRANSPORT, "libcurl refused the transfer");
  }
  h->busy = 1;
  *rc = drive(h, req->stream);
  curl_multi_remove_handle(h->multi, h->easy);
  h->busy = 0;
  curl_slist_free_all(headers);
  return 0;
}

int unsb_http_perform(unsb_http *h, const unsb_http_request *req,
                      unsb_http_response *resp, unsb_error *err) {
  char errbuf[CURL_ERROR_SIZE];
  transfer t = {resp, 0, h->max_response, 0, 0, h->easy, req->stream, 0, 0, 0};
  int body_method = strcmp(req->method, "POST") == 0 || strcmp(req->method, "PUT") == 0 ||
                    strcmp(req->method, "PATCH") == 0;
  int rc = CURLE_FAILED_INIT;

  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
  errbuf[0] = '\0';
  if (h->busy)
    return unsb_fail(err, UNSB_EVALIDATION,
                     "the HTTP engine is busy with another transfer (a request from a stream callback?)");
  if (check_headers(req, err) != 0) return -1;
  if (req->stream && !req->stream->on_data)
    return unsb_fail(err, UNSB_EVALIDATION, "a streamed request needs on_data");
  if (unsb_interrupt_take()) {
    char host[256];
    url_host(req->url, host, sizeof host);
    return unsb_fail(err, UNSB_EINTERRUPTED, "request to %s interrupted", host);
  }
  if (run(h, req, &t, errbuf, body_method, &rc, err) != 0) return -1;
  if (rc != CURLE_OK) {
    map_error(rc, &t, req, errbuf, err);
    unsb_http_response_free(resp);
    return -1;
  }
  char *ctype = NULL;
  curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &resp->status);
  curl_easy_getinfo(h->easy, CURLINFO_NUM_CONNECTS, &resp->new_connections);
  if (curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
    resp->content_type = strdup(ctype);
  if (!resp->body) resp->body = calloc(1, 1);   /* always a string, maybe empty */
  if (!resp->body || (ctype && !resp->content_type)) {
    unsb_http_response_free(resp);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}
