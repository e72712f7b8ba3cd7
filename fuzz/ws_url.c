/*
** The terminal URL of a session (core/ws/url.h) from any base URL and id:
** the input is "<base>\0<id>". On success the pieces must agree with each
** other (a port in range, a non-empty host, the signed route exactly
** "/sessions/<id>/shell" and the end of the path, a ws:// or wss:// URL
** matching the scheme); on failure nothing is left to free.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ws/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 2), *id;
  unsb_ws_target t;
  unsb_error err;
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = buf[size + 1] = '\0';
  id = buf + strlen(buf) + 1;
  if (id > buf + size) id = buf + size + 1;   /* no separator: the empty id */
  if (unsb_ws_target_make(&t, buf, id, &err) == 0) {
    size_t pl = strlen(t.path), rl = strlen(t.route);
    if (t.port < 1 || t.port > 65535 || !t.host[0]) abort();
    if (strncmp(t.route, "/sessions/", 10) != 0 || strcmp(t.route + rl - 6, "/shell") != 0 ||
        strncmp(t.route + 10, id, strlen(id)) != 0 || rl != strlen(id) + 16)
      abort();
    if (pl < rl || strcmp(t.path + pl - rl, t.route) != 0) abort();
    if (strncmp(t.url, t.tls ? "wss://" : "ws://", t.tls ? 6 : 5) != 0) abort();
    unsb_ws_target_free(&t);
  } else if (t.path || t.route || t.url) {
    abort();
  }
  free(buf);
  return 0;
}
