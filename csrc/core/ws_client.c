/*
** The terminal connection (see ws_client.h). Everything libwebsockets
** reports arrives in one callback (ws_event) and only fills this
** object's state: queues of received and outgoing messages, the fds lws
** wants polled, the end of the connection and why. The public functions
** run lws, then read that state; nothing here calls back into the caller.
**
** lws 4.1 blocks in lws_service() until its next event, whatever timeout
** is passed, except for a negative one, which polls without waiting; and
** Debian builds it without LWS_WITH_EXTERNAL_POLL, so the ADD/DEL/
** CHANGE_MODE_POLL_FD callbacks never come. So unsb_ws_service() does the
** waiting itself: one poll() over the connection's socket
** (lws_get_socket_fd) and the caller's fd, then lws_service(ctx, -1) to
** handle what became ready with lws's own event masks. The socket is
** polled for what lws can want of it: input (unless reading is paused by
** flow control), output while messages are queued, a close is due or lws
** holds a partial send. lws's own timers (ping, close and connect
** timeouts) and the interrupt flag are served at least every 100 ms.
** During the handshake lws does not tell when it wants to write (the
** connect, the request): the socket is polled for input, which answers
** the reply at once, in 1 ms steps. TLS is set up only for wss: lws's
** global OpenSSL set-up and the system's CA store were most of an
** attach's time.
*/
#include "core/ws_client.h"

#include <errno.h>
#include <libwebsockets.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/interrupt.h"
#include "core/sign.h"
#include "core/ws_url.h"

#define MAX_FDS 8          /* lws's fd table: the socket and its own pipe */
#define HANDSHAKE_STEP_MS 1
#define SLICE_MS 100

typedef struct msg {
  struct msg *next;
  int text;
  size_t len;
  unsigned char data[];   /* outgoing: LWS_PRE bytes of room, then the payload */
} msg;

typedef struct {
  msg *head, *tail;
  size_t bytes;
} queue;

struct unsb_ws {
  struct lws_context *ctx;
  struct lws *wsi;              /* NULL once lws closed it */
  unsb_ws_target target;
  char host_header[UNSB_WS_HOST_MAX + 2];
  char auth[512];               /* "Bearer <public key>" */
  char ts[32];
  char sig[UNSB_SIGNATURE_HEX_LEN + 1];
  int established, ended, closing, close_sent, http_status, close_code;
  char close_reason[124];
  unsb_error fail;              /* kind != UNSB_OK: why it ended badly */
  queue rx, tx;
  size_t max_input;
  int rx_paused;
  char *text;                   /* a text message being assembled */
  size_t text_len;
};

/* ---- queues ---- */

static msg *msg_new(int text, const void *data, size_t len, size_t room) {
  msg *m = malloc(sizeof *m + room + len + 1);
  if (!m) return NULL;
  m->next = NULL;
  m->text = text;
  m->len = len;
  if (len) memcpy(m->data + room, data, len);
  m->data[room + len] = '\0';
  return m;
}

static void q_push(queue *q, msg *m) {
  if (q->tail) q->tail->next = m;
  else q->head = m;
  q->tail = m;
  q->bytes += m->len;
}

static msg *q_pop(queue *q) {
  msg *m = q->head;
  if (!m) return NULL;
  q->head = m->next;
  if (!q->head) q->tail = NULL;
  q->bytes -= m->len;
  return m;
}

static void q_free(queue *q) {
  msg *m;
  while ((m = q_pop(q))) free(m);
}

/* The first reason the connection failed is the one reported. */
__attribute__((format(printf, 3, 4)))
static void fail(unsb_ws *ws, unsb_kind kind, const char *fmt, ...) {
  va_list ap;
  if (ws->fail.kind != UNSB_OK) return;
  ws->fail.kind = kind;
  va_start(ap, fmt);
  vsnprintf(ws->fail.message, sizeof ws->fail.message, fmt, ap);
  va_end(ap);
}

