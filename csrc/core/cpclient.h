/*
** A client of the Control Plane (spec §3 "SDK configuration", §7): its
** configuration (base URL, token, default session, refresh period, an
** admin's tenant), its HTTP engine, its lease cache and its MCP request
** ids, and the one function that turns a call into a request: every
** Control Plane request (plain, MCP, streamed, a ticket's upload) gets its
** URL, headers and traceparent here, so they all carry the same
** Authorization and X-Acting-Subject (pitfall §10: streams built apart
** lost the subject).
**
** Fail closed: without a token a call fails with kind credentials before
** anything is sent; an object call without a subject or an owner is a
** validation error naming the path (§7.3, §7.4). No retries, no fallback.
**
** The token is a secret: it lives only in this struct (wiped on free) and
** in the header lines of a call (wiped once the call is sent); no message
** quotes it. The default session is kept as its session id only (§5.1:
** the key itself is never sent).
*/
#ifndef UNSB_CPCLIENT_H
#define UNSB_CPCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/http.h"
#include "core/leasecache.h"
#include "core/mcp.h"

#define UNSB_ENV_CP_URL "SANDBOX_CONTROL_PLANE_URL"
#define UNSB_ENV_CP_TOKEN "SANDBOX_TOKEN"
#define UNSB_ENV_CP_SESSION "SANDBOX_SESSION_ID"
#define UNSB_ENV_CP_REFRESH "SANDBOX_LIFECYCLE_REFRESH_SECONDS"
#define UNSB_CP_DEFAULT_URL "http://127.0.0.1:18080"
#define UNSB_CP_DEFAULT_TIMEOUT_MS 100000L       /* §8: "100 s" calls */
#define UNSB_CP_DEFAULT_MAX_RESPONSE ((size_t)80 * 1024 * 1024)   /* 64 MiB objects fit */

typedef struct unsb_cp unsb_cp;

typedef struct {
  const char *url, *token, *session, *refresh;   /* explicit; NULL = the env_* value */
  const char *env_url, *env_token, *env_session, *env_refresh;  /* the environment */
  const char *tenant;           /* X-Sandbox-Tenant on every call, or NULL */
  long timeout_ms;              /* <= 0 = UNSB_CP_DEFAULT_TIMEOUT_MS */
  long connect_timeout_ms;      /* <= 0 = 10 s */
  const char *ca_file;
  size_t max_response;          /* 0 = UNSB_CP_DEFAULT_MAX_RESPONSE */
  size_t lease_capacity;        /* 0 = UNSB_LEASE_CACHE_DEFAULT */
  unsb_loop *loop;              /* the event loop to share; NULL = a private one */
  int max_concurrency;          /* transfers at once; 0 = UNSB_HTTP_DEFAULT_CONCURRENCY */
} unsb_cp_config;

/* Zeroes cfg and fills env_* from the process environment. */
void unsb_cp_config_from_environ(unsb_cp_config *cfg);

/* Checks and copies the configuration. URL: explicit, else env (blank =
** absent), else the default; http:// or https://, no blanks, query or
** fragment; trailing '/' removed. A blank token counts as absent (not an
** error here: calls fail closed). The session is hashed at once. NULL with
** err: validation (the message starts with the option's name) or memory. */
unsb_cp *unsb_cp_new(const unsb_cp_config *cfg, unsb_error *err);
/* Closes open transfers, wipes the token and the leases, frees. */
void unsb_cp_free(unsb_cp *c);

const char *unsb_cp_url(const unsb_cp *c);
int unsb_cp_has_token(const unsb_cp *c);
/* The default session's session_id, or NULL when none is configured. */
const char *unsb_cp_session_id(const unsb_cp *c);
int64_t unsb_cp_refresh_period(const unsb_cp *c);
long unsb_cp_timeout(const unsb_cp *c);
const char *unsb_cp_tenant(const unsb_cp *c);
unsb_lease_cache *unsb_cp_leases(unsb_cp *c);
unsb_mcp_ids *unsb_cp_mcp_ids(unsb_cp *c);
unsb_http *unsb_cp_http(unsb_cp *c);

/* One call. Strings are borrowed for the duration of the call. */
typedef struct {
  const char *method;           /* upper-case letters */
  const char *path;             /* "/..." with an optional "?query" (already encoded) */
  const char *body;             /* NULL = none */
  size_t body_len;
  int has_body_fd;              /* or the body from a file (see unsb_http_request) */
  int body_fd;
  int64_t body_fd_len;
  const char *content_type;     /* of the body; NULL = application/json */
  const char *token;            /* a scoped token or ticket; NULL = the client's token */
  const char *subject;          /* the caller's bound X-Acting-Subject, or NULL */
  int has_owner;                /* an object call that names its owner */
  const char *trace_id;         /* the caller's bound trace, or NULL = a random one */
  const char *trace_flags;      /* NULL = "01" */
  const char *traceparent;      /* a whole traceparent the caller made (so it knows
                                ** the span it sent), or NULL = one from trace_id,
                                ** trace_flags and a random span */
  const char *mcp_tool;         /* an MCP tools/call of this tool, or NULL */
  int streaming;                /* MCP: ask for SSE first */
  long timeout_ms;              /* <= 0 = the client's */
  const unsb_http_stream *stream;
  int large;                    /* a large body is expected (see unsb_http_request) */
  const char *const *capture;   /* response headers to keep */
  size_t n_capture;
} unsb_cp_call;

/* The inputs of a call, as err->arg names them: the method, the path. */
enum { UNSB_CP_ARG_METHOD = 1, UNSB_CP_ARG_PATH = 2 };

/* Misuse checks, before anything else: method, path (starts with '/', no
** blanks or control characters, at most 8 KiB), the object-call rule.
** 0, or -1 with a validation err (err->arg: UNSB_CP_ARG_*; 0 for the
** object-call rule, which is about the call's subject as much as its path). */
int unsb_cp_check_call(const unsb_cp_call *call, unsb_error *err);

/* The call as an open transfer of the client's engine (http.h). The
** call's body must stay valid until the transfer is closed. NULL with
** err: credentials (no token: nothing was sent), validation (see
** check_call, a bad header value), and the engine's kinds. */
unsb_http_xfer *unsb_cp_open(unsb_cp *c, const unsb_cp_call *call, unsb_error *err);

#endif
