/*
** Object locators (cp/objects/locator.h). Every input arrives as bytes with a length
** (a JSON string may hold U+0000, a query value may not be UTF-8), so the
** checks look at the length, never at strlen alone, and normalisation
** builds a fresh string rather than editing the caller's.
*/
#include "server/cp/objects/locator.h"

#include <stdio.h>
#include <string.h>

#include "core/utf8.h"

static const char *const UPLOAD_ROOTS[] = { "source", "derived", "meta", NULL };
static const char *const AGENT_ROOTS[] = { "inputs", "outputs", "artifacts", "logs", "meta", NULL };

static int fail(char *err, size_t errlen, const char *fmt, const char *a) {
  snprintf(err, errlen, fmt, a);
  return -1;
}

int ux_objloc_scope(const char *s, ux_obj_scope *out, char *err, size_t errlen) {
  if (s && !strcmp(s, "upload")) *out = UX_OBJ_UPLOAD;
  else if (s && !strcmp(s, "agent")) *out = UX_OBJ_AGENT;
  else return fail(err, errlen, "%s", "scope must be 'upload' or 'agent'");
  return 0;
}

const char *ux_objloc_scope_name(ux_obj_scope scope) {
  return scope == UX_OBJ_UPLOAD ? "upload" : "agent";
}

const char *ux_objloc_bucket(ux_obj_scope scope) {
  return scope == UX_OBJ_UPLOAD ? UX_OBJ_BUCKET_UPLOADS : UX_OBJ_BUCKET_AGENTS;
}

/* Python's str.strip() set, ASCII part: what a trimmed id may lose. */
static int space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

int ux_objloc_id(const char *field, const char *s, size_t len, char out[UX_OBJ_ID_MAX + 1],
                 char *err, size_t errlen) {
  size_t a = 0, b = len, n = 0;
  if (!s) return fail(err, errlen, "%s must be a lowercase DNS-style identifier", field);
  while (a < b && space((unsigned char)s[a])) a++;
  while (b > a && space((unsigned char)s[b - 1])) b--;
  for (size_t i = a; i < b; n++) {
    char c = s[i];
    /* U+212A KELVIN SIGN (e2 84 aa) lower-cases to ASCII k */
    if (b - i >= 3 && !memcmp(s + i, "\xe2\x84\xaa", 3)) { c = 'k'; i += 3; }
    else { i++; if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a'); }
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && n > 0);
    if (!ok || n >= UX_OBJ_ID_MAX) return fail(err, errlen, "%s must be a lowercase DNS-style identifier", field);
    out[n] = c;
  }
  if (n == 0) return fail(err, errlen, "%s must be a lowercase DNS-style identifier", field);
  out[n] = '\0';
  return 0;
}

/* The checks every path shares, then normalisation into out (possibly
** ""). */
static int path_common(const char *field, const char *s, size_t len,
                       char out[UX_OBJ_PATH_MAX + 1], char *err, size_t errlen) {
  if (len > UX_OBJ_PATH_MAX) return fail(err, errlen, "%s must be at most 512 bytes", field);
  if (memchr(s, '\0', len)) return fail(err, errlen, "%s must not contain NUL bytes", field);
  if (!unsb_utf8_valid(s, len)) return fail(err, errlen, "%s must be valid UTF-8", field);
  if (len > 0 && s[0] == '/') return fail(err, errlen, "%s must be relative", field);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    const char *slash = memchr(s + i, '/', len - i);
    size_t seg = slash ? (size_t)(slash - (s + i)) : len - i;
    if (seg == 2 && s[i] == '.' && s[i + 1] == '.')
      return fail(err, errlen, "%s must not contain '..'", field);
    if (seg > 0 && !(seg == 1 && s[i] == '.')) {
      if (o) out[o++] = '/';
      memcpy(out + o, s + i, seg);   /* fits: out never outgrows the input */
      o += seg;
    }
    i += seg + 1;
  }
  out[o] = '\0';
  return 0;
}

static int first_segment_in(const char *path, const char *const *roots) {
  size_t n = strcspn(path, "/");
  for (int i = 0; roots[i]; i++)
    if (strlen(roots[i]) == n && !memcmp(path, roots[i], n)) return 1;
  return 0;
}