/* ---- lws events ---- */

static int append_auth(unsb_ws *ws, struct lws *wsi, void *in, size_t len) {
  unsigned char **p = in, *end = *p + len;
  if (lws_add_http_header_by_name(wsi, (const unsigned char *)"authorization:",
                                  (const unsigned char *)ws->auth, (int)strlen(ws->auth), p, end) ||
      lws_add_http_header_by_name(wsi, (const unsigned char *)"x-timestamp:",
                                  (const unsigned char *)ws->ts, (int)strlen(ws->ts), p, end) ||
      lws_add_http_header_by_name(wsi, (const unsigned char *)"x-signature:",
                                  (const unsigned char *)ws->sig, (int)strlen(ws->sig), p, end)) {
    fail(ws, UNSB_ETRANSPORT, "terminal handshake: no room for the authentication headers");
    return -1;
  }
  return 0;
}

static void connection_error(unsb_ws *ws, struct lws *wsi, const void *in, size_t len) {
  char what[160];
  unsigned status = wsi ? lws_http_client_http_response(wsi) : 0;
  snprintf(what, sizeof what, "%.*s", in ? (int)(len < 150 ? len : 150) : 0,
           in ? (const char *)in : "");
  if (status && status != 101) {
    ws->http_status = (int)status;
    fail(ws, UNSB_ETRANSPORT, "%s answered the upgrade with HTTP %u", ws->target.url, status);
  } else if (strstr(what, "SSL") || strstr(what, "ssl") || strstr(what, "TLS")) {
    fail(ws, UNSB_ETRANSPORT, "TLS with %s failed (its certificate or host name could not be "
         "verified, or the TLS handshake broke): %s", ws->target.url, what);
  } else if (strstr(what, "connect")) {
    fail(ws, UNSB_ETRANSPORT, "cannot connect to %s: %s", ws->target.url, what);
  } else {
    fail(ws, UNSB_ETRANSPORT, "terminal handshake with %s failed: %s", ws->target.url,
         what[0] ? what : "unknown error");
  }
  ws->ended = 1;
  ws->wsi = NULL;
}

/* Text: assembled up to UNSB_WS_MAX_MESSAGE, queued whole. Binary: each
** piece queued as it comes. Past UNSB_WS_RX_CAP queued bytes, reading
** stops until unsb_ws_next has drained half of it. */
static int receive(unsb_ws *ws, struct lws *wsi, const void *in, size_t len) {
  int final = lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0;
  msg *m;
  if (!lws_frame_is_binary(wsi)) {
    if (ws->text_len + len > UNSB_WS_MAX_MESSAGE) {
      fail(ws, UNSB_EPROTOCOL, "terminal control message over %d bytes", UNSB_WS_MAX_MESSAGE);
      lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *)"too big", 7);
      return -1;
    }
    char *t = realloc(ws->text, ws->text_len + len + 1);
    if (!t) goto oom;
    ws->text = t;
    if (len) memcpy(t + ws->text_len, in, len);
    ws->text_len += len;
    if (!final) return 0;
    m = msg_new(1, ws->text, ws->text_len, 0);
    ws->text_len = 0;
  } else {
    if (len == 0) return 0;
    m = msg_new(0, in, len, 0);
  }
  if (!m) goto oom;
  q_push(&ws->rx, m);
  if (ws->rx.bytes > UNSB_WS_RX_CAP && !ws->rx_paused) {
    ws->rx_paused = 1;
    lws_rx_flow_control(wsi, 0);
  }
  return 0;
oom:
  fail(ws, UNSB_ENOMEM, "out of memory");
  return -1;
}

