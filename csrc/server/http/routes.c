/*
** The route table and the request pipeline: health needs no auth;
** everything else is authenticated first (so an unauthenticated prober
** learns nothing, not even which routes exist), then faults are applied,
** then the matching route runs, or 404/405 is answered.
*/
#include "server/http/routes.h"

#include <string.h>

#include "server/exec/auth.h"
#include "server/http/faults.h"
#include "server/ids.h"

typedef struct route {
  const char *method;
  const char *pattern;
  ux_handler handler;
} route;

static int h_faults(ux_req *r, const char *id) {
  (void)id;
  return ux_faults_route(r, r->srv->faults);
}

static const route ROUTES[] = {
  { "GET",    "/health",               ux_h_health },
  { "HEAD",   "/health",               ux_h_health },
  { "POST",   "/keys/validate",        ux_h_keys_validate },
  { "POST",   "/execute",              ux_h_execute },
  { "POST",   "/execute/async",        ux_h_execute_async },
  { "GET",    "/jobs",                 ux_h_jobs_list },
  { "GET",    "/jobs/*",               ux_h_job_get },
  { "DELETE", "/jobs/*",               ux_h_job_cancel },
  { "GET",    "/languages",            ux_h_languages },
  { "GET",    "/sessions",             ux_h_sessions_list },
  { "POST",   "/sessions",             ux_h_session_create },
  { "GET",    "/sessions/*",           ux_h_session_get },
  { "DELETE", "/sessions/*",           ux_h_session_delete },
  { "POST",   "/sessions/*/shell",     ux_h_session_shell },
  { "POST",   "/sessions/*/snapshot",  ux_h_session_snapshot },
  { "GET",    "/services",             ux_h_services_list },
  { "POST",   "/services",             ux_h_service_create },
  { "GET",    "/services/*",           ux_h_service_get },
  { "DELETE", "/services/*",           ux_h_service_delete },
  { "POST",   "/services/*/execute",   ux_h_service_execute },
  { "GET",    "/services/*/logs",      ux_h_service_logs },
  { "POST",   "/services/*/snapshot",  ux_h_service_snapshot },
  { "GET",    "/snapshots",            ux_h_snapshots_list },
  { "GET",    "/snapshots/*",          ux_h_snapshot_get },
  { "DELETE", "/snapshots/*",          ux_h_snapshot_delete },
  { "POST",   "/snapshots/*/restore",  ux_h_snapshot_restore },
  { "POST",   "/snapshots/*/lock",     ux_h_snapshot_lock },
  { "POST",   "/snapshots/*/unlock",   ux_h_snapshot_unlock },
  { "POST",   "/_faults",              h_faults },
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

void ux_route(ux_req *r, const char *authz, const char *ts, const char *sig) {
  char id[1024] = "";
  int is_health = !strcmp(r->path, "/health");
  if (!is_health && ux_auth_check(r, authz, ts, sig, r->owner_buf, sizeof r->owner_buf) < 0) return;
  if (r->srv->faults && ux_faults_apply(r->srv->faults, r)) return;

  const route *found = NULL;
  char allow[64] = "";
  for (size_t i = 0; i < N_ROUTES; i++) {
    if (ROUTES[i].handler == h_faults && !r->srv->faults) continue;
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
    return;
  }
  if (!found) {
    ux_reply_error(r, 404, "not_found", "no such route");
    return;
  }
  if (strchr(found->pattern, '*') && !ux_valid_id(id)) {
    ux_reply_error(r, 404, "not_found", "no such resource");
    return;
  }
  found->handler(r, id);
  if (!r->reply.status) ux_reply_error(r, 500, "internal_error", "no reply");
}
