/*
** The terminal client (see ws/client.h): opening (the signed upgrade
** request queued, a private engine's connect_only transfer started) and
** what the caller asks of an open terminal. The object is a state
** machine on the shared loop: CONNECTING while the transfer connects;
** UPGRADING once it has (the request goes out, the reply's head is read);
** OPEN while frames flow; ENDED for good. The step from CONNECTING to
** UPGRADING is taken here by whoever looks (connected, ready), woken by
** the transfer's own token; the rest happens in the loop's callbacks
** (ws/conn.c).
*/
#include "core/ws/conn.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sign.h"

/* CONNECTING -> UPGRADING once the transfer has connected: the request
** goes out. */
static void advance(unsb_wsc *ws) {
  unsb_error err;
  if (ws->state != CONNECTING) return;
  int rc = unsb_http_connected(ws->x, ws->target.url, &err);
  if (rc == 0) return;
  if (rc < 0) {
    unsb_wsc_fail(ws, err.kind, "%s", err.message);
    unsb_wsc_end(ws);
    return;
  }
  ws->fd = unsb_http_socket(ws->x);
  if (ws->fd < 0) {
    unsb_wsc_fail(ws, UNSB_ETRANSPORT, "cannot connect to %s: no socket", ws->target.url);
    unsb_wsc_end(ws);
    return;
  }
  ws->state = UPGRADING;
  unsb_wsc_flush(ws);
}

/* ---------------------------------------------------------------------
** opening
** ------------------------------------------------------------------- */

/* The upgrade request, signed, as the first bytes to write. */
static int queue_request(unsb_wsc *ws, const unsb_credentials *cred, unsb_error *err) {
  char ts[32], sig[UNSB_SIGNATURE_HEX_LEN + 1], *req = NULL;
  const char *h = ws->target.host;
  int v6 = strchr(h, ':') != NULL, n;
  if (!cred || !cred->public_key || !cred->secret)
    return unsb_fail(err, UNSB_ECREDENTIALS, "terminal: no credentials");
  if (strpbrk(cred->public_key, "\r\n"))
    return unsb_fail(err, UNSB_ECREDENTIALS, "the public key contains CR or LF");
  snprintf(ts, sizeof ts, "%lld", (long long)unsb_now());
  if (unsb_sign(cred->secret, cred->secret_len, ts, "GET", ws->target.route, "", 0, sig) != 0 ||
      unsb_ws_client_key(ws->key) != 0)
    return unsb_fail(err, UNSB_ETRANSPORT, "terminal: signing the handshake failed");
  n = asprintf(&req, "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Authorization: Bearer %s\r\nX-Timestamp: %s\r\nX-Signature: %s\r\n"
               "User-Agent: unsandbox-lua\r\n\r\n", ws->target.path, v6 ? "[" : "", h,
               v6 ? "]" : "", ws->target.port, ws->key, cred->public_key, ts, sig);
  if (n < 0) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  msg *m = msg_new(0, (size_t)n);
  if (m) memcpy(m->data, req, (size_t)n);
  free(req);
  if (!m) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  q_push(&ws->tx, m, 0);
  return 0;
}

/* The private engine and its connect_only transfer to host:port. */
static int start_connect(unsb_wsc *ws, const unsb_wsc_config *cfg, unsb_error *err) {
  char url[UNSB_WS_HOST_MAX + 32];
  const char *h = ws->target.host;
  int v6 = strchr(h, ':') != NULL;
  unsb_http_config hc = {.connect_timeout_ms = cfg->connect_timeout_ms, .ca_file = cfg->ca_file,
                         .max_response = 1, .loop = cfg->loop, .max_concurrency = 1};
  snprintf(url, sizeof url, "%s://%s%s%s:%d/", ws->target.tls ? "https" : "http", v6 ? "[" : "", h,
           v6 ? "]" : "", ws->target.port);
  if (!(ws->http = unsb_http_new(&hc, err))) return -1;
  unsb_http_request req = {.method = "GET", .url = url, .timeout_ms = cfg->connect_timeout_ms,
                           .connect_only = 1, .verbose = cfg->debug};
  return (ws->x = unsb_http_open(ws->http, &req, err)) ? 0 : -1;
}

