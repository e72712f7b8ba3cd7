/*
** Control Plane client state and its one request builder (see
** cpclient.h). A call is prepared (URL, header lines, traceparent) into a
** small struct that owns its strings; the token's line is wiped when the
** struct is freed, right after the engine has copied it.
*/
#include "core/cpclient.h"
#include "core/cpids.h"
#include "core/cprequest.h"
#include "core/lease.h"
#include "core/trace.h"
#include "core/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#define PATH_MAX_BYTES 8192

struct unsb_cp {
  char *url;
  char *token;                  /* secret; NULL = none */
  char *tenant;
  char session_id[UNSB_SESSION_ID_LEN + 1];   /* "" = no default session */
  int64_t refresh_s;
  long timeout_ms;
  unsb_http *http;
  unsb_lease_cache *leases;
  unsb_mcp_ids ids;
};

void unsb_cp_config_from_environ(unsb_cp_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->env_url = getenv(UNSB_ENV_CP_URL);
  cfg->env_token = getenv(UNSB_ENV_CP_TOKEN);
  cfg->env_session = getenv(UNSB_ENV_CP_SESSION);
  cfg->env_refresh = getenv(UNSB_ENV_CP_REFRESH);
}

static int blank(const char *s) {
  return !s || unsb_blank(s, strlen(s));
}

/* The configuration's values, checked; nothing allocated yet. A value of
** the environment is refused with err->arg UNSB_ARG_ENV, one of cfg with 1. */
static int pick(const unsb_cp_config *cfg, const char **url, const char **token,
                const char **session, int64_t *refresh, unsb_error *err) {
  const char *why;
  *token = *session = NULL;
  *url = cfg->url ? cfg->url : !blank(cfg->env_url) ? cfg->env_url : UNSB_CP_DEFAULT_URL;
  if ((why = unsb_url_check(*url))) {
    if (cfg->url) return unsb_invalid(err, 1, "url: %s", why);
    return unsb_invalid(err, UNSB_ARG_ENV, "%s: %s", UNSB_ENV_CP_URL, why);
  }
  *token = cfg->token ? cfg->token : cfg->env_token;
  if (blank(*token)) *token = NULL;
  *session = cfg->session ? cfg->session : cfg->env_session;
  if (blank(*session)) *session = NULL;
  if (cfg->tenant && !unsb_cp_valid_tenant(cfg->tenant))
    return unsb_invalid(err, 1, "tenant: not a tenant id");
  if (cfg->refresh) return unsb_refresh_period_of(cfg->refresh, "refresh", 1, refresh, err);
  return unsb_lease_refresh_period(cfg->env_refresh, refresh, err);
}

unsb_cp *unsb_cp_new(const unsb_cp_config *cfg, unsb_error *err) {
  const char *url, *token, *session;
  int64_t refresh;
  unsb_cp *c;
  if (pick(cfg, &url, &token, &session, &refresh, err) != 0) return NULL;
  if (!(c = calloc(1, sizeof *c))) goto oom;
  if (session && unsb_session_id(session, strlen(session), c->session_id, err) != 0) {
    unsb_cp_free(c);
    return NULL;
  }
  c->refresh_s = refresh;
  c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : UNSB_CP_DEFAULT_TIMEOUT_MS;
  unsb_mcp_ids_init(&c->ids);
  c->url = strdup(url);
  c->token = token ? strdup(token) : NULL;
  c->tenant = cfg->tenant ? strdup(cfg->tenant) : NULL;
  c->leases = unsb_lease_cache_new(cfg->lease_capacity);
  if (!c->url || (token && !c->token) || (cfg->tenant && !c->tenant) || !c->leases) goto oom;
  for (size_t n = strlen(c->url); n > 0 && c->url[n - 1] == '/'; n--) c->url[n - 1] = '\0';
  unsb_http_config hc = {
    .connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000,
    .ca_file = cfg->ca_file,
    .max_response = cfg->max_response ? cfg->max_response : UNSB_CP_DEFAULT_MAX_RESPONSE,
    .loop = cfg->loop,
    .max_concurrency = cfg->max_concurrency,
  };
  if (!(c->http = unsb_http_new(&hc, err))) {
    unsb_cp_free(c);
    return NULL;
  }
  return c;
oom:
  unsb_cp_free(c);
  unsb_fail(err, UNSB_ENOMEM, "out of memory");
  return NULL;
}

void unsb_cp_free(unsb_cp *c) {
  if (!c) return;
  unsb_http_free(c->http);
  unsb_lease_cache_free(c->leases);
  if (c->token) {
    OPENSSL_cleanse(c->token, strlen(c->token));
    free(c->token);
  }
  free(c->tenant);
  free(c->url);
  free(c);
}

