/*
** The terminal URL of a session (see ws/url.h). The base URL was checked
** by unsb_client_new (scheme, no blanks, no query); this still refuses
** anything it cannot split into host, port and path, since the pieces are
** used apart: the connection's URL, the Host header, the request line.
*/
#include "core/ws/url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"

/* Host part of "host[:port]" or "[v6][:port]": copies it to t->host and
** returns where the port or path starts, or NULL. */
static const char *split_host(unsb_ws_target *t, const char *p, unsb_error *err) {
  const char *end;
  size_t n;
  if (*p == '[') {
    end = strchr(p, ']');
    if (!end) { unsb_fail(err, UNSB_EVALIDATION, "url: unterminated IPv6 literal"); return NULL; }
    p++;
    n = (size_t)(end - p);
    end++;
  } else {
    end = p + strcspn(p, ":/");
    n = (size_t)(end - p);
  }
  if (n == 0) { unsb_fail(err, UNSB_EVALIDATION, "url: no host"); return NULL; }
  if (n >= sizeof t->host) { unsb_fail(err, UNSB_EVALIDATION, "url: host too long"); return NULL; }
  if (memchr(p, '@', n)) {
    unsb_fail(err, UNSB_EVALIDATION, "url: user information is not supported");
    return NULL;
  }
  memcpy(t->host, p, n);
  t->host[n] = '\0';
  return end;
}

/* ":port" (1..65535, digits only) or nothing; returns where the path starts. */
static const char *split_port(unsb_ws_target *t, const char *p, unsb_error *err) {
  long port = 0;
  if (*p != ':') { t->port = t->tls ? 443 : 80; return p; }
  p++;
  if (*p < '0' || *p > '9') { unsb_fail(err, UNSB_EVALIDATION, "url: bad port"); return NULL; }
  while (*p >= '0' && *p <= '9') {
    port = port * 10 + (*p++ - '0');
    if (port > 65535) break;
  }
  if (port < 1 || port > 65535 || (*p && *p != '/')) {
    unsb_fail(err, UNSB_EVALIDATION, "url: bad port");
    return NULL;
  }
  t->port = (int)port;
  return p;
}

int unsb_ws_target_make(unsb_ws_target *t, const char *base, const char *session_id,
                        unsb_error *err) {
  const char *p;
  size_t prefix;
  memset(t, 0, sizeof *t);
  if (!session_id || !unsb_valid_id(session_id, strlen(session_id)))
    return unsb_fail(err, UNSB_EVALIDATION, "invalid session id");
  if (!base) return unsb_fail(err, UNSB_EVALIDATION, "url: missing");
  if (strncmp(base, "http://", 7) == 0) p = base + 7;
  else if (strncmp(base, "https://", 8) == 0) { t->tls = 1; p = base + 8; }
  else return unsb_fail(err, UNSB_EVALIDATION, "url must start with http:// or https://");
  if (strpbrk(base, "?# \t\r\n")) return unsb_fail(err, UNSB_EVALIDATION, "url: bad character");
  if (!(p = split_host(t, p, err)) || !(p = split_port(t, p, err))) return -1;
  prefix = strlen(p);
  while (prefix > 0 && p[prefix - 1] == '/') prefix--;
  if (asprintf(&t->route, "/sessions/%s/shell", session_id) < 0) t->route = NULL;
  if (t->route && asprintf(&t->path, "%.*s%s", (int)prefix, p, t->route) < 0) t->path = NULL;
  if (t->path && asprintf(&t->url, "%s://%s%s%s:%d%s", t->tls ? "wss" : "ws",
                          strchr(t->host, ':') ? "[" : "", t->host,
                          strchr(t->host, ':') ? "]" : "", t->port, t->path) < 0)
    t->url = NULL;
  if (!t->url) {
    unsb_ws_target_free(t);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}

void unsb_ws_target_free(unsb_ws_target *t) {
  free(t->path);
  free(t->route);
  free(t->url);
  t->path = t->route = t->url = NULL;
}
