/*
** The .env parser of the env vault (vault.h). Lines are cut first, then
** every variable is checked together by the core's environment rule, so
** the vault accepts exactly what a run can be given: a vault that could
** not be injected is a 400 when it is stored, not a failed run later.
*/
#include "server/exec/vault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/validate.h"
#include "server/mem.h"

void ux_vault_env_free(char **env, size_t n) {
  if (!env) return;
  for (size_t i = 0; i < n; i++) free(env[i]);
  free(env);
}

/* Cuts one line [s, e) into name and value; 1 for a variable, 0 for a
** line to skip, -1 for a line that is neither. */
static int cut(const char *s, const char *e, unsb_env_var *v) {
  if (e > s && e[-1] == '\r') e--;
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  if (s == e || *s == '#') return 0;
  if (e - s > 7 && !strncmp(s, "export ", 7)) s += 7;
  const char *eq = memchr(s, '=', (size_t)(e - s));
  if (!eq || eq == s) return -1;
  const char *val = eq + 1;
  size_t vlen = (size_t)(e - val);
  if (vlen >= 2 && (val[0] == '"' || val[0] == '\'') && val[vlen - 1] == val[0]) {
    val++;
    vlen -= 2;
  }
  *v = (unsb_env_var){ s, val, (size_t)(eq - s), vlen };
  return 1;
}

/* "NAME=value" strings of vars[0..n). */
static char **join(const unsb_env_var *vars, size_t n) {
  char **env = ux_xcalloc(n + 1, sizeof *env);
  for (size_t i = 0; env && i < n; i++) {
    size_t len = vars[i].name_len + vars[i].value_len + 2;
    if (!(env[i] = ux_xmalloc(len))) { ux_vault_env_free(env, i); return NULL; }
    memcpy(env[i], vars[i].name, vars[i].name_len);
    env[i][vars[i].name_len] = '=';
    memcpy(env[i] + vars[i].name_len + 1, vars[i].value, vars[i].value_len);
    env[i][len - 1] = '\0';
  }
  return env;
}

int ux_vault_parse(const char *text, size_t len, char ***env, size_t *n,
                   char *err, size_t errlen) {
  unsb_env_var vars[UNSB_ENV_MAX_VARS] = { { 0 } };
  size_t count = 0, line = 0, bad = 0;
  *env = NULL;
  *n = 0;
  if (len > UX_VAULT_MAX) {
    snprintf(err, errlen, "the .env text exceeds %d bytes", UX_VAULT_MAX);
    return -1;
  }
  if (memchr(text, '\0', len)) {
    snprintf(err, errlen, "the .env text holds a NUL byte");
    return -1;
  }
  for (const char *s = text, *end = text + len; s < end; line++) {
    const char *e = memchr(s, '\n', (size_t)(end - s));
    if (!e) e = end;
    unsb_env_var v;
    int k = cut(s, e, &v);
    if (k < 0) {
      snprintf(err, errlen, "line %zu: not NAME=value", line + 1);
      return -1;
    }
    if (k > 0 && count == UNSB_ENV_MAX_VARS) {
      snprintf(err, errlen, "at most %d variables", UNSB_ENV_MAX_VARS);
      return -1;
    }
    if (k > 0) vars[count++] = v;
    s = e + 1;
  }
  const char *why = unsb_env_check(vars, count, &bad);
  if (why) {
    if (bad < count) snprintf(err, errlen, "variable %zu: %s", bad + 1, why);
    else snprintf(err, errlen, "%s", why);
    return -1;
  }
  if (!(*env = join(vars, count))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  *n = count;
  return 0;
}
