/*
** RFC 6455 §4: the opening handshake from both ends. The server's side:
** whether a request is a WebSocket opening handshake (its headers come
** parsed by libmicrohttpd), and the Sec-WebSocket-Accept it gets. The
** client's: a fresh key, and whether the reply's head (raw bytes read off
** the connection) accepts the upgrade. Header values are compared as the
** RFC says (tokens in a comma list, case-insensitive); a key must decode
** to exactly 16 bytes, so an attacker's 60 KiB "key" is refused before it
** is hashed.
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "core/base64.h"
#include "core/digest.h"
#include "core/ws/ws.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN UNSB_WS_KEY_LEN

/* 1 when the comma-separated list holds token (case-insensitive), with
** optional whitespace around each element (RFC 9110 §5.6.1). */
static int list_has_token(const char *list, const char *token) {
  size_t tl = strlen(token);
  const char *s = list;
  while (*s) {
    while (*s == ' ' || *s == '\t' || *s == ',') s++;
    const char *start = s;
    while (*s && *s != ',') s++;
    const char *end = s;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
    if ((size_t)(end - start) == tl && strncasecmp(start, token, tl) == 0) return 1;
  }
  return 0;
}

static int key_valid(const char *key) {
  if (strlen(key) != WS_KEY_LEN) return 0;
  size_t n = 0;
  unsigned char *raw = unsb_base64_decode(key, WS_KEY_LEN, &n);
  if (!raw) return 0;
  free(raw);
  return n == 16;
}

static int refuse(int status, const char *reason, const char **why) {
  if (why) *why = reason;
  return status;
}

int unsb_ws_handshake_check(const char *method, const char *upgrade, const char *connection,
                          const char *version, const char *key, const char **why) {
  if (why) *why = NULL;
  if (!method || strcmp(method, "GET") != 0)
    return refuse(400, "a WebSocket handshake must be a GET", why);
  if (!upgrade || !list_has_token(upgrade, "websocket"))
    return refuse(400, "this route needs Upgrade: websocket", why);
  if (!connection || !list_has_token(connection, "upgrade"))
    return refuse(400, "this route needs Connection: Upgrade", why);
  if (!key || !key_valid(key))
    return refuse(400, "Sec-WebSocket-Key must be the base64 of 16 bytes", why);
  if (!version || strcmp(version, "13") != 0)
    return refuse(426, "only Sec-WebSocket-Version 13 is served", why);
  return 0;
}

int unsb_ws_accept_key(const char *key, char out[UNSB_WS_ACCEPT_LEN + 1]) {
  out[0] = '\0';
  if (!key || !key_valid(key)) return -1;
  char buf[WS_KEY_LEN + sizeof WS_GUID];
  memcpy(buf, key, WS_KEY_LEN);
  memcpy(buf + WS_KEY_LEN, WS_GUID, sizeof WS_GUID);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned dlen = 0;
  if (EVP_Digest(buf, WS_KEY_LEN + sizeof WS_GUID - 1, digest, &dlen, EVP_sha1(), NULL) != 1 ||
      dlen != 20)
    return -1;
  size_t n = 0;
  char *b64 = unsb_base64_encode(digest, dlen, &n);
  if (!b64) return -1;
  if (n != UNSB_WS_ACCEPT_LEN) {
    free(b64);
    return -1;
  }
  memcpy(out, b64, UNSB_WS_ACCEPT_LEN + 1);
  free(b64);
  return 0;
}

/* ---------------------------------------------------------------------
** the client's side
** ------------------------------------------------------------------- */

int unsb_ws_client_key(char out[UNSB_WS_KEY_LEN + 1]) {
  unsigned char raw[16];
  size_t n = 0;
  out[0] = '\0';
  if (unsb_random_bytes(raw, sizeof raw) != 0) return -1;
  char *b64 = unsb_base64_encode(raw, sizeof raw, &n);
  if (!b64) return -1;
  if (n == UNSB_WS_KEY_LEN) memcpy(out, b64, UNSB_WS_KEY_LEN + 1);
  free(b64);
  return n == UNSB_WS_KEY_LEN ? 0 : -1;
}

/* The value of the header `name` in head (the last one when repeated,
** blanks trimmed), copied into out (cut to its size); 0 when absent. */
static int reply_header(const char *head, size_t len, const char *name, char *out, size_t size) {
  size_t nl = strlen(name);
  int found = 0;
  const char *p = memchr(head, '\n', len), *end = head + len;   /* past the status line */
  while (p && ++p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *e = eol ? eol : end;
    if ((size_t)(e - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
      const char *v = p + nl + 1;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) e--;
      size_t vl = (size_t)(e - v) < size - 1 ? (size_t)(e - v) : size - 1;
      memcpy(out, v, vl);
      out[vl] = '\0';
      found = 1;
    }
    p = eol;
  }
  return found;
}

/* "HTTP/1.x NNN ...": the status, or 0. */
static int status_of(const char *head, size_t len) {
  if (len < 12 || strncmp(head, "HTTP/1.", 7) != 0 || (head[7] != '0' && head[7] != '1') ||
      head[8] != ' ')
    return 0;
  for (int i = 9; i < 12; i++)
    if (head[i] < '0' || head[i] > '9') return 0;
  if (len > 12 && head[12] != ' ' && head[12] != '\r') return 0;
  return (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
}

int unsb_ws_reply_check(const char *head, size_t len, const char *key, int *status,
                        const char **why) {
  char v[256], accept[UNSB_WS_ACCEPT_LEN + 1];
  *status = status_of(head, len);
  if (*status == 0) return refuse(-1, "the reply to the upgrade is not HTTP", why);
  if (*status != 101) return refuse(-1, "the server did not switch protocols", why);
  if (head[7] != '1') return refuse(-1, "a 101 over HTTP/1.0", why);
  if (!reply_header(head, len, "Upgrade", v, sizeof v) || !list_has_token(v, "websocket"))
    return refuse(-1, "the 101 lacks Upgrade: websocket", why);
  if (!reply_header(head, len, "Connection", v, sizeof v) || !list_has_token(v, "upgrade"))
    return refuse(-1, "the 101 lacks Connection: Upgrade", why);
  if (unsb_ws_accept_key(key, accept) != 0 ||
      !reply_header(head, len, "Sec-WebSocket-Accept", v, sizeof v) || strcmp(v, accept) != 0)
    return refuse(-1, "the 101's Sec-WebSocket-Accept does not match the key sent", why);
  if (reply_header(head, len, "Sec-WebSocket-Extensions", v, sizeof v))
    return refuse(-1, "the 101 names an extension, and none was offered", why);
  if (reply_header(head, len, "Sec-WebSocket-Protocol", v, sizeof v))
    return refuse(-1, "the 101 names a subprotocol, and none was offered", why);
  if (why) *why = NULL;
  return 0;
}
