/*
** The route table and the request pipeline: health needs no auth;
** everything else is authenticated first (so an unauthenticated prober
** learns nothing, not even which routes exist), then faults are applied,
** then the matching route runs, or 404/405 is answered. The execution
** API's router for the transport (http.h) is here too: it picks the body
** policy of a request from the same table, and passes the headers the
** handlers need.
*/
#include "server/exec/routes.h"

#include <string.h>

#include "server/exec/auth.h"
#include "server/exec/images.h"
#include "server/exec/metrics.h"
#include "server/http/faults.h"
#include "server/ids.h"

enum { R_FAULTS = 1, R_STREAM_BODY = 2, R_LENIENT = 4 };

typedef struct route {
  const char *method;
  const char *pattern;
  ux_handler handler;
  unsigned flags;         /* R_FAULTS: only with --enable-faults;
                          ** R_LENIENT: a variant route, only with --lenient */
} route;

static int h_faults(ux_req *r, const char *id) {
  (void)id;
  return ux_faults_route(r, r->srv->faults);
}

static const route ROUTES[] = {
  { "GET",    "/health",               ux_h_health, 0 },
  { "HEAD",   "/health",               ux_h_health, 0 },
  { "GET",    "/metrics",              ux_h_metrics, 0 },
  { "POST",   "/keys/validate",        ux_h_keys_validate, 0 },
  { "POST",   "/execute",              ux_h_execute, 0 },
  { "POST",   "/execute/async",        ux_h_execute_async, 0 },
  { "GET",    "/jobs",                 ux_h_jobs_list, 0 },
  { "GET",    "/jobs/*",               ux_h_job_get, 0 },
  { "DELETE", "/jobs/*",               ux_h_job_cancel, 0 },
  { "GET",    "/languages",            ux_h_languages, 0 },
  { "GET",    "/sessions",             ux_h_sessions_list, 0 },
  { "POST",   "/sessions",             ux_h_session_create, 0 },
  { "GET",    "/sessions/*",           ux_h_session_get, 0 },
  { "DELETE", "/sessions/*",           ux_h_session_delete, 0 },
  { "POST",   "/sessions/*/shell",     ux_h_session_shell, 0 },
  { "GET",    "/sessions/*/shell",     ux_h_session_terminal, 0 },
  { "POST",   "/sessions/*/snapshot",  ux_h_session_snapshot, 0 },
  { "POST",   "/sessions/*/freeze",    ux_h_session_freeze, 0 },
  { "POST",   "/sessions/*/unfreeze",  ux_h_session_unfreeze, 0 },
  { "POST",   "/sessions/*/boost",     ux_h_session_boost, 0 },
  { "POST",   "/sessions/*/unboost",   ux_h_session_unboost, 0 },
  { "GET",    "/services",             ux_h_services_list, 0 },
  { "POST",   "/services",             ux_h_service_create, 0 },
  { "GET",    "/services/*",           ux_h_service_get, 0 },
  { "DELETE", "/services/*",           ux_h_service_delete, 0 },
  { "POST",   "/services/*/execute",   ux_h_service_execute, 0 },
  { "GET",    "/services/*/logs",      ux_h_service_logs, 0 },
  { "POST",   "/services/*/snapshot",  ux_h_service_snapshot, 0 },
  { "PATCH",  "/services/*",           ux_h_service_patch, 0 },
  { "POST",   "/services/*/freeze",    ux_h_service_freeze, 0 },
  { "POST",   "/services/*/unfreeze",  ux_h_service_unfreeze, 0 },
  { "POST",   "/services/*/lock",      ux_h_service_lock, 0 },
  { "POST",   "/services/*/unlock",    ux_h_service_unlock, 0 },
  { "PUT",    "/services/*/domains",   ux_h_service_domains, 0 },
  { "POST",   "/services/*/redeploy",  ux_h_service_redeploy, 0 },
  { "GET",    "/services/*/env",       ux_h_service_env_get, 0 },
  { "PUT",    "/services/*/env",       ux_h_service_env_put, 0 },
  { "DELETE", "/services/*/env",       ux_h_service_env_delete, 0 },
  { "POST",   "/services/*/env/export", ux_h_service_env_export, 0 },
  { "GET",    "/snapshots",            ux_h_snapshots_list, 0 },
  { "POST",   "/snapshots",            ux_h_snapshot_create, 0 },
  { "POST",   "/snapshots/*/clone",    ux_h_snapshot_clone, 0 },
  { "GET",    "/snapshots/*",          ux_h_snapshot_get, 0 },
  { "DELETE", "/snapshots/*",          ux_h_snapshot_delete, 0 },
  { "POST",   "/snapshots/*/restore",  ux_h_snapshot_restore, 0 },
  { "POST",   "/snapshots/*/lock",     ux_h_snapshot_lock, 0 },
  { "POST",   "/snapshots/*/unlock",   ux_h_snapshot_unlock, 0 },
  { "POST",   "/images",               ux_h_image_publish, 0 },
  { "GET",    "/images",               ux_h_images_list, 0 },
  { "GET",    "/images/owned",         ux_h_images_owned, 0 },
  { "GET",    "/images/shared",        ux_h_images_shared, 0 },
  { "GET",    "/images/public",        ux_h_images_public, 0 },
  { "GET",    "/images/*",             ux_h_image_get, 0 },
  { "DELETE", "/images/*",             ux_h_image_delete, 0 },
  { "POST",   "/images/*/lock",        ux_h_image_lock, 0 },
  { "POST",   "/images/*/unlock",      ux_h_image_unlock, 0 },
  { "POST",   "/images/*/visibility",  ux_h_image_visibility, 0 },
  { "POST",   "/images/*/grant",       ux_h_image_grant, 0 },
  { "POST",   "/images/*/revoke",      ux_h_image_revoke, 0 },
  { "GET",    "/images/*/trusted",     ux_h_image_trusted, 0 },
  { "POST",   "/images/*/transfer",    ux_h_image_transfer, 0 },
  { "POST",   "/images/*/spawn",       ux_h_image_spawn, 0 },
  { "POST",   "/images/*/clone",       ux_h_image_clone, 0 },
  /* the SDKs' variant routes (spec §4), with --lenient only */
  { "POST",   "/sessions/*/execute",   ux_h_session_shell, R_LENIENT },
  { "POST",   "/services/*/env",       ux_h_service_env_post, R_LENIENT },
  { "POST",   "/images/publish",       ux_h_image_publish, R_LENIENT },
  { "POST",   "/images/*/access",      ux_h_image_access_add, R_LENIENT },
  { "GET",    "/images/*/access",      ux_h_image_trusted, R_LENIENT },
  { "DELETE", "/images/*/access/*",    ux_h_image_access_del, R_LENIENT },
  { "POST",   "/_faults",              h_faults, R_FAULTS },
  /* test-only routes of the transport (faults_stream.c); a streamed
  ** body is signed as if it were empty: it is read after the check */
  { "PUT",    "/_faults/echo-hash",    ux_faults_echo_hash, R_FAULTS | R_STREAM_BODY },
  { "POST",   "/_faults/stream",       ux_faults_stream, R_FAULTS },
  { "GET",    "/_faults/stats",        ux_faults_stats, R_FAULTS },
};
#define N_ROUTES (sizeof ROUTES / sizeof ROUTES[0])

