/*
** Lease rules (see lease.h). Decisions read the struct only; updates check
** the whole reply first and then change the lease, so a bad reply can
** never leave half a lease behind.
*/
#include "core/lease.h"
#include "core/cpshapes.h"
#include "core/validate.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

static void drop_secret(char **s) {
  if (*s) {
    OPENSSL_cleanse(*s, strlen(*s));
    free(*s);
    *s = NULL;
  }
}

void unsb_lease_init(unsb_lease *l) { memset(l, 0, sizeof *l); }

void unsb_lease_forget_runtime(unsb_lease *l) {
  drop_secret(&l->sb_token);
  l->sandbox_id[0] = '\0';
  l->template_id[0] = '\0';
  l->sb_expires_at = l->sb_checked_at = 0;
}

void unsb_lease_clear(unsb_lease *l) {
  unsb_lease_forget_runtime(l);
  drop_secret(&l->ws_token);
  free(l->ws_owner);
  unsb_lease_init(l);
}

/* Printable ASCII without blanks: what may follow "Bearer " in a header. */
static int valid_token(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > UNSB_LEASE_TOKEN_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return 0;
  return 1;
}

static int valid_owner(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > UNSB_LEASE_OWNER_MAX || !strchr(s, '/')) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return 0;
  return 1;
}

static int64_t expiry(int64_t now, long long expires_in) {
  if (expires_in < 0) expires_in = UNSB_LEASE_DEFAULT_TTL_S;
  if (expires_in > UNSB_LEASE_MAX_TTL_S) expires_in = UNSB_LEASE_MAX_TTL_S;
  return now + expires_in;
}

/* ---------------------------------------------------------------------
** decisions
** ------------------------------------------------------------------- */

unsb_lease_action unsb_lease_workspace_action(const unsb_lease *l, const char *owner, int refresh,
                                              int64_t now, int64_t period) {
  if (refresh || !l->workspace_id[0] || !l->ws_token) return UNSB_LEASE_CREATE;
  if (l->ws_expires_at <= now + UNSB_LEASE_MARGIN_S) return UNSB_LEASE_CREATE;
  if (now - l->ws_checked_at >= period) return UNSB_LEASE_CREATE;
  if (owner && (!l->ws_owner || strcmp(owner, l->ws_owner) != 0)) return UNSB_LEASE_CREATE;
  return UNSB_LEASE_REUSE;
}

unsb_lease_action unsb_lease_runtime_action(const unsb_lease *l, const char *template_id,
                                            int64_t now, int64_t period, unsb_error *err) {
  const char *running = l->template_id[0] ? l->template_id : UNSB_DEFAULT_TEMPLATE;
  if (!l->sandbox_id[0]) return UNSB_LEASE_CREATE;
  if (template_id && strcmp(template_id, running) != 0) {
    unsb_fail(err, UNSB_EVALIDATION,
              "sandbox %s of this session runs template '%s', not '%s'; release it first",
              l->sandbox_id, running, template_id);
    return UNSB_LEASE_CONFLICT;
  }
  if (!l->sb_token || l->sb_expires_at <= now + UNSB_LEASE_MARGIN_S) return UNSB_LEASE_REFRESH;
  if (now - l->sb_checked_at >= period) return UNSB_LEASE_REFRESH;
  return UNSB_LEASE_REUSE;
}

/* ---------------------------------------------------------------------
** updates
** ------------------------------------------------------------------- */

int unsb_lease_set_workspace(unsb_lease *l, const unsb_workspace_reply *r, int64_t now,
                             unsb_error *err) {
  char *token, *owner = NULL;
  if (!unsb_valid_workspace_id(r->workspace_id))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has no valid workspace_id");
  if (!valid_token(r->access_token))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has no valid access_token");
  if (r->owner && !valid_owner(r->owner))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has an invalid owner");
  token = strdup(r->access_token);
  if (r->owner) owner = strdup(r->owner);
  if (!token || (r->owner && !owner)) {
    free(token);
    free(owner);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  if (strcmp(l->workspace_id, r->workspace_id) != 0) unsb_lease_forget_runtime(l);
  drop_secret(&l->ws_token);
  free(l->ws_owner);
  memcpy(l->workspace_id, r->workspace_id, 16);
  l->ws_token = token;
  l->ws_owner = owner;
  l->ws_expires_at = expiry(now, r->expires_in);
  l->ws_checked_at = now;
  l->ws_created = r->created != 0;
  return 0;
}

int unsb_lease_set_runtime(unsb_lease *l, const unsb_runtime_reply *r, int64_t now,
                           unsb_error *err) {
  char *token;
  if (!unsb_valid_sandbox_id(r->sandbox_id))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has no valid sandbox id");
  if (!valid_token(r->access_token))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has no valid access_token");
  if (r->template_id && !unsb_valid_template(r->template_id))
    return unsb_fail(err, UNSB_EPROTOCOL, "Control Plane response has an invalid template");
  token = strdup(r->access_token);
  if (!token) return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  if (strcmp(l->sandbox_id, r->sandbox_id) != 0) l->template_id[0] = '\0';
  drop_secret(&l->sb_token);
  memcpy(l->sandbox_id, r->sandbox_id, 16);
  if (r->template_id) strcpy(l->template_id, r->template_id);   /* <= 32, checked */
  l->sb_token = token;
  l->sb_expires_at = expiry(now, r->expires_in);
  l->sb_checked_at = now;
  return 0;
}

void unsb_lease_get_status(const unsb_lease *l, int64_t now, unsb_lease_status *st) {
  st->workspace_id = l->workspace_id[0] ? l->workspace_id : NULL;
  st->sandbox_id = l->sandbox_id[0] ? l->sandbox_id : NULL;
  st->template_id = l->template_id[0] ? l->template_id : NULL;
  st->workspace_ready = st->workspace_id && l->ws_token && l->ws_expires_at > now;
  st->runtime_ready = st->sandbox_id && l->sb_token && l->sb_expires_at > now;
}

/* ---------------------------------------------------------------------
** configuration
** ------------------------------------------------------------------- */

int unsb_lease_refresh_period(const char *value, int64_t *out, unsb_error *err) {
  return unsb_refresh_period_of(value, "SANDBOX_LIFECYCLE_REFRESH_SECONDS", UNSB_ARG_ENV, out, err);
}

int unsb_refresh_period_of(const char *value, const char *name, int arg, int64_t *out,
                           unsb_error *err) {
  const char *p = value, *end;
  size_t len = value ? strlen(value) : 0;
  int neg = 0;
  int64_t v = 0;
  *out = UNSB_REFRESH_DEFAULT_S;
  if (!p) return 0;
  unsb_trim(&p, &len);
  end = p + len;
  if (p == end) return 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if (p == end) goto bad;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') goto bad;
    v = v * 10 + (*p - '0');
    if (v > UNSB_REFRESH_MAX_S)
      return unsb_invalid(err, arg, "%s: at most %d seconds", name, UNSB_REFRESH_MAX_S);
  }
  *out = neg || v < UNSB_REFRESH_MIN_S ? UNSB_REFRESH_MIN_S : v;
  return 0;
bad:
  return unsb_invalid(err, arg, "%s: an integer number of seconds expected", name);
}
