/*
** Control Plane request headers and the object-call rule (see
** cprequest.h). Lines are built with asprintf into a small fixed array;
** any failure frees what was built, so a caller never owns half a set.
*/
#include "core/cprequest.h"
#include "core/mcp.h"
#include "core/pseudonym.h"
#include "core/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>

#define TOKEN_MAX 8192

static int printable(const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return 0;
  return 1;
}

/* type/subtype with optional parameters, no control characters */
static int valid_content_type(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 255 || !strchr(s, '/')) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < ' ' || (unsigned char)s[i] >= 0x7f) return 0;
  return 1;
}

static int check(const unsb_cp_header_opts *o, unsb_error *err) {
  unsb_traceparent tp;
  if (!o->token || !*o->token)
    return unsb_fail(err, UNSB_EVALIDATION, "no Control Plane token (SANDBOX_TOKEN)");
  if (!printable(o->token, TOKEN_MAX))
    return unsb_fail(err, UNSB_EVALIDATION,
                     "token must be printable ASCII without blanks, at most %d bytes", TOKEN_MAX);
  if (o->subject && !unsb_valid_subject(o->subject, strlen(o->subject)))
    return unsb_fail(err, UNSB_EVALIDATION, "X-Acting-Subject must be 32 lowercase hex characters");
  if (o->tenant && !unsb_cp_valid_tenant(o->tenant))
    return unsb_fail(err, UNSB_EVALIDATION, "X-Sandbox-Tenant must be a tenant id (^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$)");
  /* exact length: trimming must not let a trailing CR LF into the line */
  if (o->traceparent && (strlen(o->traceparent) != UNSB_TRACEPARENT_LEN ||
                         !unsb_trace_parse(o->traceparent, UNSB_TRACEPARENT_LEN, &tp)))
    return unsb_fail(err, UNSB_EVALIDATION, "traceparent is malformed");
  if (o->mcp_tool && !unsb_mcp_known_tool(o->mcp_tool))
    return unsb_fail(err, UNSB_EVALIDATION, "unknown MCP tool '%.64s'", o->mcp_tool);
  if (o->content_type && !valid_content_type(o->content_type))
    return unsb_fail(err, UNSB_EVALIDATION, "content type must be printable ASCII 'type/subtype'");
  return 0;
}

static int add(unsb_cp_headers *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add(unsb_cp_headers *h, const char *fmt, ...) {
  va_list ap;
  char *line;
  int rc;
  if (h->n >= UNSB_CP_HEADERS_MAX) return -1;
  va_start(ap, fmt);
  rc = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (rc < 0) return -1;
  h->lines[h->n++] = line;
  return 0;
}

int unsb_cp_headers_build(const unsb_cp_header_opts *o, unsb_cp_headers *h, unsb_error *err) {
  int bad = 0, mcp = o->mcp_tool != NULL;
  memset(h, 0, sizeof *h);
  if (check(o, err) != 0) return -1;
  if (!mcp) bad |= add(h, "Accept: application/json");
  else if (o->streaming) bad |= add(h, "Accept: text/event-stream, application/json");
  else bad |= add(h, "Accept: application/json, text/event-stream");
  bad |= add(h, "Authorization: Bearer %s", o->token);
  if (mcp || o->has_body)
    bad |= add(h, "Content-Type: %s", !mcp && o->content_type ? o->content_type : "application/json");
  if (mcp) {
    bad |= add(h, "MCP-Protocol-Version: " UNSB_MCP_PROTOCOL_VERSION);
    bad |= add(h, "Mcp-Method: " UNSB_MCP_METHOD);
    bad |= add(h, "Mcp-Name: %s", o->mcp_tool);
  }
  if (o->subject) bad |= add(h, "X-Acting-Subject: %s", o->subject);
  if (o->tenant) bad |= add(h, "X-Sandbox-Tenant: %s", o->tenant);
  if (o->traceparent) bad |= add(h, "traceparent: %s", o->traceparent);
  if (bad) {
    unsb_cp_headers_free(h);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}

void unsb_cp_headers_free(unsb_cp_headers *h) {
  for (size_t i = 0; i < h->n; i++) {
    OPENSSL_cleanse(h->lines[i], strlen(h->lines[i]));
    free(h->lines[i]);
    h->lines[i] = NULL;
  }
  h->n = 0;
}

int unsb_cp_reserved_header(const char *name) {
  static const char *const RESERVED[] = {
    "Authorization", "X-Acting-Subject", "traceparent", "MCP-Protocol-Version",
    "Mcp-Method", "Mcp-Name", NULL,
  };
  for (const char *const *r = RESERVED; name && *r; r++)
    if (strcasecmp(name, *r) == 0) return 1;
  return 0;
}

int unsb_cp_valid_tenant(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 32 || s[0] == '-' || s[n - 1] == '-') return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) return 0;
  return 1;
}

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

int unsb_cp_is_object_call(const char *path) {
  size_t n;
  if (!path) return 0;
  n = strcspn(path, "?");
  return strncmp(path, "/v1/storage/", 12) == 0 || ends_with(path, n, "/objects/import") ||
         ends_with(path, n, "/objects/export");
}

int unsb_cp_check_object_call(const char *path, int has_subject, int has_owner,
                              unsb_error *err) {
  if (!unsb_cp_is_object_call(path) || has_subject || has_owner) return 0;
  return unsb_fail(err, UNSB_EVALIDATION,
                   "%.*s is an object call: bind an acting subject or pass an owner",
                   (int)strcspn(path, "?"), path);
}
