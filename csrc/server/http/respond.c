/*
** Turning a finished ux_reply (or an opened stream) into a libmicrohttpd
** response, and the one log line per request. Runs on libmicrohttpd's
** event threads, so it only wraps buffers the handler thread already
** serialised (exchange.c) and never blocks. The transport's own errors
** (503 when busy or stopping) are built here and never touch the reply a
** still-running handler may be writing.
*/
#include "server/http/http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/fsutil.h"
#include "server/mem.h"

void ux_log_request(const char *method, const char *path, int status, long ms, const char *rid) {
  char clean[201];
  size_t i = 0;
  for (; path[i] && i < 200; i++)         /* no control bytes into the log */
    clean[i] = ((unsigned char)path[i] < 0x20 || path[i] == 0x7f) ? '?' : path[i];
  clean[i] = '\0';
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(stderr, "%s %s %s %d %ldms %s\n", stamp, method, clean, status, ms, rid);
}

/* The "drop" fault: declare the whole length, send half, then fail. */
typedef struct dropper { char *buf; size_t len; } dropper;

static ssize_t drop_reader(void *cls, uint64_t pos, char *out, size_t max) {
  dropper *d = cls;
  size_t half = d->len / 2;
  if (pos >= half) return MHD_CONTENT_READER_END_WITH_ERROR;
  size_t n = half - (size_t)pos < max ? half - (size_t)pos : max;
  memcpy(out, d->buf + pos, n);
  return (ssize_t)n;
}

static void drop_free(void *cls) {
  dropper *d = cls;
  ux_mem_reply_done(d->buf);
  free(d);
}

/* A body goes back through ux_mem_reply_done once sent: a long one's
** buffer is kept for the next long reply or its memory returned (mem.h). */
static void body_free(void *body) { ux_mem_reply_done(body); }

/* A response owning `body` (malloc'd, len bytes), or NULL (body freed). */
static struct MHD_Response *from_body(char *body, size_t len, int drop) {
  struct MHD_Response *resp;
  if (drop) {
    dropper *d = ux_xmalloc(sizeof *d);
    d->buf = body;
    d->len = len;
    resp = MHD_create_response_from_callback(len, 4096, drop_reader, d, drop_free);
    if (!resp) drop_free(d);
    return resp;
  }
  resp = MHD_create_response_from_buffer_with_free_callback(len, body, body_free);
  if (!resp) body_free(body);
  return resp;
}

static int add(struct MHD_Response *resp, const char *name, const char *value) {
  if (MHD_add_response_header(resp, name, value) == MHD_YES) return 0;
  fprintf(stderr, "unsandboxd: response header %s refused\n", name);
  return -1;
}

/* Headers every response of x carries. */
static void common_headers(struct MHD_Response *resp, ux_http *h, ux_xchg *x, int retry_after) {
  add(resp, "X-Request-Id", x->request_id);
  if (retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", retry_after);
    add(resp, "Retry-After", ra);
  }
  /* a draining server lets clients know not to reuse the connection;
  ** a handler may ask for the same (ux_reply.close) */
  if (!x->upgrade && (x->req.stopping || h->stopping || x->req.reply.close))
    add(resp, "Connection", "close");
}

static enum MHD_Result queue(struct MHD_Connection *c, struct MHD_Response *resp, int status,
                             ux_xchg *x) {
  enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
  MHD_destroy_response(resp);
  ux_log_request(x->req.method, x->req.path, status, ux_now_ms() - x->t0, x->request_id);
  return rc;
}

/* A source's bytes as libmicrohttpd asks for them (ux_reply_source). */
static ssize_t source_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  ux_source *src = cls;
  ssize_t n = src->read(src->ctx, pos, buf, max);
  return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void source_free(void *cls) {
  ux_source *src = cls;
  if (src->freer) src->freer(src->ctx);
  free(src);
}

/* The response of a source; takes it. */
static struct MHD_Response *from_source(ux_source *src) {
  struct MHD_Response *resp =
    MHD_create_response_from_callback(src->length, UX_HTTP_SOURCE_BLOCK, source_reader, src, source_free);
  if (!resp) source_free(src);
  return resp;
}

/* The response of a plain (not streamed) reply; takes its body. */
static struct MHD_Response *plain(ux_reply *rep) {
  if (rep->source) {
    ux_source *src = rep->source;
    rep->source = NULL;
    return from_source(src);
  }
  if (rep->empty || (!rep->raw && !rep->json))
    return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  char *body = rep->raw;
  size_t len = rep->raw_len;
  if (body) rep->raw = NULL;
  else body = ux_json_dump(rep->json, &len);    /* replies set by admit hooks */
  if (!body) return NULL;
  return from_body(body, len, rep->drop);
}

enum MHD_Result ux_respond(ux_http *h, ux_xchg *x, struct MHD_Connection *c) {
  ux_reply *rep = &x->req.reply;
  int status = rep->status ? rep->status : 500;
  struct MHD_Response *resp = x->upgrade ? ux_upgrade_response(x)
                             : x->stream_open ? ux_stream_response(x) : plain(rep);
  if (!resp) return MHD_NO;
  if (!x->upgrade && (!rep->empty || rep->content_type))
    add(resp, "Content-Type", rep->content_type ? rep->content_type : "application/json");
  common_headers(resp, h, x, rep->retry_after);
  if (rep->allow[0]) add(resp, "Allow", rep->allow);
  for (size_t i = 0; i < rep->nheaders; i++) add(resp, rep->headers[i].name, rep->headers[i].value);
  return queue(c, resp, status, x);
}

enum MHD_Result ux_respond_error(ux_http *h, ux_xchg *x, struct MHD_Connection *c,
                                 int status, const char *code, const char *msg) {
  json_t *j = json_object();
  if (!j) return MHD_NO;
  json_object_set_new(j, "error", json_string(code));
  json_object_set_new(j, "message", json_string(msg));
  size_t len;
  char *body = ux_json_dump(j, &len);
  json_decref(j);
  if (!body) return MHD_NO;
  struct MHD_Response *resp = from_body(body, len, 0);
  if (!resp) return MHD_NO;
  add(resp, "Content-Type", "application/json");
  common_headers(resp, h, x, status == 503 ? 1 : 0);
  return queue(c, resp, status, x);
}
