/*
** The Control Plane's router: the route table of control-plane-routes.tsv
** and the pipeline every request goes through, in the spec's order:
**   request id (trace context, §2) → route match (a malformed path id
**   matches nothing) → credentials (§3) → ownership (§4) → body rules
**   (§2) → the tenant's share of agent calls (routes that reach a
**   runtime's agent; 429 past it) → handler → metrics.
** An unknown path is 404 {"error":"not found"} for GET, POST and PUT; a
** DELETE authenticates first, so it says 401 to a caller without a
** credential.
*/
#include "server/cp/plane/router.h"

#include <stdio.h>
#include <string.h>

#include "core/cpshapes.h"
#include "core/trace.h"
#include "server/cp/auth/auth.h"
#include "server/cp/admin/admin.h"
#include "server/cp/objects/routes.h"
#include "server/cp/ops/ops.h"
#include "server/cp/sandboxes/sandboxes.h"
#include "server/cp/workspaces/checkpoints.h"
#include "server/cp/workspaces/workspaces.h"
#include "server/http/counters.h"
#include "server/cp/workspaces/files.h"
#include "server/cp/mcp/mcp.h"
#include "server/share.h"

enum { B_NONE, B_JSON, B_STREAM };
enum { OWN_NONE, OWN_WS, OWN_SB };

typedef struct cp_route {
  const char *method;
  const char *pattern;    /* {ws} {sb} {cp} {tenant} {key} {template} */
  ux_cred cred;
  int own;                /* +ownership: the first param is that kind */
  int body;
  ux_cp_handler handler;
} cp_route;

