/*
** Reply and JSON helpers. Every error body has the same two keys, error
** (a stable code clients branch on) and message (for humans), so the
** client's error mapping needs one rule. A reply holds one body at a
** time: setting JSON drops a raw body and the other way round.
*/
#include "server/http/reply.h"
#include "server/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Drops whatever body the reply had (not its headers). */
static void drop_body(ux_reply *rep) {
  if (rep->json) json_decref(rep->json);
  free(rep->raw);
  if (rep->source) {
    if (rep->source->freer) rep->source->freer(rep->source->ctx);
    free(rep->source);
  }
  rep->json = NULL;
  rep->raw = NULL;
  rep->source = NULL;
  rep->raw_len = 0;
  rep->empty = 0;
}

int ux_reply_json(ux_req *r, int status, json_t *json) {
  drop_body(&r->reply);
  r->reply.status = status;
  r->reply.json = json;
  return 0;
}

const char *ux_req_query(const ux_req *r, const char *name) {
  for (size_t i = 0; i < r->req_nquery; i++)
    if (!strcmp(r->req_query[i].name, name)) return r->req_query[i].value;
  return NULL;
}

const char *ux_req_header(const ux_req *r, const char *name) {
  for (size_t i = 0; i < r->req_nheaders; i++)
    if (!strcasecmp(r->req_headers[i].name, name)) return r->req_headers[i].value;
  return NULL;
}

/* RFC 9110 token characters. */
static int is_token(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!(*s >= '0' && *s <= '9') && !(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
        !strchr("!#$%&'*+-.^_`|~", *s)) return 0;
  return 1;
}

static int clean_value(const char *v) {
  return !strpbrk(v, "\r\n");
}

int ux_reply_header(ux_req *r, const char *name, const char *value) {
  static const char *const owned[] = { "Content-Type", "Content-Length", "Transfer-Encoding",
                                       "Connection", "X-Request-Id", NULL };
  if (!name || !value || !is_token(name) || !clean_value(value)) return -1;
  for (int i = 0; owned[i]; i++) if (!strcasecmp(name, owned[i])) return -1;
  ux_kv *h = ux_xrealloc(r->reply.headers, (r->reply.nheaders + 1) * sizeof *h);
  r->reply.headers = h;
  char *n = ux_xstrdup(name), *v = ux_xstrdup(value);
  if (!n || !v) { free(n); free(v); return -1; }
  h[r->reply.nheaders].name = n;
  h[r->reply.nheaders].value = v;
  r->reply.nheaders++;
  return 0;
}

int ux_reply_content_type(ux_req *r, const char *type) {
  if (!type || !*type || !clean_value(type)) return -1;
  char *t = ux_xstrdup(type);
  free(r->reply.content_type);
  r->reply.content_type = t;
  return 0;
}

int ux_reply_raw(ux_req *r, int status, const char *type, const void *buf, size_t len) {
  if (type && ux_reply_content_type(r, type) < 0) return -1;
  char *copy = ux_xmalloc(len ? len : 1);
  if (len) memcpy(copy, buf, len);
  drop_body(&r->reply);
  r->reply.status = status;
  r->reply.raw = copy;
  r->reply.raw_len = len;
  return 0;
}

int ux_reply_take(ux_req *r, int status, const char *type, char *buf, size_t len) {
  if (type && ux_reply_content_type(r, type) < 0) { free(buf); return -1; }
  drop_body(&r->reply);
  r->reply.status = status;
  r->reply.raw = buf ? buf : ux_xmalloc(1);
  r->reply.raw_len = buf ? len : 0;
  return 0;
}

int ux_reply_source(ux_req *r, int status, const char *type, unsigned long long length,
                    ux_source_read read, void (*freer)(void *ctx), void *ctx) {
  if (!read || status < 200 || status > 999 || (type && ux_reply_content_type(r, type) < 0)) {
    if (freer) freer(ctx);
    return -1;
  }
  ux_source *src = ux_xcalloc(1, sizeof *src);
  drop_body(&r->reply);
  *src = (ux_source){ read, freer, ctx, length };
  r->reply.status = status;
  r->reply.source = src;
  return 0;
}