/* Matches path against pattern; a "*" segment is copied into id.
** Returns 1 on a match. */
static int match(const char *pattern, const char *path, char *id, size_t idlen) {
  while (*pattern && *path) {
    if (*pattern == '*') {
      size_t n = strcspn(path, "/");
      if (n == 0 || n >= idlen) return 0;
      memcpy(id, path, n);
      id[n] = '\0';
      path += n;
      pattern++;
    } else if (*pattern++ != *path++) return 0;
  }
  return !*pattern && !*path;
}

/* Health and metrics need no key, like a load balancer's probe or a
** Prometheus scrape; neither names a user's resource. */
static int is_open(const char *path) {
  return !strcmp(path, "/health") || !strcmp(path, "/metrics");
}

/* Authenticates r, applies faults, runs its route; returns the pattern
** it matched (NULL when none ran), for the request counters. */
static const char *route_one(ux_req *r, const char *authz, const char *ts, const char *sig) {
  char id[1024] = "";
  int open_route = is_open(r->path);
  if (ux_auth_unsigned_terminal(r, authz)) {
    if (ux_auth_terminal_owner(r, r->owner_buf, sizeof r->owner_buf) < 0) return "unauthenticated";
  } else if (!open_route && ux_auth_check(r, authz, ts, sig, r->owner_buf, sizeof r->owner_buf) < 0) {
    return "unauthenticated";
  }
  r->authenticated = !open_route;
  if (r->srv->faults && ux_faults_apply(r->srv->faults, r)) return "fault";

  const route *found = NULL;
  char allow[64] = "";
  for (size_t i = 0; i < N_ROUTES; i++) {
    if ((ROUTES[i].flags & R_FAULTS) && !r->srv->faults) continue;
    if ((ROUTES[i].flags & R_LENIENT) && !r->srv->cfg.lenient) continue;
    if (!match(ROUTES[i].pattern, r->path, id, sizeof id)) continue;
    if (!strcmp(ROUTES[i].method, r->method)) { found = &ROUTES[i]; break; }
    if (strlen(allow) + strlen(ROUTES[i].method) + 3 < sizeof allow) {
      if (allow[0]) strcat(allow, ", ");
      strcat(allow, ROUTES[i].method);
    }
  }
  if (!found && allow[0]) {
    ux_reply_error(r, 405, "method_not_allowed", "%s is not allowed on this path", r->method);
    memcpy(r->reply.allow, allow, sizeof allow);
    return "unmatched";
  }
  if (!found) {
    ux_reply_error(r, 404, "not_found", "no such route");
    return "unmatched";
  }
  if (strchr(found->pattern, '*') && !ux_valid_id(id)) {
    ux_reply_error(r, 404, "not_found", "no such resource");
    return found->pattern;
  }
  found->handler(r, id);
  if (!r->reply.status) ux_reply_error(r, 500, "internal_error", "no reply");
  return found->pattern;
}

