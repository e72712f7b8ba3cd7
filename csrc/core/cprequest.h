/*
** The shape of every Control Plane request (spec §7.1, §7.4, §5.4): the
** one place its headers are built, so plain calls, MCP calls and SSE
** streams carry the same Authorization, X-Acting-Subject and traceparent
** (pitfall §10: streams built elsewhere lost the subject), and the rule
** that object calls need a subject or an owner.
**
** Values are checked before anything is sent: the bearer token must be
** printable ASCII without blanks (the server treats non-ASCII as absent;
** CR/LF would inject headers), the subject must have the pseudonym shape,
** the traceparent must parse. Messages never quote the token.
*/
#ifndef UNSB_CPREQUEST_H
#define UNSB_CPREQUEST_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_CP_HEADERS_MAX 10

typedef struct {
  const char *token;          /* Control Plane token, or the call's scoped token/ticket */
  const char *subject;        /* X-Acting-Subject bound to the caller, or NULL */
  const char *tenant;         /* X-Sandbox-Tenant (an admin acting for a tenant), or NULL */
  const char *traceparent;    /* outbound value, or NULL for none */
  int has_body;               /* adds Content-Type */
  const char *content_type;   /* with a body: NULL = application/json */
  const char *mcp_tool;       /* an MCP tools/call of this tool, or NULL */
  int streaming;              /* MCP: ask for SSE first */
} unsb_cp_header_opts;

typedef struct {
  char *lines[UNSB_CP_HEADERS_MAX];   /* "Name: value" */
  size_t n;
} unsb_cp_headers;

/* Builds, in this order: Accept, Authorization, Content-Type, the MCP
** headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name), X-Acting-Subject,
** X-Sandbox-Tenant, traceparent. An MCP call always has a JSON body and its Accept lists
** both types, SSE first when streaming. 0, or -1 with err (validation,
** memory); nothing to free on failure. */
int unsb_cp_headers_build(const unsb_cp_header_opts *o, unsb_cp_headers *h, unsb_error *err);

/* Wipes the lines (one holds the token) and frees them. */
void unsb_cp_headers_free(unsb_cp_headers *h);

/* 1 for a header the client sets itself and a caller may not pass per
** call (§7.1): Authorization, X-Acting-Subject, traceparent, and the MCP
** headers. Case-insensitive; name without the colon. */
int unsb_cp_reserved_header(const char *name);

/* A tenant id: ^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$ (spec §2). */
int unsb_cp_valid_tenant(const char *s);

/* §7.4: paths under /v1/storage/ or ending in /objects/import or
** /objects/export (the query, if any, is ignored). */
int unsb_cp_is_object_call(const char *path);

/* An object call needs a bound subject or an explicit owner; else a
** validation error naming the path. 0 for every other path. */
int unsb_cp_check_object_call(const char *path, int has_subject, int has_owner,
                              unsb_error *err);

#endif
