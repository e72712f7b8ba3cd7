/*
** The terminal URL of a session (core/ws/url.h): scheme mapping, host and
** port (IPv6 literals, defaults, bounds), the base URL's path prefix, the
** signed route, and every refusal (bad id, bad scheme, user information,
** bad ports, blanks) leaving nothing to free.
*/
#include <string.h>

#include "core/ws/url.h"
#include "tests/tap.h"

static int make(unsb_ws_target *t, const char *base, const char *id, unsb_error *err) {
  return unsb_ws_target_make(t, base, id, err);
}

static void good(void) {
  unsb_ws_target t;
  unsb_error err;

  ok(make(&t, "http://127.0.0.1:8080", "s1", &err) == 0, "http with a port");
  ok(!t.tls && t.port == 8080, "ws, port 8080");
  is_str(t.host, "127.0.0.1", "host");
  is_str(t.path, "/sessions/s1/shell", "path");
  is_str(t.route, "/sessions/s1/shell", "signed route");
  is_str(t.url, "ws://127.0.0.1:8080/sessions/s1/shell", "url for messages");
  unsb_ws_target_free(&t);

  ok(make(&t, "https://api.unsandbox.com", "unsb-session-1", &err) == 0, "https, no port");
  ok(t.tls && t.port == 443, "wss on 443");
  is_str(t.url, "wss://api.unsandbox.com:443/sessions/unsb-session-1/shell", "wss url");
  unsb_ws_target_free(&t);

  ok(make(&t, "http://example.org", "a", &err) == 0 && t.port == 80, "http defaults to 80");
  unsb_ws_target_free(&t);

  ok(make(&t, "http://[::1]:9000/api/v1/", "x.y_z", &err) == 0, "IPv6 literal and a prefix");
  is_str(t.host, "::1", "brackets stripped");
  ok(t.port == 9000, "its port");
  is_str(t.path, "/api/v1/sessions/x.y_z/shell", "prefix kept, trailing slashes dropped");
  is_str(t.route, "/sessions/x.y_z/shell", "the signed part is the route alone");
  is_str(t.url, "ws://[::1]:9000/api/v1/sessions/x.y_z/shell", "brackets in the url");
  unsb_ws_target_free(&t);
  unsb_ws_target_free(&t);   /* twice is fine */
  ok(t.path == NULL && t.url == NULL, "freed fields are NULL");

  ok(make(&t, "http://h:65535", "a", &err) == 0 && t.port == 65535, "highest port");
  unsb_ws_target_free(&t);
}

static void bad(const char *base, const char *id, const char *what) {
  unsb_ws_target t;
  unsb_error err = {0};
  int rc = make(&t, base, id, &err);
  ok(rc == -1 && err.kind == UNSB_EVALIDATION && t.path == NULL && t.url == NULL && t.route == NULL,
     "refused: %s (%s)", what, err.message);
}

int main(void) {
  char longhost[400];
  good();
  bad("http://h", "", "empty id");
  bad("http://h", "a/b", "slash in the id");
  bad("http://h", "..", "dot-dot id");
  bad("http://h", "a?b", "query in the id");
  bad("http://h", NULL, "no id");
  bad(NULL, "a", "no url");
  bad("ftp://h", "a", "another scheme");
  bad("ws://h", "a", "a ws url (the client keeps http URLs)");
  bad("http://", "a", "no host");
  bad("http://:80", "a", "empty host");
  bad("http://user:pw@h", "a", "user information");
  bad("http://h:0", "a", "port 0");
  bad("http://h:65536", "a", "port over 65535");
  bad("http://h:99999999999999999999", "a", "huge port");
  bad("http://h:80x", "a", "junk after the port");
  bad("http://h:", "a", "empty port");
  bad("http://h:-1", "a", "negative port");
  bad("http://[::1", "a", "unterminated IPv6 literal");
  bad("http://h/a b", "a", "blank in the prefix");
  bad("http://h?q=1", "a", "query in the base");
  bad("http://h#f", "a", "fragment in the base");
  memset(longhost, 'a', sizeof longhost - 1);
  memcpy(longhost, "http://", 7);
  longhost[sizeof longhost - 1] = '\0';
  bad(longhost, "a", "host too long");
  return tap_done();
}