#define WS "/v1/workspaces/{ws}"
static const cp_route ROUTES[] = {
  { "GET",  "/livez", UX_CRED_NONE, 0, B_NONE, ux_cp_livez },
  { "GET",  "/readyz", UX_CRED_NONE, 0, B_NONE, ux_cp_readyz },
  { "GET",  "/healthz", UX_CRED_NONE, 0, B_NONE, ux_cp_healthz },
  { "GET",  "/metrics", UX_CRED_NONE, 0, B_NONE, ux_cp_metrics_route },
  { "GET",  "/v1/auth/methods", UX_CRED_NONE, 0, B_NONE, ux_cp_auth_methods },
  { "GET",  "/v1/auth/oidc/login", UX_CRED_NONE, 0, B_NONE, ux_cp_not_emulated },
  { "GET",  "/v1/auth/oidc/callback", UX_CRED_NONE, 0, B_NONE, ux_cp_not_emulated },
  { "POST", "/v1/auth/logout", UX_CRED_CP, 0, B_NONE, ux_cp_logout },
  { "GET",  "/v1/whoami", UX_CRED_CP, 0, B_NONE, ux_cp_whoami },
  { "GET",  "/v1/templates", UX_CRED_CP, 0, B_NONE, ux_cp_templates },
  { "GET",  "/v1/workspaces", UX_CRED_CP, 0, B_NONE, ux_cp_ws_list },
  { "POST", "/v1/workspaces", UX_CRED_CP, 0, B_JSON, ux_cp_ws_create },
  { "POST", "/v1/workspaces/resolve", UX_CRED_CP, 0, B_JSON, ux_cp_ws_resolve },
  { "DELETE", WS, UX_CRED_CP, OWN_WS, B_NONE, ux_cp_ws_delete },
  { "GET",  WS "/checkpoints", UX_CRED_CP, OWN_WS, B_NONE, ux_cp_checkpoint_list },
  { "POST", WS "/checkpoints", UX_CRED_CP, OWN_WS, B_NONE, ux_cp_checkpoint_create },
  { "POST", WS "/checkpoints/{cp}/restore", UX_CRED_CP, OWN_WS, B_JSON, ux_cp_checkpoint_restore },
  { "DELETE", WS "/checkpoints/{cp}", UX_CRED_CP, OWN_WS, B_NONE, ux_cp_checkpoint_delete },
  { "GET",  WS "/files/list", UX_CRED_WS_OR_CP, OWN_WS, B_NONE, ux_cp_files },
  { "GET",  WS "/files/read", UX_CRED_WS_OR_CP, OWN_WS, B_NONE, ux_cp_files },
  { "GET",  WS "/files/read-binary", UX_CRED_WS_OR_CP, OWN_WS, B_NONE, ux_cp_files },
  { "GET",  WS "/files/glob", UX_CRED_WS_OR_CP, OWN_WS, B_NONE, ux_cp_files },
  { "GET",  WS "/files/grep", UX_CRED_WS_OR_CP, OWN_WS, B_NONE, ux_cp_files },
  { "POST", WS "/files/write", UX_CRED_WS, 0, B_JSON, ux_cp_files },
  { "POST", WS "/files/write-binary", UX_CRED_WS, 0, B_JSON, ux_cp_files },
  { "POST", WS "/files/edit", UX_CRED_WS, 0, B_JSON, ux_cp_files },
  { "POST", WS "/objects/import", UX_CRED_WS, 0, B_JSON, ux_cp_obj_import },
  { "POST", WS "/objects/export", UX_CRED_WS, 0, B_JSON, ux_cp_obj_export },
  { "GET",  "/v1/sandboxes", UX_CRED_CP, 0, B_NONE, ux_cp_sb_list },
  { "POST", "/v1/sandboxes", UX_CRED_CP, 0, B_JSON, ux_cp_sb_create },
  { "GET",  "/v1/monitoring", UX_CRED_CP, 0, B_NONE, ux_cp_monitoring },
  { "GET",  "/v1/sandboxes/{sb}", UX_CRED_CP, OWN_SB, B_NONE, ux_cp_sb_get },
  { "DELETE", "/v1/sandboxes/{sb}", UX_CRED_CP, OWN_SB, B_NONE, ux_cp_sb_delete },
  { "POST", "/v1/sandboxes/{sb}/token", UX_CRED_CP, OWN_SB, B_NONE, ux_cp_sb_token },
  /* the MCP endpoint reads its body itself: its own limit and JSON-RPC errors */
  { "POST", "/v1/sandboxes/{sb}/mcp", UX_CRED_SB, 0, B_NONE, ux_cp_mcp },
  { "GET",  "/v1/storage/content", UX_CRED_TICKET, 0, B_NONE, ux_cp_content_get },
  { "PUT",  "/v1/storage/content", UX_CRED_TICKET, 0, B_STREAM, ux_cp_content_put },
  { "GET",  "/v1/storage/objects", UX_CRED_CP, 0, B_NONE, ux_cp_obj_get },
  { "POST", "/v1/storage/objects", UX_CRED_CP, 0, B_JSON, ux_cp_obj_post },
  { "DELETE", "/v1/storage/objects", UX_CRED_CP, 0, B_NONE, ux_cp_obj_delete },
  { "GET",  "/v1/storage/objects/list", UX_CRED_CP, 0, B_NONE, ux_cp_obj_list },
  { "GET",  "/v1/storage/objects/stat", UX_CRED_CP, 0, B_NONE, ux_cp_obj_stat },
  { "GET",  "/v1/storage/objects/versions", UX_CRED_CP, 0, B_NONE, ux_cp_obj_versions },
  { "POST", "/v1/storage/tickets", UX_CRED_CP, 0, B_JSON, ux_cp_obj_ticket },
  { "GET",  "/v1/admin/tenants", UX_CRED_ADMIN, 0, B_NONE, ux_cp_tenants_list },
  { "POST", "/v1/admin/tenants", UX_CRED_ADMIN, 0, B_JSON, ux_cp_tenants_create },
  { "DELETE", "/v1/admin/tenants/{tenant}", UX_CRED_ADMIN, 0, B_NONE, ux_cp_tenant_suspend },
  { "POST", "/v1/admin/tenants/{tenant}/status", UX_CRED_ADMIN, 0, B_JSON, ux_cp_tenant_status },
  { "GET",  "/v1/admin/tenants/{tenant}/keys", UX_CRED_ADMIN, 0, B_NONE, ux_cp_tenant_keys_list },
  { "POST", "/v1/admin/tenants/{tenant}/keys", UX_CRED_ADMIN, 0, B_JSON, ux_cp_tenant_keys_create },
  { "GET",  "/v1/admin/tenants/{tenant}/owner-tenants", UX_CRED_ADMIN, 0, B_NONE,
    ux_cp_owner_tenants_list },
  { "POST", "/v1/admin/tenants/{tenant}/owner-tenants", UX_CRED_ADMIN, 0, B_JSON,
    ux_cp_owner_tenants_add },
  { "DELETE", "/v1/admin/tenants/{tenant}/owner-tenants/{tenant}", UX_CRED_ADMIN, 0, B_NONE,
    ux_cp_owner_tenants_revoke },
  { "GET",  "/v1/admin/keys", UX_CRED_ADMIN, 0, B_NONE, ux_cp_admin_keys_list },
  { "POST", "/v1/admin/keys", UX_CRED_ADMIN, 0, B_JSON, ux_cp_admin_keys_create },
  { "DELETE", "/v1/admin/keys/{key}", UX_CRED_ADMIN, 0, B_NONE, ux_cp_key_revoke },
  { "GET",  "/v1/admin/audit", UX_CRED_ADMIN, 0, B_NONE, ux_cp_audit_list },
  { "GET",  "/v1/admin/templates", UX_CRED_ADMIN, 0, B_NONE, ux_cp_admin_templates_list },
  { "POST", "/v1/admin/templates", UX_CRED_ADMIN, 0, B_JSON, ux_cp_admin_templates_put },
  { "DELETE", "/v1/admin/templates/{template}", UX_CRED_ADMIN, 0, B_NONE,
    ux_cp_admin_templates_delete },
};
#define N_ROUTES (sizeof ROUTES / sizeof ROUTES[0])

