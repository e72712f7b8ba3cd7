/*
** HTTP on libmicrohttpd, one thread per connection: handlers may block
** (POST /execute waits up to --sync-ms, session shells wait for their
** command), which a thread per connection tolerates without starving
** other clients. What bounds it:
**   - MHD_OPTION_CONNECTION_LIMIT: at most UX_MAX_CONNECTIONS threads;
**   - MHD_OPTION_CONNECTION_TIMEOUT: an idle or trickling (slowloris)
**     connection is closed after UX_IDLE_TIMEOUT_S without progress;
**   - MHD_OPTION_CONNECTION_MEMORY_LIMIT: the request line and headers
**     must fit in UX_CONN_MEMORY, so a header flood gets an error reply
**     from libmicrohttpd itself (431) instead of growing memory;
**   - bodies are capped at --max-body: a declared Content-Length over the
**     cap is refused before reading; a chunked body is counted and
**     discarded once over it; both answer 413 payload_too_large.
** The path handed to routes is the raw one (no percent-decoding), which
** is exactly what the client signed.
*/
#include "server/http/http.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/http/reply.h"
#include "server/http/routes.h"

#define UX_MAX_CONNECTIONS 256
#define UX_IDLE_TIMEOUT_S 30
#define UX_CONN_MEMORY (64 * 1024)

/* How long shutdown waits for requests in flight to be answered. */
#define UX_DRAIN_MS 3000

struct ux_http {
  struct MHD_Daemon *d;
  ux_server *srv;
  /* requests begun and not yet completed: MHD_stop_daemon would drop a
  ** reply that is queued but not yet written, so shutdown waits for 0 */
  atomic_int inflight;
};

/* Per-request state kept in MHD's con_cls between callback calls. */
typedef struct pending {
  char *body;
  size_t len, cap;
  int too_big;
  long t0;
  char request_id[40];
} pending;

/* Keeps the path byte-for-byte as sent: signatures cover the raw path. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls; (void)c;
  return strlen(s);
}

static void log_line(const char *method, const char *path, int status, long ms, const char *rid) {
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
  free(d->buf);
  free(d);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, pending *p, ux_reply *rep,
                                  const char *method, const char *path) {
  char *body;
  size_t len;
  struct MHD_Response *resp;
  if (rep->raw) { body = rep->raw; len = rep->raw_len; rep->raw = NULL; }
  else body = ux_json_dump(rep->json, &len);
  if (!body) { body = strdup("{\"error\":\"internal_error\"}"); len = strlen(body); rep->status = 500; }
  if (rep->drop) {
    dropper *d = malloc(sizeof *d);
    d->buf = body;
    d->len = len;
    resp = MHD_create_response_from_callback(len, 4096, drop_reader, d, drop_free);
  } else {
    resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  }
  if (!resp) { free(body); return MHD_NO; }
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "X-Request-Id", p->request_id);
  if (rep->retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", rep->retry_after);
    MHD_add_response_header(resp, "Retry-After", ra);
  }
  if (rep->allow[0]) MHD_add_response_header(resp, "Allow", rep->allow);
  enum MHD_Result rc = MHD_queue_response(c, (unsigned)rep->status, resp);
  MHD_destroy_response(resp);
  log_line(method, path, rep->status, ux_now_ms() - p->t0, p->request_id);
  json_decref(rep->json);
  rep->json = NULL;
  return rc;
}

static enum MHD_Result too_big(struct MHD_Connection *c, pending *p, ux_server *srv,
                               const char *method, const char *path) {
  ux_req r;
  memset(&r, 0, sizeof r);
  ux_reply_error(&r, 413, "payload_too_large", "request body exceeds %zu bytes",
                 srv->cfg.max_body);
  return send_reply(c, p, &r.reply, method, path);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *data, size_t *data_size, void **con_cls) {
  (void)version;
  ux_http *h = cls;
  ux_server *srv = h->srv;
  pending *p = *con_cls;
  if (!p) {                                          /* headers are in */
    p = calloc(1, sizeof *p);
    if (!p) return MHD_NO;
    atomic_fetch_add(&h->inflight, 1);
    p->t0 = ux_now_ms();
    ux_random_id(p->request_id, sizeof p->request_id, "req_", 8);
    *con_cls = p;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > srv->cfg.max_body) {
      p->too_big = 1;
      return too_big(c, p, srv, method, url);        /* before reading the body */
    }
    return MHD_YES;
  }
  if (*data_size) {                                  /* a piece of the body */
    if (!p->too_big && p->len + *data_size > srv->cfg.max_body) {
      p->too_big = 1;
      free(p->body);
      p->body = NULL;
    }
    if (!p->too_big) {
      if (p->len + *data_size + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + *data_size + 1) cap *= 2;
        char *b = realloc(p->body, cap);
        if (!b) return MHD_NO;
        p->body = b;
        p->cap = cap;
      }
      memcpy(p->body + p->len, data, *data_size);
      p->len += *data_size;
      p->body[p->len] = '\0';
    }
    *data_size = 0;
    return MHD_YES;
  }
  if (p->too_big) return too_big(c, p, srv, method, url);

  ux_req r;
  memset(&r, 0, sizeof r);
  r.srv = srv;
  r.method = method;
  r.path = url;
  r.body = p->body ? p->body : "";
  r.body_len = p->len;
  r.request_id = p->request_id;
  r.sudo_challenge = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Sudo-Challenge");
  r.sudo_otp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Sudo-OTP");
  ux_route(&r, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
           MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Timestamp"),
           MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Signature"));
  return send_reply(c, p, &r.reply, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)c; (void)toe;
  ux_http *h = cls;
  pending *p = *con_cls;
  if (!p) return;
  atomic_fetch_sub(&h->inflight, 1);
  free(p->body);
  free(p);
  *con_cls = NULL;
}