const char *unsb_cp_url(const unsb_cp *c) { return c->url; }
int unsb_cp_has_token(const unsb_cp *c) { return c->token != NULL; }
const char *unsb_cp_session_id(const unsb_cp *c) { return c->session_id[0] ? c->session_id : NULL; }
int64_t unsb_cp_refresh_period(const unsb_cp *c) { return c->refresh_s; }
long unsb_cp_timeout(const unsb_cp *c) { return c->timeout_ms; }
const char *unsb_cp_tenant(const unsb_cp *c) { return c->tenant; }
unsb_lease_cache *unsb_cp_leases(unsb_cp *c) { return c->leases; }
unsb_mcp_ids *unsb_cp_mcp_ids(unsb_cp *c) { return &c->ids; }
unsb_http *unsb_cp_http(unsb_cp *c) { return c->http; }

/* ---------------------------------------------------------------------
** calls
** ------------------------------------------------------------------- */

int unsb_cp_check_call(const unsb_cp_call *call, unsb_error *err) {
  const char *m = call->method, *p = call->path;
  size_t n = p ? strlen(p) : 0;
  if (!m || !*m || strspn(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(m) || strlen(m) > 16)
    return unsb_invalid(err, UNSB_CP_ARG_METHOD, "method must be upper-case letters");
  if (n == 0 || p[0] != '/' || n > PATH_MAX_BYTES)
    return unsb_invalid(err, UNSB_CP_ARG_PATH, "path must start with '/' (at most %d bytes)",
                        PATH_MAX_BYTES);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] <= ' ' || (unsigned char)p[i] >= 0x7f)
      return unsb_invalid(err, UNSB_CP_ARG_PATH, "path must be printable ASCII without blanks");
  return unsb_cp_check_object_call(p, call->subject != NULL, call->has_owner, err);
}

/* What a call sends besides its body; owns its strings. */
typedef struct {
  char *url;
  unsb_cp_headers headers;
} prepared;

static void prepared_free(prepared *p) {
  free(p->url);
  unsb_cp_headers_free(&p->headers);   /* wipes the Authorization line */
}

static int prepare(unsb_cp *c, const unsb_cp_call *call, prepared *p, unsb_error *err) {
  char traceparent[UNSB_TRACEPARENT_LEN + 1];
  memset(p, 0, sizeof *p);
  if (unsb_cp_check_call(call, err) != 0) return -1;
  if (!call->token && !c->token)
    return unsb_fail(err, UNSB_ECREDENTIALS,
                     "no Control Plane token: pass token= or set " UNSB_ENV_CP_TOKEN
                     " (nothing was sent)");
  if (call->traceparent) {
    /* exact length first: the header builder parses what is copied here */
    if (strlen(call->traceparent) != UNSB_TRACEPARENT_LEN)
      return unsb_fail(err, UNSB_EVALIDATION, "traceparent is malformed");
    memcpy(traceparent, call->traceparent, UNSB_TRACEPARENT_LEN + 1);
  } else if (unsb_trace_outbound(call->trace_id, call->trace_flags, traceparent, err) != 0) {
    return -1;
  }
  unsb_cp_header_opts o = {
    .token = call->token ? call->token : c->token,
    .subject = call->subject,
    .tenant = c->tenant,
    .traceparent = traceparent,
    .has_body = call->body != NULL || call->has_body_fd,
    .content_type = call->content_type,
    .mcp_tool = call->mcp_tool,
    .streaming = call->streaming,
  };
  if (unsb_cp_headers_build(&o, &p->headers, err) != 0) return -1;
  if (asprintf(&p->url, "%s%s", c->url, call->path) < 0) {
    p->url = NULL;
    prepared_free(p);
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  return 0;
}

static unsb_http_request to_http(const unsb_cp *c, const unsb_cp_call *call, const prepared *p) {
  unsb_http_request r = {
    .method = call->method, .url = p->url,
    .headers = (const char *const *)p->headers.lines, .n_headers = p->headers.n,
    .body = call->body, .body_len = call->body ? call->body_len : 0,
    .has_body_fd = call->has_body_fd, .body_fd = call->body_fd, .body_fd_len = call->body_fd_len,
    .timeout_ms = call->timeout_ms > 0 ? call->timeout_ms : c->timeout_ms,
    .stream = call->stream, .large = call->large, .capture = call->capture,
    .n_capture = call->n_capture,
  };
  return r;
}

unsb_http_xfer *unsb_cp_open(unsb_cp *c, const unsb_cp_call *call, unsb_error *err) {
  prepared p;
  unsb_http_xfer *x;
  if (prepare(c, call, &p, err) != 0) return NULL;
  unsb_http_request r = to_http(c, call, &p);
  x = unsb_http_open(c->http, &r, err);   /* libcurl has copied the URL and headers */
  prepared_free(&p);
  return x;
}
