/*
** Shapes of the Control Plane's ids (see cpshapes.h): plain byte checks,
** no locale, no regex engine.
*/
#include "core/cpshapes.h"

#include <string.h>

static int lower_hex(const char *s, size_t n) {
  if (strlen(s) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

static int prefixed_hex12(const char *s, const char *prefix) {
  return s && strncmp(s, prefix, 3) == 0 && lower_hex(s + 3, 12);
}

int unsb_valid_workspace_id(const char *s) { return prefixed_hex12(s, "ws-"); }
int unsb_valid_sandbox_id(const char *s) { return prefixed_hex12(s, "sb-"); }

/* ^[a-z0-9][a-z0-9-]{0,max-1}$ */
static int slug(const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max || s[0] == '-') return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) return 0;
  return 1;
}

int unsb_valid_template(const char *s) { return slug(s, 32); }
int unsb_valid_checkpoint_id(const char *s) { return slug(s, 63); }
int unsb_valid_tenant_id(const char *s) { return slug(s, 32) && s[strlen(s) - 1] != '-'; }
int unsb_valid_key_id(const char *s) { return s && lower_hex(s, 16); }