/* Splits "HOST:PORT" / "[V6]:PORT" and resolves it numerically. */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, char *host, size_t hlen,
                        char *err, size_t errlen) {
  char buf[300], *port;
  snprintf(buf, sizeof buf, "%s", spec);
  char *h = buf;
  if (*h == '[') {
    char *end = strchr(h, ']');
    if (!end || end[1] != ':') goto bad;
    *end = '\0';
    h++;
    port = end + 2;
  } else {
    port = strrchr(h, ':');
    if (!port) goto bad;
    *port++ = '\0';
  }
  if (!*h || !*port || strspn(port, "0123456789") != strlen(port) || atol(port) > 65535) goto bad;
  struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai = NULL;
  if (getaddrinfo(h, port, &hints, &ai) != 0 || !ai) {
    snprintf(err, errlen, "cannot resolve listen address '%s'", spec);
    return -1;
  }
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  snprintf(host, hlen, "%s", h);
  return 0;
bad:
  snprintf(err, errlen, "bad --listen '%s' (want HOST:PORT or [IPV6]:PORT)", spec);
  return -1;
}

ux_http *ux_http_start(ux_server *srv, char *url, size_t urllen, char *err, size_t errlen) {
  struct sockaddr_storage ss;
  char host[300];
  memset(&ss, 0, sizeof ss);
  if (parse_listen(srv->cfg.listen, &ss, host, sizeof host, err, errlen) < 0) return NULL;
  int v6 = ss.ss_family == AF_INET6;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
  ux_http *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->srv = srv;
  atomic_init(&h->inflight, 0);
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)UX_MAX_CONNECTIONS,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)UX_IDLE_TIMEOUT_S,
                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)UX_CONN_MEMORY,
                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                          MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                          MHD_OPTION_END);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s (address in use or not permitted)", srv->cfg.listen);
    free(h);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  unsigned port = info ? info->port : 0;
  /* a wildcard address is reachable on loopback; print that */
  if (!strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
  if (!strcmp(host, "::")) snprintf(host, sizeof host, "::1");
  snprintf(url, urllen, v6 ? "http://[%s]:%u" : "http://%s:%u", host, port);
  return h;
}

void ux_http_quiesce(ux_http *h) {
  MHD_socket s = MHD_quiesce_daemon(h->d);
  if (s != MHD_INVALID_SOCKET) close(s);
}

void ux_http_stop(ux_http *h) {
  struct timespec tick = { 0, 10 * 1000000L };
  for (int waited = 0; atomic_load(&h->inflight) > 0 && waited < UX_DRAIN_MS; waited += 10)
    nanosleep(&tick, NULL);
  MHD_stop_daemon(h->d);
  free(h);
}