void ux_route(ux_req *r, const char *authz, const char *ts, const char *sig) {
  const char *pattern = route_one(r, authz, ts, sig);
  ux_exec_metrics_request(pattern, r->reply.status);
}

/* ------------------------------------------- the transport's router */

/* The body limit of r's route: a streaming route's own, or --max-body. */
static unsigned long long body_limit(const ux_server *srv, const ux_req *r, int *stream) {
  char id[1024];
  *stream = 0;
  for (size_t i = 0; i < N_ROUTES; i++) {
    if (!(ROUTES[i].flags & R_STREAM_BODY) || ((ROUTES[i].flags & R_FAULTS) && !srv->faults))
      continue;
    if (!strcmp(ROUTES[i].method, r->method) && match(ROUTES[i].pattern, r->path, id, sizeof id)) {
      *stream = 1;
      return UX_FAULTS_STREAM_MAX;
    }
  }
  return srv->cfg.max_body;
}

static void too_big(ux_req *r, unsigned long long limit) {
  ux_reply_error(r, 413, "payload_too_large", "request body exceeds %llu bytes", limit);
}

/* On libmicrohttpd's thread, headers in: never blocks. */
static void exec_admit(void *ctx, ux_req *r, ux_body_policy *p) {
  ux_server *srv = ctx;
  r->srv = srv;
  p->limit = body_limit(srv, r, &p->stream);
  p->probe = !strcmp(r->path, "/health");
  if (r->content_length >= 0 && (unsigned long long)r->content_length > p->limit)
    too_big(r, p->limit);                      /* before reading the body */
}

/* The header check before a buffered body (http.h): refused at once when
** the headers are wrong whatever the key; for an unknown key, or a route
** that reads no body, the body is thrown away unseen, so none is ever
** held for a request that is not authenticated. */
static void exec_authorize(void *ctx, ux_req *r, ux_body_policy *p) {
  ux_server *srv = ctx;
  r->srv = srv;
  if (is_open(r->path) || ux_auth_unsigned_terminal(r, ux_req_header(r, "Authorization"))) {
    p->discard = 1;
    return;
  }
  int rc = ux_auth_headers(r, ux_req_header(r, "Authorization"), ux_req_header(r, "X-Timestamp"),
                           ux_req_header(r, "X-Signature"));
  if (rc < 0) ux_exec_metrics_request("unauthenticated", r->reply.status);
  else if (rc > 0) p->discard = 1;
}

static void exec_handle(void *ctx, ux_req *r) {
  ux_server *srv = ctx;
  int stream;
  r->srv = srv;
  if (r->body_overflow) {                      /* a chunked body grew too large */
    too_big(r, body_limit(srv, r, &stream));
    return;
  }
  r->sudo_challenge = ux_req_header(r, "X-Sudo-Challenge");
  r->sudo_otp = ux_req_header(r, "X-Sudo-OTP");
  ux_route(r, ux_req_header(r, "Authorization"), ux_req_header(r, "X-Timestamp"),
           ux_req_header(r, "X-Signature"));
}

void ux_exec_router(ux_server *srv, ux_http_router *out) {
  memset(out, 0, sizeof *out);
  out->handle = exec_handle;
  out->admit = exec_admit;
  out->authorize = exec_authorize;
  out->ctx = srv;
}
