/*
** The shared request rules (see validate.h). Explicit ASCII ranges, never
** <ctype.h>, so no answer depends on the locale; names are measured by
** the lengths given, so an embedded NUL is seen, not cut at.
*/
#include "core/validate.h"

#include <stdlib.h>
#include <string.h>

static int alpha_(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

const char *unsb_env_name_check(const char *name, size_t len) {
  if (!name || len == 0) return "is empty";
  if (!alpha_((unsigned char)name[0])) return "must start with a letter or '_'";
  for (size_t i = 1; i < len; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!alpha_(c) && !(c >= '0' && c <= '9'))
      return "may only contain letters, digits and '_'";
  }
  return NULL;
}

const char *unsb_env_check(const unsb_env_var *vars, size_t n, size_t *bad) {
  size_t bytes = 0;
  *bad = n;
  if (n > UNSB_ENV_MAX_VARS) return "too many variables (at most 256)";
  for (size_t i = 0; i < n; i++) {
    const char *why = unsb_env_name_check(vars[i].name, vars[i].name_len);
    *bad = i;
    if (why) return why;
    /* each term is checked before it is added: no overflow; and before the
    ** value is scanned, so a wrong length is never read past */
    if (vars[i].name_len > UNSB_ENV_MAX_ONE || vars[i].value_len > UNSB_ENV_MAX_ONE ||
        vars[i].name_len + vars[i].value_len + 2 > UNSB_ENV_MAX_ONE)
      return "too large (at most 128 KiB for one variable)";
    if (!vars[i].value || memchr(vars[i].value, '\0', vars[i].value_len))
      return "a value must not contain a NUL byte";
    bytes += vars[i].name_len + vars[i].value_len + 2;
    if (bytes > UNSB_ENV_MAX_BYTES) { *bad = n; return "too large (at most 256 KiB together)"; }
  }
  *bad = n;
  return NULL;
}

const char *unsb_relpath_check(const char *path, size_t len) {
  if (!path || len == 0) return "is empty";
  if (len > UNSB_RELPATH_MAX) return "is too long (at most 4095 bytes)";
  if (path[0] == '/') return "is absolute";
  if (path[len - 1] == '/') return "ends with '/'";
  size_t depth = 0, start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len) {
      unsigned char c = (unsigned char)path[i];
      if (c < 0x20 || c == 0x7f) return "contains a control byte";
      if (c != '/') continue;
    }
    size_t clen = i - start;
    if (clen == 0) return "has an empty component";
    if (clen > UNSB_COMPONENT_MAX) return "has a component longer than 255 bytes";
    if (path[start] == '.' && (clen == 1 || (clen == 2 && path[start + 1] == '.')))
      return "has a '.' or '..' component";
    if (++depth > UNSB_DEPTH_MAX) return "is nested too deeply (at most 64 levels)";
    start = i + 1;
  }
  return NULL;
}

/* ---------------------------------------------------------------------
** sets of names
** ------------------------------------------------------------------- */

typedef struct {
  const char *const *names;
  const size_t *lens;
} name_set;

static int cmp_bytes(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  if (c) return c;
  return al < bl ? -1 : al > bl;
}

static int cmp_index(const void *x, const void *y, void *ctx) {
  const name_set *s = ctx;
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  int c = cmp_bytes(s->names[a], s->lens[a], s->names[b], s->lens[b]);
  return c ? c : (a > b) - (a < b);          /* stable: the earlier index first */
}

/* The index of the name equal to key[0..len) in the sorted order, or -1. */
static long find(const name_set *s, const size_t *order, size_t n, const char *key, size_t len) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2, k = order[mid];
    int c = cmp_bytes(s->names[k], s->lens[k], key, len);
    if (c == 0) return (long)k;
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  return -1;
}

const char *unsb_paths_conflict(const char *const *names, const size_t *lens, size_t n,
                                size_t *order, size_t *i, size_t *j) {
  name_set s = { names, lens };
  for (size_t k = 0; k < n; k++) order[k] = k;
  qsort_r(order, n, sizeof *order, cmp_index, &s);
  for (size_t k = 1; k < n; k++)
    if (!cmp_bytes(names[order[k - 1]], lens[order[k - 1]], names[order[k]], lens[order[k]])) {
      *i = order[k - 1];
      *j = order[k];
      return "the same name is given twice";
    }
  for (size_t k = 0; k < n; k++)
    for (size_t p = 0; p < lens[k]; p++) {
      if (names[k][p] != '/') continue;
      long f = find(&s, order, n, names[k], p);
      if (f >= 0) {
        *i = (size_t)f;
        *j = k;
        return "a file of this name is also needed as a directory";
      }
    }
  return NULL;
}

int unsb_blank_char(int c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

int unsb_blank(const char *s, size_t len) {
  for (size_t i = 0; s && i < len; i++)
    if (!unsb_blank_char((unsigned char)s[i])) return 0;
  return 1;
}

void unsb_trim(const char **s, size_t *len) {
  while (*len > 0 && unsb_blank_char((unsigned char)**s)) { (*s)++; (*len)--; }
  while (*len > 0 && unsb_blank_char((unsigned char)(*s)[*len - 1])) (*len)--;
}

const char *unsb_url_check(const char *url) {
  if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
    return "url must start with http:// or https://";
  for (const char *p = url; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == 0x7f) return "url contains a blank or control character";
  if (strchr(url, '?') || strchr(url, '#')) return "url must not contain a query or fragment";
  return NULL;
}