int ux_objloc_path(ux_obj_scope scope, const char *s, size_t len, int for_list,
                   char out[UX_OBJ_PATH_MAX + 1], char *err, size_t errlen) {
  if (!s || len == 0) {
    if (for_list) { out[0] = '\0'; return 0; }
    return fail(err, errlen, "%s", s ? "path must not be empty" : "path is required");
  }
  if (path_common("path", s, len, out, err, errlen) < 0) return -1;
  if (!out[0]) {
    if (for_list) return 0;
    return fail(err, errlen, "%s", "path must name an object ('.' is only allowed for list)");
  }
  if (scope == UX_OBJ_UPLOAD && !first_segment_in(out, UPLOAD_ROOTS))
    return fail(err, errlen, "%s", "path must start with one of: source, derived, meta");
  if (scope == UX_OBJ_AGENT && !first_segment_in(out, AGENT_ROOTS))
    return fail(err, errlen, "%s", "path must start with one of: inputs, outputs, artifacts, logs, meta");
  return 0;
}

/* One owner segment: ^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$. The spec adds
** "not dot-only", which the first character's rule already ensures. */
static int owner_segment(const char *s, size_t n) {
  if (n == 0 || n > UX_OBJ_SEGMENT_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || !strchr("_.@-", c) || c == '\0')) return 0;
  }
  return 1;
}

int ux_objloc_owner(const char *s, size_t len, char *err, size_t errlen) {
  const char *slash = s ? memchr(s, '/', len) : NULL;
  if (!slash || !owner_segment(s, (size_t)(slash - s)) ||
      !owner_segment(slash + 1, len - (size_t)(slash - s) - 1))
    return fail(err, errlen, "%s", "owner must be <tenant>/<subject> (each 1-128 of A-Z a-z 0-9 _ . @ -, "
                "starting with a letter or digit)");
  return 0;
}

int ux_objloc_key(const ux_objloc *l, char *key, size_t keylen) {
  int n;
  const char *sep = l->path[0] ? "/" : "";
  if (l->scope == UX_OBJ_UPLOAD)
    n = snprintf(key, keylen, "users/%s/uploads/%s%s%s", l->owner, l->upload_id, sep, l->path);
  else
    n = snprintf(key, keylen, "users/%s/agents/%s/runs/%s%s%s", l->owner, l->agent_id,
                 l->run_id, sep, l->path);
  return n < 0 || (size_t)n >= keylen ? -1 : 0;
}

int ux_objloc_wspath(const char *field, const char *s, size_t len, const char *under,
                     int exact, char out[UX_OBJ_PATH_MAX + 1], char *err, size_t errlen) {
  char msg[160];
  if (!s) return fail(err, errlen, "%s is required", field);
  if (len == 0) return fail(err, errlen, "%s must not be empty", field);
  if (path_common(field, s, len, out, err, errlen) < 0) return -1;
  size_t u = strlen(under);
  if (exact) {
    if (strcmp(out, under) != 0) {
      snprintf(msg, sizeof msg, "%%s must be '%s' when archive is true", under);
      return fail(err, errlen, msg, field);
    }
    return 0;
  }
  if (strncmp(out, under, u) != 0 || out[u] != '/' || out[u + 1] == '\0') {
    snprintf(msg, sizeof msg, "%%s must name a file under %s/", under);
    return fail(err, errlen, msg, field);
  }
  return 0;
}

int ux_objloc_content_type(const char *s, size_t len, char *err, size_t errlen) {
  size_t slashes = 0, seg = 0;
  int ok = s && len > 0 && len <= UX_OBJ_CTYPE_MAX;
  for (size_t i = 0; ok && i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '/') { ok = seg > 0 && ++slashes == 1; seg = 0; continue; }
    ok = alnum || (seg > 0 && c && strchr("!#$&-^_.+", c));
    seg++;
  }
  if (!ok || slashes != 1 || seg == 0)
    return fail(err, errlen, "%s", "content_type must be a simple lower-case MIME type such as "
                "application/octet-stream");
  return 0;
}

int ux_objloc_sha256(const char *s, size_t len, char out[65], char *err, size_t errlen) {
  if (!s || len != 64) return fail(err, errlen, "%s", "sha256 must be 64 hexadecimal characters");
  for (size_t i = 0; i < 64; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return fail(err, errlen, "%s", "sha256 must be 64 hexadecimal characters");
    out[i] = c;
  }
  out[64] = '\0';
  return 0;
}