/* One queued message per writable event; after the last one, the close
** frame when the caller asked for it. */
static int writeable(unsb_ws *ws, struct lws *wsi) {
  msg *m = ws->tx.head;
  if (!m) {
    if (!ws->closing) return 0;
    lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"detach", 6);
    ws->close_sent = 1;   /* lws sends it and waits for the answer */
    return -1;
  }
  int n = lws_write(wsi, m->data + LWS_PRE, m->len, m->text ? LWS_WRITE_TEXT : LWS_WRITE_BINARY);
  if (n < 0 || (size_t)n < m->len) {
    fail(ws, UNSB_ETRANSPORT, "terminal: writing to the connection failed");
    return -1;
  }
  free(q_pop(&ws->tx));
  if (ws->tx.head || ws->closing) lws_callback_on_writable(wsi);
  return 0;
}

static void peer_close(unsb_ws *ws, const unsigned char *in, size_t len) {
  if (len >= 2) {
    ws->close_code = (in[0] << 8) | in[1];
    snprintf(ws->close_reason, sizeof ws->close_reason, "%.*s",
             (int)(len - 2 < 120 ? len - 2 : 120), (const char *)in + 2);
  } else {
    ws->close_code = 1005;   /* RFC 6455 §7.1.5: no status code present */
  }
}

static int ws_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  unsb_ws *ws = lws_context_user(lws_get_context(wsi));
  if (!ws) return 0;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: return append_auth(ws, wsi, in, len);
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: connection_error(ws, wsi, in, len); return 0;
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    ws->established = 1;
    if (ws->tx.head) lws_callback_on_writable(wsi);
    return 0;
  case LWS_CALLBACK_CLIENT_RECEIVE: return receive(ws, wsi, in, len);
  case LWS_CALLBACK_CLIENT_WRITEABLE: return writeable(ws, wsi);
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: peer_close(ws, in, len); return 0;
  case LWS_CALLBACK_CLIENT_CLOSED:
    ws->ended = 1;
    ws->wsi = NULL;
    return 0;
  default: return 0;
  }
}

static const struct lws_protocols protocols[] = {
  { "unsb-terminal", ws_event, 0, UNSB_WS_CHUNK, 0, NULL, 0 },
  { NULL, NULL, 0, 0, 0, NULL, 0 },
};

/* ---- waiting ---- */

/* What the socket is polled for (see the head of this file). */
static short socket_events(const unsb_ws *ws) {
  short ev = ws->rx_paused ? 0 : POLLIN;
  if (ws->tx.head || (ws->closing && !ws->close_sent) || lws_partial_buffered(ws->wsi))
    ev |= POLLOUT;
  return ev;
}

