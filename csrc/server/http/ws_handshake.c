/*
** RFC 6455 §4.2.1-4.2.2: whether a request is a WebSocket opening
** handshake, and the Sec-WebSocket-Accept it gets. Header values are
** compared as the RFC says (tokens in a comma list, case-insensitive);
** the key must decode to exactly 16 bytes, so an attacker's 60 KiB "key"
** is refused before it is hashed.
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "core/base64.h"
#include "server/http/ws.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* base64 of 16 bytes with padding */
#define WS_KEY_LEN 24u

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

int ux_ws_handshake_check(const char *method, const char *upgrade, const char *connection,
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

int ux_ws_accept_key(const char *key, char out[29]) {
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
  if (n != 28) {
    free(b64);
    return -1;
  }
  memcpy(out, b64, 29);
  free(b64);
  return 0;
}