/* The handlers that call a runtime's agent: their requests count in the
** tenant's share of agent calls (cp->agent_calls), so a stopped agent
** holds handler threads of its own tenant only. */
static int calls_agent(const cp_route *rt) {
  ux_cp_handler h = rt->handler;
  return h == ux_cp_files || h == ux_cp_mcp || h == ux_cp_obj_import || h == ux_cp_obj_export ||
         h == ux_cp_checkpoint_create || h == ux_cp_checkpoint_restore;
}

/* ------------------------------------------------------------------
** Matching: a parameter must have its id's shape, or the route does
** not match at all (spec §2: a malformed path id matches no route).
** ---------------------------------------------------------------- */

/* A path parameter has the shape of its kind's id (core/cpshapes.h):
** "ws", "sb", "cp" (checkpoint), "tenant", "key" (16 hex), "template". */
static int valid_param(const char *kind, const char *v) {
  if (!strcmp(kind, "ws")) return unsb_valid_workspace_id(v);
  if (!strcmp(kind, "sb")) return unsb_valid_sandbox_id(v);
  if (!strcmp(kind, "cp")) return unsb_valid_checkpoint_id(v);
  if (!strcmp(kind, "tenant")) return unsb_valid_tenant_id(v);
  if (!strcmp(kind, "key")) return unsb_valid_key_id(v);
  if (!strcmp(kind, "template")) return unsb_valid_template(v);
  return 0;
}

/* Matches path against pattern, copying params into buf (NUL-separated)
** and pointing param[] at them. 1 on a match. */
static int match(const char *pattern, const char *path, char *buf, size_t buflen,
                 const char *param[3]) {
  size_t used = 0, np = 0;
  while (*pattern) {
    if (*pattern == '{') {
      const char *end = strchr(pattern, '}');
      size_t n = strcspn(path, "/");
      char kind[16];
      snprintf(kind, sizeof kind, "%.*s", (int)(end - pattern - 1), pattern + 1);
      if (n == 0 || np >= 3 || used + n + 1 > buflen) return 0;
      memcpy(buf + used, path, n);
      buf[used + n] = '\0';
      if (!valid_param(kind, buf + used)) return 0;
      param[np++] = buf + used;
      used += n + 1;
      path += n;
      pattern = end + 1;
    } else if (*pattern++ != *path++) return 0;
  }
  return *path == '\0';
}

static const cp_route *find(const char *method, const char *path, char *buf, size_t buflen,
                            const char *param[3]) {
  for (size_t i = 0; i < N_ROUTES; i++)
    if (!strcmp(ROUTES[i].method, method) && match(ROUTES[i].pattern, path, buf, buflen, param))
      return &ROUTES[i];
  return NULL;
}

/* ------------------------------------------------------------------
** The pipeline
** ---------------------------------------------------------------- */

/* §2 body rules for JSON routes; 0 with c->body, or -1 with the reply. */
static int read_body(ux_cp_call *c) {
  ux_req *r = c->r;
  if (r->content_length < 0) return ux_cp_fail(c, 400, "Content-Length is required");
  if (r->body_overflow || r->body_len > UX_CP_MAX_BODY)
    return ux_cp_fail(c, 400, "request body is too large");
  json_t *j = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, NULL);
  if (!j) return ux_cp_fail(c, 400, "request body must be valid JSON");
  if (!json_is_object(j)) {
    json_decref(j);
    return ux_cp_fail(c, 400, "request body must be a JSON object");
  }
  c->body = j;
  return 0;
}

