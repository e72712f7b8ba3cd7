/*
** HTTP engine on libcurl (see http.h): the multi handle, the list of open
** transfers, and the rounds that drive them. What happens to one
** transfer's bytes is http_xfer.c's.
**
** A blocking call is a transfer like any other (open, rounds until it is
** done, close), so streams a caller holds open keep flowing while it
** waits. Nothing here runs inside a libcurl callback except what those
** callbacks themselves do; `in_curl` marks the inside, and every entry
** point refuses to run there ("busy"), because libcurl may not be
** re-entered from its own callbacks.
*/
#include "core/http.h"
#include "core/http_xfer.h"
#include "core/clock.h"
#include "core/interrupt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------------
** the engine
** ------------------------------------------------------------------- */

unsb_http *unsb_http_new(const unsb_http_config *cfg, unsb_error *err) {
  unsb_http *h;
  if (unsb_http_global_init() != 0) {
    unsb_fail(err, UNSB_ETRANSPORT, "libcurl initialisation failed");
    return NULL;
  }
  h = calloc(1, sizeof *h);
  if (!h) { unsb_fail(err, UNSB_ENOMEM, "out of memory"); return NULL; }
  h->multi = curl_multi_init();
  h->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
  if (!h->multi || (cfg->ca_file && !h->ca_file)) {
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
  while (h->open) unsb_http_close(h->open);
  for (int i = 0; i < h->n_idle; i++) curl_easy_cleanup(h->idle[i]);
  if (h->multi) curl_multi_cleanup(h->multi);
  free(h->ca_file);
  free(h);
}

void unsb_http_response_free(unsb_http_response *resp) {
  if (!resp) return;
  free(resp->body);
  free(resp->request_id);
  free(resp->content_type);
  for (size_t i = 0; i < UNSB_HTTP_CAPTURE_MAX; i++) free(resp->captured[i]);
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
}

static int busy(unsb_error *err) {
  return unsb_fail(err, UNSB_EVALIDATION,
                   "the HTTP engine is busy: a request from inside a transfer's callback");
}

/* CR or LF in a header line would let a value start a new header. */
static int check_request(const unsb_http_request *req, unsb_error *err) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (!req->headers[i] || strpbrk(req->headers[i], "\r\n"))
      return unsb_fail(err, UNSB_EVALIDATION, "header line %zu contains CR or LF", i + 1);
  if (req->stream && !req->stream->on_data)
    return unsb_fail(err, UNSB_EVALIDATION, "a streamed request needs on_data");
  if (req->n_capture > UNSB_HTTP_CAPTURE_MAX)
    return unsb_fail(err, UNSB_EVALIDATION, "at most %d response headers can be kept",
                     UNSB_HTTP_CAPTURE_MAX);
  for (size_t i = 0; i < req->n_capture; i++)
    if (!req->capture[i] || !req->capture[i][0] || strlen(req->capture[i]) >= UNSB_HTTP_NAME_MAX)
      return unsb_fail(err, UNSB_EVALIDATION, "response header name %zu is empty or too long", i + 1);
  return 0;
}

/* ---------------------------------------------------------------------
** transfers
** ------------------------------------------------------------------- */

unsb_http_xfer *unsb_http_open(unsb_http *h, const unsb_http_request *req, unsb_error *err) {
  unsb_http_xfer *x;
  if (h->in_curl) { busy(err); return NULL; }
  if (check_request(req, err) != 0) return NULL;
  if (!(x = calloc(1, sizeof *x))) { unsb_fail(err, UNSB_ENOMEM, "out of memory"); return NULL; }
  x->h = h;
  x->easy = h->n_idle > 0 ? h->idle[--h->n_idle] : curl_easy_init();
  /* linked first, so unsb_http_close can undo any step below */
  x->next = h->open;
  if (h->open) h->open->prev = x;
  h->open = x;
  if (!x->easy) {
    unsb_fail(err, UNSB_ETRANSPORT, "cannot create a libcurl handle");
  } else if (unsb_xfer_setup(x, req, err) == 0) {
    if (curl_multi_add_handle(h->multi, x->easy) == CURLM_OK) {
      x->in_multi = 1;
      return x;
    }
    unsb_fail(err, UNSB_ETRANSPORT, "libcurl refused the transfer");
  }
  unsb_http_close(x);
  return NULL;
}