/* One poll() of at most ms over the socket and the caller's fd, then lws
** handles what is ready. 0, or -1 with errno from poll() (EINTR too). */
static int wait_once(unsb_ws *ws, int ms, int extra_fd, int *extra_ready) {
  struct pollfd p[2];
  int n = 0, rc, sock = ws->wsi ? (int)lws_get_socket_fd(ws->wsi) : -1;
  if (sock >= 0 && ws->established) p[n++] = (struct pollfd){ .fd = sock, .events = socket_events(ws) };
  else {
    /* the handshake: the reply wakes us at once; what lws wants to write
    ** meanwhile (the connect, the request) waits at most a step */
    if (sock >= 0) p[n++] = (struct pollfd){ .fd = sock, .events = POLLIN };
    if (ms > HANDSHAKE_STEP_MS) ms = HANDSHAKE_STEP_MS;
  }
  if (extra_fd >= 0) p[n++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
  ms = lws_service_adjust_timeout(ws->ctx, ms, 0);
  rc = poll(p, (nfds_t)n, ms);
  if (rc < 0) return -1;
  if (extra_fd >= 0 && p[n - 1].revents) *extra_ready = 1;
  lws_service(ws->ctx, -1);
  return 0;
}

static int ready(const unsb_ws *ws) { return ws->rx.head != NULL || ws->ended; }

int unsb_ws_service(unsb_ws *ws, int timeout_ms, int extra_fd, int *extra_ready,
                    unsb_error *err) {
  int64_t deadline = unsb_monotonic_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int dummy;
  if (!extra_ready) extra_ready = &dummy;
  *extra_ready = 0;
  lws_service(ws->ctx, -1);
  for (;;) {
    if (ready(ws)) return 1;
    if (unsb_interrupt_take()) return unsb_fail(err, UNSB_EINTERRUPTED, "interrupted");
    int64_t left = deadline - unsb_monotonic_ms();
    if (left <= 0 && timeout_ms > 0) return 0;
    if (wait_once(ws, left <= 0 ? 0 : left < SLICE_MS ? (int)left : SLICE_MS, extra_fd,
                  extra_ready) != 0) {
      if (errno == EINTR) return ready(ws) ? 1 : 0;
      return unsb_fail(err, UNSB_ETRANSPORT, "terminal: poll failed: %s", strerror(errno));
    }
    if (ready(ws)) return 1;
    if (*extra_ready || timeout_ms <= 0) return 0;
  }
}

/* ---- the public calls ---- */

static void ws_free(unsb_ws *ws) {
  if (!ws) return;
  if (ws->ctx) lws_context_destroy(ws->ctx);   /* closes the socket, no more events */
  q_free(&ws->rx);
  q_free(&ws->tx);
  free(ws->text);
  unsb_ws_target_free(&ws->target);
  free(ws);
}

/* The three authentication headers, computed once before connecting. */
static int sign_handshake(unsb_ws *ws, const unsb_credentials *cred, unsb_error *err) {
  if (!cred || !cred->public_key || !cred->secret)
    return unsb_fail(err, UNSB_ECREDENTIALS, "terminal: no credentials");
  if (snprintf(ws->auth, sizeof ws->auth, "Bearer %s", cred->public_key) >= (int)sizeof ws->auth)
    return unsb_fail(err, UNSB_ECREDENTIALS, "public key too long");
  snprintf(ws->ts, sizeof ws->ts, "%lld", (long long)unsb_now());
  if (unsb_sign(cred->secret, cred->secret_len, ws->ts, "GET", ws->target.route, "", 0,
                ws->sig) != 0)
    return unsb_fail(err, UNSB_ETRANSPORT, "terminal: signing the handshake failed");
  return 0;
}

static int make_context(unsb_ws *ws, const unsb_ws_config *cfg, unsb_error *err) {
  struct lws_context_creation_info info;
  /* lws would go on without a CA file it cannot read (and then refuse
  ** every certificate): say what is wrong instead */
  if (cfg->ca_file && access(cfg->ca_file, R_OK) != 0)
    return unsb_fail(err, UNSB_ETRANSPORT, "ca_file %s: %s", cfg->ca_file, strerror(errno));
  /* process-wide in lws; silent unless debugging, and never at a level
  ** that would print the handshake headers */
  lws_set_log_level(cfg->debug ? (LLL_ERR | LLL_WARN | LLL_NOTICE) : 0, NULL);
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.protocols = protocols;
  /* TLS only for wss: setting it up (the system's CA store) is most of
  ** an attach's client-side time */
  if (ws->target.tls) {
    info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    info.client_ssl_ca_filepath = cfg->ca_file;
  }
  info.user = ws;
  info.gid = (gid_t)-1;
  info.uid = (uid_t)-1;
  info.fd_limit_per_thread = MAX_FDS;
  info.connect_timeout_secs = (unsigned)((cfg->connect_timeout_ms + 999) / 1000);
  ws->ctx = lws_create_context(&info);
  if (!ws->ctx)
    return unsb_fail(err, UNSB_ETRANSPORT,
                     "terminal: cannot start libwebsockets (libwebsockets.so.17 missing, "
                     "or its TLS set-up failed%s%s)", cfg->ca_file ? " with ca_file " : "",
                     cfg->ca_file ? cfg->ca_file : "");
  return 0;
}

static int connect_ws(unsb_ws *ws, unsb_error *err) {
  struct lws_client_connect_info ci;
  const char *h = ws->target.host;
  int v6 = strchr(h, ':') != NULL;
  snprintf(ws->host_header, sizeof ws->host_header, "%s%s%s", v6 ? "[" : "", h, v6 ? "]" : "");
  memset(&ci, 0, sizeof ci);
  ci.context = ws->ctx;
  ci.address = h;
  ci.port = ws->target.port;
  ci.ssl_connection = ws->target.tls ? LCCSCF_USE_SSL : 0;   /* verified, host name too */
  ci.path = ws->target.path;
  ci.host = ws->host_header;
  ci.origin = ws->host_header;
  ci.protocol = NULL;                 /* the contract: no subprotocol */
  ci.ietf_version_or_minus_one = -1;
  ci.pwsi = &ws->wsi;
  if (!lws_client_connect_via_info(&ci) && ws->fail.kind == UNSB_OK)
    return unsb_fail(err, UNSB_ETRANSPORT, "cannot connect to %s", ws->target.url);
  return 0;
}

/* Services until the upgrade is done, failed, or the time is up. */
static int wait_established(unsb_ws *ws, long timeout_ms, unsb_error *err) {
  int64_t deadline = unsb_monotonic_ms() + timeout_ms;
  int dummy;
  lws_service(ws->ctx, -1);
  while (!ws->established && !ws->ended) {
    if (unsb_interrupt_take()) return unsb_fail(err, UNSB_EINTERRUPTED, "interrupted");
    int64_t left = deadline - unsb_monotonic_ms();
    if (left <= 0)
      return unsb_fail(err, UNSB_ETIMEOUT, "terminal: no answer from %s within %ld ms",
                       ws->target.url, timeout_ms);
    if (wait_once(ws, left < SLICE_MS ? (int)left : SLICE_MS, -1, &dummy) != 0 && errno != EINTR)
      return unsb_fail(err, UNSB_ETRANSPORT, "terminal: poll failed: %s", strerror(errno));
  }
  if (ws->established) return 0;
  if (ws->fail.kind != UNSB_OK) {
    *err = ws->fail;
    return -1;
  }
  return unsb_fail(err, UNSB_ETRANSPORT, "terminal: %s closed during the handshake",
                   ws->target.url);
}

unsb_ws *unsb_ws_open(const unsb_ws_config *cfg, int *http_status, unsb_error *err) {
  unsb_ws *ws;
  *http_status = 0;
  if (cfg->connect_timeout_ms <= 0) {
    unsb_fail(err, UNSB_EVALIDATION, "connect timeout must be positive");
    return NULL;
  }
  if (!(ws = calloc(1, sizeof *ws))) {
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  ws->max_input = cfg->max_input ? cfg->max_input : UNSB_WS_DEFAULT_MAX_INPUT;
  if (unsb_ws_target_make(&ws->target, cfg->base_url, cfg->session_id, err) != 0 ||
      sign_handshake(ws, cfg->cred, err) != 0 || make_context(ws, cfg, err) != 0 ||
      connect_ws(ws, err) != 0 || wait_established(ws, cfg->connect_timeout_ms, err) != 0) {
    *http_status = ws->http_status;
    ws_free(ws);
    return NULL;
  }
  return ws;
}

static int queue_out(unsb_ws *ws, int text, const void *data, size_t len, unsb_error *err) {
  msg *m = msg_new(text, data, len, LWS_PRE);
  if (!m) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  q_push(&ws->tx, m);
  return 0;
}

static int check_open(const unsb_ws *ws, unsb_error *err) {
  if (ws->ended || !ws->wsi) return unsb_fail(err, UNSB_ETRANSPORT, "terminal has ended");
  if (ws->closing) return unsb_fail(err, UNSB_ETRANSPORT, "terminal is closing");
  return 0;
}

int unsb_ws_send(unsb_ws *ws, const void *data, size_t len, unsb_error *err) {
  const char *p = data;
  if (check_open(ws, err) != 0) return -1;
  if (len > ws->max_input || ws->tx.bytes > ws->max_input - len)
    return unsb_fail(err, UNSB_EVALIDATION, "terminal input queue full (%zu bytes queued, cap %zu)",
                     ws->tx.bytes, ws->max_input);
  for (size_t off = 0; off < len; off += UNSB_WS_CHUNK) {
    size_t n = len - off < UNSB_WS_CHUNK ? len - off : UNSB_WS_CHUNK;
    if (queue_out(ws, 0, p + off, n, err) != 0) return -1;
  }
  if (len) lws_callback_on_writable(ws->wsi);
  return 0;
}

int unsb_ws_resize(unsb_ws *ws, int cols, int rows, unsb_error *err) {
  char json[64];
  int n;
  if (cols < UNSB_WS_MIN_SIZE || cols > UNSB_WS_MAX_SIZE || rows < UNSB_WS_MIN_SIZE ||
      rows > UNSB_WS_MAX_SIZE)
    return unsb_fail(err, UNSB_EVALIDATION, "terminal size %dx%d: cols and rows must be %d..%d",
                     cols, rows, UNSB_WS_MIN_SIZE, UNSB_WS_MAX_SIZE);
  if (check_open(ws, err) != 0) return -1;
  n = snprintf(json, sizeof json, "{\"type\":\"resize\",\"cols\":%d,\"rows\":%d}", cols, rows);
  if (queue_out(ws, 1, json, (size_t)n, err) != 0) return -1;
  lws_callback_on_writable(ws->wsi);
  return 0;
}

int unsb_ws_next(unsb_ws *ws, char **data, size_t *len, int *text) {
  msg *m = q_pop(&ws->rx);
  if (!m) return 0;
  *len = m->len;
  *text = m->text;
  /* the payload moves to the front, so the caller frees one block */
  memmove(m, m->data, m->len + 1);
  *data = (char *)m;
  if (ws->rx_paused && ws->rx.bytes < UNSB_WS_RX_CAP / 2 && ws->wsi) {
    ws->rx_paused = 0;
    lws_rx_flow_control(ws->wsi, 1);
  }
  return 1;
}

int unsb_ws_ended(const unsb_ws *ws, unsb_error *err) {
  if (!ws->ended) return 0;
  if (ws->fail.kind != UNSB_OK) {
    *err = ws->fail;
    return -1;
  }
  if (ws->close_code == 1000 || (ws->closing && ws->close_code == 0)) return 1;
  if (ws->close_code == 0)
    return unsb_fail(err, UNSB_ETRANSPORT, "terminal connection lost (no close frame)");
  return unsb_fail(err, UNSB_EPROTOCOL, "terminal closed by the server: code %d%s%s",
                   ws->close_code, ws->close_reason[0] ? ", " : "", ws->close_reason);
}

int unsb_ws_close_code(const unsb_ws *ws) { return ws->close_code; }

size_t unsb_ws_pending_input(const unsb_ws *ws) { return ws->tx.bytes; }

void unsb_ws_close(unsb_ws *ws, int wait_ms) {
  int64_t deadline;
  int dummy;
  if (!ws) return;
  deadline = unsb_monotonic_ms() + (wait_ms > 0 ? wait_ms : 0);
  if (!ws->ended && ws->wsi && !ws->closing) {
    ws->closing = 1;
    lws_callback_on_writable(ws->wsi);
  }
  while (!ws->ended) {
    int64_t left = deadline - unsb_monotonic_ms();
    if (left <= 0) break;
    if (wait_once(ws, left < SLICE_MS ? (int)left : SLICE_MS, -1, &dummy) != 0 && errno != EINTR)
      break;
  }
  ws_free(ws);
}