static void dispatch(ux_cp *cp, ux_req *r, const cp_route *rt, const char *param[3]) {
  ux_cp_call c;
  memset(&c, 0, sizeof c);
  c.cp = cp;
  c.r = r;
  c.route = rt->pattern;
  memcpy(c.param, param, sizeof c.param);
  if (ux_cp_authenticate(&c, rt->cred, param[0]) != 0) return;
  /* a ticket is verified by its handler (cp/objects/ticket_routes.c), which says so */
  r->authenticated = rt->cred != UX_CRED_NONE && rt->cred != UX_CRED_TICKET;
  json_t *owned = NULL;
  if (rt->own == OWN_WS && !(owned = ux_cp_own_workspace(&c, param[0]))) return;
  if (rt->own == OWN_SB && !(owned = ux_cp_own_sandbox(&c, param[0]))) return;
  json_decref(owned);
  if (rt->body == B_JSON && read_body(&c) != 0) return;
  char party[sizeof c.id.tenant];          /* a copy: the handler owns c.id */
  snprintf(party, sizeof party, "%s", ux_cp_home_tenant(&c.id));
  int agent = calls_agent(rt);
  if (agent && ux_shares_take(cp->agent_calls, party) != 0) {
    r->reply.retry_after = 1;
    ux_cp_fail(&c, 429, "agent call limit reached for tenant %s; retry later", party);
  } else {
    rt->handler(&c);
    if (agent) ux_shares_give(cp->agent_calls, party);
  }
  json_decref(c.body);
}

static void cp_handle(void *ctx, ux_req *r) {
  ux_cp *cp = ctx;
  char buf[512];
  const char *param[3] = { NULL, NULL, NULL };
  const cp_route *rt = find(r->method, r->path, buf, sizeof buf, param);
  if (rt) {
    dispatch(cp, r, rt, param);
  } else if (!strcmp(r->method, "DELETE")) {
    ux_cp_call c;
    memset(&c, 0, sizeof c);
    c.cp = cp;
    c.r = r;
    if (ux_cp_authenticate(&c, UX_CRED_CP, NULL) == 0) ux_cp_fail_req(r, 404, "not found");
  } else {
    ux_cp_fail_req(r, 404, "not found");
  }
  ux_counters_count(cp->metrics, rt ? rt->pattern : "unmatched",
                      r->reply.status ? r->reply.status : 200);
}

/* On libmicrohttpd's thread, headers in: the body policy. Streaming
** routes (object uploads) read their own body, up to their ticket's
** max_bytes; the rest are buffered up to 6 MiB. The three probes may use
** the handler threads kept for probes. */
static void cp_admit(void *ctx, ux_req *r, ux_body_policy *p) {
  (void)ctx;
  char buf[512];
  const char *param[3];
  const cp_route *rt = find(r->method, r->path, buf, sizeof buf, param);
  p->stream = rt && rt->body == B_STREAM;
  p->limit = p->stream ? UX_CP_MAX_STREAM : UX_CP_MAX_BODY;
  p->probe = rt && (rt->handler == ux_cp_livez || rt->handler == ux_cp_readyz ||
                    rt->handler == ux_cp_healthz);
}

/* The header check before a buffered body (http.h): the route's
** credential is checked as dispatch would, and a refusal is answered
** (and counted) at once, so no body is held for a caller without a valid
** bearer. An unknown route is answered as the handler would, before its
** body; a body for a route without a credential in its headers is read
** and thrown away (none of those routes reads one). Ownership and the
** body rules stay the handler's. */
static void cp_authorize(void *ctx, ux_req *r, ux_body_policy *p) {
  ux_cp *cp = ctx;
  char buf[512];
  const char *param[3] = { NULL, NULL, NULL };
  const cp_route *rt = find(r->method, r->path, buf, sizeof buf, param);
  if (!rt) { cp_handle(ctx, r); return; }
  if (rt->cred == UX_CRED_NONE || rt->cred == UX_CRED_TICKET) { p->discard = 1; return; }
  ux_cp_call c;
  memset(&c, 0, sizeof c);
  c.cp = cp;
  c.r = r;
  c.route = rt->pattern;
  if (ux_cp_authenticate(&c, rt->cred, param[0]) != 0)
    ux_counters_count(cp->metrics, rt->pattern, r->reply.status);
}

/* X-Request-Id from trace context: never fails a request. */
static void cp_request_id(void *ctx, const ux_req *r, char *out, size_t outlen) {
  (void)ctx;
  const char *tp = ux_req_header(r, "traceparent"), *rid = ux_req_header(r, "X-Request-Id");
  char trace[UNSB_TRACE_ID_LEN + 1], flags[UNSB_TRACE_FLAGS_LEN + 1];
  unsb_trace_source src;
  unsb_error err;
  if (unsb_trace_resolve(tp, tp ? strlen(tp) : 0, rid, rid ? strlen(rid) : 0, trace, flags,
                         &src, &err) != 0)
    snprintf(trace, sizeof trace, "%032d", 1);
  snprintf(out, outlen, "%s", trace);
}

void ux_cp_router(ux_cp *cp, ux_http_router *out) {
  memset(out, 0, sizeof *out);
  out->handle = cp_handle;
  out->admit = cp_admit;
  out->authorize = cp_authorize;
  out->request_id = cp_request_id;
  out->ctx = cp;
}

int ux_cp_route_count(void) { return (int)N_ROUTES; }