/* Marks the transfers libcurl reports finished and takes them out of the
** multi handle (their connections go back to its pool). */
static void collect(unsb_http *h) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(h->multi, &left))) {
    unsb_http_xfer *x = NULL;
    CURL *easy = m->easy_handle;
    int rc = m->data.result;
    if (m->msg != CURLMSG_DONE) continue;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    if (!x) continue;
    x->done = 1;
    x->rc = rc;
    curl_multi_remove_handle(h->multi, easy);   /* m is invalid from here */
    x->in_multi = 0;
  }
}

int unsb_http_pump(unsb_http *h, unsb_error *err) {
  int running;
  CURLMcode mc;
  if (h->in_curl) return busy(err);
  h->in_curl = 1;
  mc = curl_multi_perform(h->multi, &running);
  h->in_curl = 0;
  if (mc != CURLM_OK)
    return unsb_fail(err, UNSB_ETRANSPORT, "libcurl: %s", curl_multi_strerror(mc));
  collect(h);
  return 0;
}

void unsb_http_wait(unsb_http *h, long ms) {
  if (h->in_curl || !h->open || ms <= 0) return;
  curl_multi_poll(h->multi, NULL, 0, (int)ms, NULL);
}

int unsb_http_done(const unsb_http_xfer *x) { return x->done; }

void unsb_http_resume(unsb_http_xfer *x) {
  if (!x->paused || x->done || x->h->in_curl) return;
  x->paused = 0;
  /* libcurl hands the held bytes to on_body from inside this call */
  x->h->in_curl = 1;
  curl_easy_pause(x->easy, CURLPAUSE_CONT);
  x->h->in_curl = 0;
}

int unsb_http_result(unsb_http_xfer *x, unsb_http_response *resp, unsb_error *err) {
  char *ctype = NULL;
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
  if (!x->done) return unsb_fail(err, UNSB_EVALIDATION, "the transfer has not ended yet");
  if (x->rc != CURLE_OK || x->oom) return unsb_xfer_fail(x, x->rc, err);
  *resp = x->resp;
  memset(&x->resp, 0, sizeof x->resp);
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp->status);
  curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &resp->new_connections);
  if (curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
    resp->content_type = strdup(ctype);
  if (!resp->body) resp->body = calloc(1, 1);   /* always a string, maybe empty */
  if (!resp->body || (ctype && !resp->content_type)) {
    unsb_http_response_free(resp);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}

void unsb_http_close(unsb_http_xfer *x) {
  unsb_http *h;
  if (!x) return;
  h = x->h;
  /* removing a running transfer aborts it and closes its connection */
  if (x->in_multi) curl_multi_remove_handle(h->multi, x->easy);
  if (x->prev) x->prev->next = x->next;
  else h->open = x->next;
  if (x->next) x->next->prev = x->prev;
  if (x->easy) {
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
    if (h->n_idle < UNSB_HTTP_IDLE_EASY) h->idle[h->n_idle++] = x->easy;
    else curl_easy_cleanup(x->easy);
  }
  curl_slist_free_all(x->headers);
  unsb_http_response_free(&x->resp);
  free(x);
}

/* ---------------------------------------------------------------------
** the blocking call
** ------------------------------------------------------------------- */

/* Drives the engine until x ends, the stream's tick cancels or the
** interrupt flag is raised. 0 when x is done, else -1 with err. */
static int drive(unsb_http *h, unsb_http_xfer *x, unsb_error *err) {
  for (;;) {
    if (unsb_http_pump(h, err) != 0) return -1;
    if (x->done) return 0;
    /* right after each round, outside any libcurl callback: the tick can
    ** hand what on_data queued to code that may not run inside libcurl */
    if (x->has_stream && x->stream.on_tick && x->stream.on_tick(x->stream.ud) != 0) {
      x->cancelled = 1;
      return unsb_xfer_fail(x, 0, err);
    }
    unsb_http_wait(h, UNSB_SLICE_MS);
    if (unsb_interrupt_take())
      return unsb_fail(err, UNSB_EINTERRUPTED, "request to %s interrupted", x->host);
  }
}

int unsb_http_perform(unsb_http *h, const unsb_http_request *req,
                      unsb_http_response *resp, unsb_error *err) {
  unsb_http_xfer *x;
  int rc;
  memset(resp, 0, sizeof *resp);
  resp->retry_after = -1;
  if (h->in_curl) return busy(err);
  if (check_request(req, err) != 0) return -1;
  if (!(x = unsb_http_open(h, req, err))) return -1;
  if (unsb_interrupt_take()) {
    rc = unsb_fail(err, UNSB_EINTERRUPTED, "request to %s interrupted", x->host);
  } else {
    rc = drive(h, x, err);
    if (rc == 0) rc = unsb_http_result(x, resp, err);
  }
  unsb_http_close(x);
  return rc;
}