int ux_reply_empty(ux_req *r, int status) {
  drop_body(&r->reply);
  r->reply.status = status;
  r->reply.empty = 1;
  return 0;
}

void ux_reply_clear(ux_reply *rep) {
  drop_body(rep);
  free(rep->content_type);
  for (size_t i = 0; i < rep->nheaders; i++) {
    free(rep->headers[i].name);
    free(rep->headers[i].value);
  }
  free(rep->headers);
  memset(rep, 0, sizeof *rep);
}

int ux_reply_error(ux_req *r, int status, const char *code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *j = json_object();
  json_object_set_new(j, "error", json_string(code));
  json_object_set_new(j, "message", ux_json_bytes(msg, strlen(msg)));
  ux_reply_json(r, status, j);
  return -1;
}

json_t *ux_body_object(ux_req *r, int empty_ok) {
  json_error_t err;
  if (r->body_len == 0) {
    if (empty_ok) return json_object();
    ux_reply_error(r, 400, "bad_request", "request body must be a JSON object");
    return NULL;
  }
  json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
  if (!j) {
    ux_reply_error(r, 400, "bad_request", "invalid JSON at line %d column %d: %s",
                   err.line, err.column, err.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    ux_reply_error(r, 400, "bad_request", "request body must be a JSON object");
    return NULL;
  }
  return j;
}

int ux_get_str(ux_req *r, json_t *obj, const char *key, int required,
               const char *dflt, const char **out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v || json_is_null(v)) {
    if (required) return ux_reply_error(r, 400, "bad_request", "missing field '%s'", key);
    return 0;
  }
  if (!json_is_string(v))
    return ux_reply_error(r, 400, "bad_request", "field '%s' must be a string", key);
  *out = json_string_value(v);
  return 0;
}

int ux_get_int(ux_req *r, json_t *obj, const char *key, long lo, long hi,
               long dflt, long *out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v))
    return ux_reply_error(r, 400, "bad_request", "field '%s' must be an integer", key);
  json_int_t n = json_integer_value(v);
  if (n < lo || n > hi)
    return ux_reply_error(r, 400, "bad_request", "field '%s' must be between %ld and %ld",
                          key, lo, hi);
  *out = (long)n;
  return 0;
}

int ux_get_bool(ux_req *r, json_t *obj, const char *key, int dflt, int *out) {
  json_t *v = json_object_get(obj, key);
  *out = dflt;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_boolean(v))
    return ux_reply_error(r, 400, "bad_request", "field '%s' must be a boolean", key);
  *out = json_is_true(v);
  return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t need;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { need = 2; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { need = 3; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { need = 4; min = 0x10000; }
  else return 0;
  if (n < need) return 0;
  unsigned cp = c & (0x3f >> (need - 1));
  for (size_t i = 1; i < need; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return need;
}

json_t *ux_json_bytes(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {                       /* fast path: already valid */
    size_t l = utf8_len(u + i, len - i);
    if (!l) break;
    i += l;
  }
  if (i == len) return json_stringn(s, len);
  char *buf = ux_xmalloc(len * 3 + 1), *o = buf;
  if (!buf) return json_string("");
  for (i = 0; i < len;) {
    size_t l = utf8_len(u + i, len - i);
    if (l) { memcpy(o, s + i, l); o += l; i += l; }
    else { memcpy(o, "\xef\xbf\xbd", 3); o += 3; i++; }
  }
  json_t *j = json_stringn(buf, (size_t)(o - buf));
  free(buf);
  return j;
}

char *ux_json_dump(const json_t *j, size_t *len) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
  *len = s ? strlen(s) : 0;
  return s;
}

int ux_reply_deleted(ux_req *r, const char *id_key, const char *id) {
  json_t *j = json_object();
  json_object_set_new(j, id_key, json_string(id));
  json_object_set_new(j, "status", json_string("deleted"));
  return ux_reply_json(r, 200, j);
}