unsb_wsc *unsb_wsc_open(const unsb_wsc_config *cfg, unsb_error *err) {
  unsb_wsc *ws;
  if (cfg->connect_timeout_ms <= 0) {
    unsb_fail(err, UNSB_EVALIDATION, "connect timeout must be positive");
    return NULL;
  }
  /* libcurl would only say "problem with the SSL CA cert": name the option */
  if (cfg->ca_file && access(cfg->ca_file, R_OK) != 0) {
    unsb_fail(err, UNSB_ETRANSPORT, "ca_file %s: %s", cfg->ca_file, strerror(errno));
    return NULL;
  }
  if (!(ws = calloc(1, sizeof *ws))) {
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  ws->fd = ws->extra_fd = -1;
  ws->max_input = cfg->max_input ? cfg->max_input : UNSB_WSC_DEFAULT_MAX_INPUT;
  ws->timeout_ms = cfg->connect_timeout_ms;
  ws->deadline_ms = unsb_monotonic_ms() + cfg->connect_timeout_ms;
  ws->loop = cfg->loop;   /* the source's reference keeps it */
  ws->src.on_fd = unsb_wsc_on_fd;
  ws->src.on_due = unsb_wsc_on_due;
  ws->src.due_ms = ws->deadline_ms;
  unsb_loop_add(ws->loop, &ws->src);
  ws->state = CONNECTING;
  if (!(ws->head = malloc(UNSB_WSC_HEAD_MAX)) ||
      !(ws->parser = unsb_ws_parser_new(UNSB_WSC_RX_CAP, UNSB_WS_CLIENT))) {
    unsb_wsc_free(ws);
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  if (unsb_ws_target_make(&ws->target, cfg->base_url, cfg->session_id, err) != 0 ||
      queue_request(ws, cfg->cred, err) != 0 || start_connect(ws, cfg, err) != 0) {
    unsb_wsc_free(ws);
    return NULL;
  }
  return ws;
}

int unsb_wsc_connected(unsb_wsc *ws, int *http_status, unsb_error *err) {
  *http_status = 0;
  advance(ws);
  if (ws->upgraded) return 1;
  if (ws->state != ENDED) return 0;
  *http_status = ws->http_status;
  if (ws->fail.kind != UNSB_OK) *err = ws->fail;
  else unsb_fail(err, UNSB_ETRANSPORT, "terminal: %s closed during the handshake", ws->target.url);
  return -1;
}

/* ---------------------------------------------------------------------
** using it
** ------------------------------------------------------------------- */

void unsb_wsc_notify(unsb_wsc *ws, unsb_token tok) {
  ws->token = tok;
  if (ws->state == CONNECTING) unsb_http_notify(ws->x, tok);
  if (tok && ws->state == ENDED) unsb_wsc_wake(ws);
}

int unsb_wsc_ready(unsb_wsc *ws) {
  advance(ws);
  return ws->rx.head != NULL || ws->state == ENDED;
}

int unsb_wsc_watch_fd(unsb_wsc *ws, int fd, unsb_error *err) {
  if (ws->extra_fd >= 0 && ws->extra_fd != fd) unsb_loop_watch(ws->loop, &ws->src, ws->extra_fd, 0);
  ws->extra_fd = -1;
  ws->extra_ready = 0;
  if (fd < 0) return 0;
  if (fd == ws->fd || unsb_loop_watching(ws->loop, fd))
    return unsb_fail(err, UNSB_EVALIDATION, "fd %d is one of the event loop's own sockets", fd);
  if (unsb_loop_watch(ws->loop, &ws->src, fd, POLLIN) != 0)
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  ws->extra_fd = fd;
  return 0;
}

int unsb_wsc_fd_ready(const unsb_wsc *ws) { return ws->extra_ready; }

static int check_open(const unsb_wsc *ws, unsb_error *err) {
  if (ws->state != OPEN || ws->peer_closed)
    return unsb_fail(err, UNSB_ETRANSPORT, "terminal has ended");
  if (ws->closing) return unsb_fail(err, UNSB_ETRANSPORT, "terminal is closing");
  return 0;
}

int unsb_wsc_send(unsb_wsc *ws, const void *data, size_t len, unsb_error *err) {
  const unsigned char *p = data;
  if (check_open(ws, err) != 0) return -1;
  if (len > ws->max_input || ws->tx.bytes > ws->max_input - len)
    return unsb_fail(err, UNSB_EVALIDATION, "terminal input queue full (%zu bytes queued, cap %zu)",
                     ws->tx.bytes, ws->max_input);
  for (size_t off = 0; off < len; off += UNSB_WSC_CHUNK) {
    size_t n = len - off < UNSB_WSC_CHUNK ? len - off : UNSB_WSC_CHUNK;
    if (unsb_wsc_queue_frame(ws, UNSB_WS_BINARY, p + off, n, n) != 0)
      return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  unsb_wsc_flush(ws);
  return 0;
}

int unsb_wsc_resize(unsb_wsc *ws, int cols, int rows, unsb_error *err) {
  char json[64];
  int n;
  if (cols < UNSB_WSC_MIN_SIZE || cols > UNSB_WSC_MAX_SIZE || rows < UNSB_WSC_MIN_SIZE ||
      rows > UNSB_WSC_MAX_SIZE)
    return unsb_fail(err, UNSB_EVALIDATION, "terminal size %dx%d: cols and rows must be %d..%d",
                     cols, rows, UNSB_WSC_MIN_SIZE, UNSB_WSC_MAX_SIZE);
  if (check_open(ws, err) != 0) return -1;
  n = snprintf(json, sizeof json, "{\"type\":\"resize\",\"cols\":%d,\"rows\":%d}", cols, rows);
  if (unsb_wsc_queue_frame(ws, UNSB_WS_TEXT, json, (size_t)n, 0) != 0)
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  unsb_wsc_flush(ws);
  return 0;
}

int unsb_wsc_next(unsb_wsc *ws, char **data, size_t *len, int *text) {
  msg *m = q_pop(&ws->rx, ws->rx.head ? ws->rx.head->len : 0);
  if (!m) return 0;
  *len = m->len;
  *text = m->text;
  /* the payload moves to the front, so the caller frees one block */
  memmove(m, m->data, m->len + 1);
  *data = (char *)m;
  if (ws->rx_paused && ws->rx.bytes < UNSB_WSC_RX_CAP / 2) {
    ws->rx_paused = 0;
    unsb_wsc_rewatch(ws);
    /* TLS may hold bytes the socket no longer signals */
    if (ws->state == OPEN) ws->src.due_ms = unsb_monotonic_ms();
  }
  return 1;
}

int unsb_wsc_ended(unsb_wsc *ws, unsb_error *err) {
  if (ws->state != ENDED) return 0;
  if (ws->fail.kind != UNSB_OK) {
    *err = ws->fail;
    return -1;
  }
  if (ws->close_code == UNSB_WS_CLOSE_NORMAL || (ws->closing && ws->close_code == 0)) return 1;
  if (ws->close_code == 0)
    return unsb_fail(err, UNSB_ETRANSPORT, "terminal connection lost (no close frame)");
  return unsb_fail(err, UNSB_EPROTOCOL, "terminal closed by the server: code %d%s%s",
                   ws->close_code, ws->close_reason[0] ? ", " : "", ws->close_reason);
}

int unsb_wsc_close_code(const unsb_wsc *ws) { return ws->close_code; }

size_t unsb_wsc_pending_input(const unsb_wsc *ws) { return ws->tx.bytes; }

void unsb_wsc_close_start(unsb_wsc *ws) {
  if (ws->state != OPEN) {
    unsb_wsc_end(ws);
    return;
  }
  if (ws->closing || ws->peer_closed) return;
  ws->closing = 1;
  unsb_wsc_queue_close(ws, UNSB_WS_CLOSE_NORMAL, "detach");
  unsb_wsc_flush(ws);
}

unsb_loop *unsb_wsc_loop(const unsb_wsc *ws) { return ws->loop; }

void unsb_wsc_free(unsb_wsc *ws) {
  if (!ws) return;
  unsb_wsc_end(ws);
  unsb_loop_remove(ws->loop, &ws->src);   /* its watches go with it */
  unsb_http_free(ws->http);
  unsb_ws_parser_free(ws->parser);
  q_free(&ws->rx);
  q_free(&ws->tx);
  free(ws->head);
  unsb_ws_target_free(&ws->target);
  free(ws);
}
