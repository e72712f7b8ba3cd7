/*
** Authentication. In lenient mode (--lenient, spec §8) two variant
** signatures are accepted besides the canonical one: over the path with
** its query string (rebuilt from the received arguments as
** name=value&..., in order; the project's clients sign the path alone),
** and over "" when the body is exactly {}. What a failure reveals is deliberate: a skewed clock
** gets a message naming the timestamp (clients turn it into clock-sync
** advice); everything else gets the same "invalid key or signature", and
** an unknown key still costs one HMAC, so neither the wording nor the
** timing tells a prober whether a public key exists.
**
** The signature covers the body, so it is checked once the body is in;
** what the headers allow is checked before (ux_auth_headers, the
** transport's header check), so no body is buffered for a request whose
** headers are missing, malformed, out of time or name an unknown key. The
** body of an unknown key is read and thrown away, then answered like a
** bad signature: refusing it before its body would tell which keys exist.
*/
#include "server/exec/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>

#include "core/sign.h"
#include "server/fsutil.h"
#include "server/store/db.h"
#include "server/store/store.h"

static int unauthorized(ux_req *r, const char *msg) {
  return ux_reply_error(r, 401, "unauthorized", "%s", msg);
}

/* Strict decimal seconds: no sign, no spaces, at most 12 digits. */
static int parse_ts(const char *s, long *out) {
  size_t n = strlen(s);
  if (n == 0 || n > 12 || strspn(s, "0123456789") != n) return -1;
  *out = strtol(s, NULL, 10);
  return 0;
}

/* path?query as the SDKs that sign it send it; 0, or -1 when too long. */
static int path_with_query(const ux_req *r, char *out, size_t len) {
  size_t n = (size_t)snprintf(out, len, "%s", r->path);
  for (size_t i = 0; i < r->req_nquery && n < len; i++) {
    const ux_kv *q = &r->req_query[i];
    const char *v = q->value ? q->value : "";
    n += (size_t)snprintf(out + n, len - n, "%c%s%s%s", i ? '&' : '?', q->name, *v ? "=" : "", v);
  }
  return n < len ? 0 : -1;
}

static int lenient_ok(const ux_req *r, const char *secret, const char *ts, const char *sig) {
  char want[UNSB_SIGNATURE_HEX_LEN + 1], full[8192];
  int good = 0;
  if (r->req_nquery && path_with_query(r, full, sizeof full) == 0)
    good = unsb_sign(secret, strlen(secret), ts, r->method, full, r->body, r->body_len, want) == 0 &&
           unsb_signature_equal(want, sig);
  if (!good && r->body_len == 2 && !memcmp(r->body, "{}", 2))
    good = unsb_sign(secret, strlen(secret), ts, r->method, r->path, "", 0, want) == 0 &&
           unsb_signature_equal(want, sig);
  return good;
}

/* The header rules, the same before the body and after it. 0, or -1
** with the 401 reply. */
static int header_rules(ux_req *r, const char *authz, const char *ts, const char *sig) {
  long t;
  if (!authz || !ts || !sig)
    return unauthorized(r, "missing Authorization, X-Timestamp or X-Signature header");
  if (strncmp(authz, "Bearer ", 7) != 0 || !authz[7] || strlen(authz + 7) >= sizeof r->owner_buf)
    return unauthorized(r, "Authorization must be 'Bearer <public key>'");
  if (parse_ts(ts, &t) < 0 || labs(ux_now() - t) > UX_AUTH_WINDOW_S)
    return unauthorized(r, "Request timestamp expired or invalid: X-Timestamp must be "
                           "unix seconds within 300 s of server time (check the clock)");
  return 0;
}

int ux_auth_headers(ux_req *r, const char *authz, const char *ts, const char *sig) {
  char secret[256];
  if (header_rules(r, authz, ts, sig) != 0) return -1;
  int known = ux_store_key_secret(r->srv->store, authz + 7, secret, sizeof secret) == 0;
  OPENSSL_cleanse(secret, sizeof secret);
  return known ? 0 : 1;
}

int ux_auth_check(ux_req *r, const char *authz, const char *ts, const char *sig,
                  char *owner_buf, size_t owner_len) {
  char secret[256], want[UNSB_SIGNATURE_HEX_LEN + 1];
  if (header_rules(r, authz, ts, sig) != 0) return -1;
  if (strlen(authz + 7) >= owner_len) return unauthorized(r, "Authorization must be 'Bearer <public key>'");

  const char *pk = authz + 7;
  int known = ux_store_key_secret(r->srv->store, pk, secret, sizeof secret) == 0;
  if (!known) strcpy(secret, "unsb-sk-00000-00000-00000-00000");  /* same work */
  int good = unsb_sign(secret, strlen(secret), ts, r->method, r->path,
                       r->body, r->body_len, want) == 0 &&
             unsb_signature_equal(want, sig);
  if (!good && r->srv->cfg.lenient) good = lenient_ok(r, secret, ts, sig);
  OPENSSL_cleanse(secret, sizeof secret);
  /* a body thrown away unseen (its key was unknown when its headers came)
  ** signs nothing here: r->body is not what was sent */
  if (!(known && good) || r->body_discarded) return unauthorized(r, "invalid key or signature");
  strcpy(owner_buf, pk);
  r->owner = owner_buf;
  return 0;
}

int ux_auth_unsigned_terminal(const ux_req *r, const char *authz) {
  const char *up = ux_req_header((ux_req *)r, "Upgrade");
  size_t n = strlen(r->path);
  return r->srv->cfg.lenient && !authz && !strcmp(r->method, "GET") && up && !strcasecmp(up, "websocket") &&
         !strncmp(r->path, "/sessions/", 10) && n > 16 && !strcmp(r->path + n - 6, "/shell") &&
         !memchr(r->path + 10, '/', n - 16);
}

int ux_auth_terminal_owner(ux_req *r, char *owner_buf, size_t owner_len) {
  char id[200];
  size_t n = strlen(r->path) - 16;
  if (n >= sizeof id) return unauthorized(r, "missing Authorization, X-Timestamp or X-Signature header");
  memcpy(id, r->path + 10, n);
  id[n] = '\0';
  json_t *row = ux_db_row(r->srv->store, "SELECT owner FROM sessions WHERE id = ?1", "s", id);
  const char *owner = json_string_value(json_object_get(row, "owner"));
  int ok = owner && strlen(owner) < owner_len;
  if (ok) {
    strcpy(owner_buf, owner);
    r->owner = owner_buf;
  }
  json_decref(row);
  return ok ? 0 : unauthorized(r, "missing Authorization, X-Timestamp or X-Signature header");
}
