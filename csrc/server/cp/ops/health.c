/*
** Operations and identity routes: liveness, readiness, health, metrics,
** the auth methods (local login only: OIDC is not emulated), logout,
** whoami with its capabilities, the usable templates, monitoring.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/auth/auth.h"
#include "server/cp/ops/ops.h"
#include "server/cp/admin/admin.h"
#include "server/http/counters.h"
#include "server/cp/tables/sandboxes.h"
#include "server/cp/tables/tenants.h"
#include "server/cp/tables/workspaces.h"
#include "server/runtime/runtime.h"
#include "server/store/db.h"
#include "server/store/ledger.h"

int ux_cp_livez(ux_cp_call *c) {
  return ux_cp_ok(c, 200, json_pack("{s:s}", "status", "alive"));
}

int ux_cp_readyz(ux_cp_call *c) {
  if (atomic_load(&c->cp->shutting_down))
    return ux_cp_ok(c, 503, json_pack("{s:s}", "status", "shutting down"));
  return ux_cp_ok(c, 200, json_pack("{s:s}", "status", "ready"));
}

int ux_cp_healthz(ux_cp_call *c) {
  if (atomic_load(&c->cp->shutting_down))
    return ux_cp_ok(c, 503, json_pack("{s:s,s:s}", "error", "shutting down",
                                      "diagnosis", "the server is draining before it stops"));
  if (ux_db_ping(c->cp->srv->store) < 0)
    return ux_cp_ok(c, 503, json_pack("{s:s,s:s}", "error", "database unavailable",
                                      "diagnosis", "the SQLite store did not answer a query"));
  return ux_cp_ok(c, 200, json_pack("{s:s,s:s,s:s,s:s}", "status", "ok", "database", "ok",
                                    "kubernetes", "ok", "object_storage", "ok"));
}

int ux_cp_metrics_route(ux_cp_call *c) {
  size_t len;
  char *text = ux_counters_text(c->cp->metrics, "sandbox_control_plane_requests_total",
                                "Requests answered, by route and status.", &len);
  char gauges[2048];
  int g = snprintf(gauges, sizeof gauges,
    "# HELP sandbox_control_plane_workspaces Workspaces in the store.\n"
    "# TYPE sandbox_control_plane_workspaces gauge\n"
    "sandbox_control_plane_workspaces %lld\n"
    "# HELP sandbox_control_plane_runtimes_live Runtimes pending or running.\n"
    "# TYPE sandbox_control_plane_runtimes_live gauge\n"
    "sandbox_control_plane_runtimes_live %lld\n",
    ux_workspaces_count(c->cp->srv->store), ux_sandboxes_live_count(c->cp->srv->store));
  ux_ledger_usage u;
  if (g > 0 && (size_t)g < sizeof gauges && ux_ledger_usage_of(c->cp->srv->store, NULL, &u) == 0) {
    g += snprintf(gauges + g, sizeof gauges - (size_t)g,
      "# HELP sandbox_control_plane_storage_bytes Bytes stored by all tenants and keys, by kind.\n"
      "# TYPE sandbox_control_plane_storage_bytes gauge\n");
    for (int k = 0; k < UX_LEDGER_KINDS && (size_t)g < sizeof gauges; k++)
      g += snprintf(gauges + g, sizeof gauges - (size_t)g, "sandbox_control_plane_storage_bytes{kind=\"%s\"} %llu\n",
                    ux_ledger_kind_name((ux_ledger_kind)k), u.kind[k].bytes);
    if ((size_t)g < sizeof gauges)
      g += snprintf(gauges + g, sizeof gauges - (size_t)g,
        "# HELP sandbox_control_plane_storage_budget_bytes The most all of it may take.\n"
        "# TYPE sandbox_control_plane_storage_budget_bytes gauge\n"
        "sandbox_control_plane_storage_budget_bytes %llu\n", u.limit);
  }
  if (g < 0 || (size_t)g >= sizeof gauges) g = (int)strlen(gauges);
  char *all = text ? realloc(text, len + (size_t)g + 1) : NULL;
  if (!all) { free(text); return ux_cp_fail(c, 500, "out of memory"); }
  memcpy(all + len, gauges, (size_t)g + 1);
  ux_reply_raw(c->r, 200, "text/plain; version=0.0.4; charset=utf-8", all, len + (size_t)g);
  free(all);
  return 0;
}

int ux_cp_auth_methods(ux_cp_call *c) {
  return ux_cp_ok(c, 200, json_pack("{s:b,s:b}", "local_login", 1, "oidc", 0));
}

/* OIDC login and callback: browser sign-in is not emulated (oidc:false). */
int ux_cp_not_emulated(ux_cp_call *c) {
  return ux_cp_fail(c, 404, "not found");
}

/* Bearer credentials have no session to end: the cookies of a browser
** session are cleared, which here means an empty 204. */
int ux_cp_logout(ux_cp_call *c) {
  ux_reply_header(c->r, "Set-Cookie", "sandbox_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax");
  return ux_reply_empty(c->r, 204);
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *capabilities(const ux_cp_call *c) {
  const char *caps[16] = { "monitoring:read", "sandboxes:write", "templates:read",
                           "workspaces:read", "workspaces:write" };
  size_t n = 5;
  if (ux_id_global(&c->id)) {
    caps[n++] = "nodes:read";
    caps[n++] = "workspaces:read:all";
    caps[n++] = "keys:write";
    caps[n++] = "templates:read:all";
    caps[n++] = "tenants:write";
    if (c->cp->registries) caps[n++] = "templates:write";
  }
  qsort(caps, n, sizeof caps[0], by_string);
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(caps[i]));
  return arr;
}

int ux_cp_whoami(ux_cp_call *c) {
  const ux_identity *id = &c->id;
  json_t *j = json_object();
  json_object_set_new(j, "kind", json_string(ux_id_kind_name(id)));
  json_object_set_new(j, "tenant_id", id->tenant[0] ? json_string(id->tenant) : json_null());
  json_object_set_new(j, "key_id", id->key_id[0] ? json_string(id->key_id) : json_null());
  json_object_set_new(j, "acting_subject", id->subject[0] ? json_string(id->subject) : json_null());
  json_object_set_new(j, "capabilities", capabilities(c));
  if (id->tenant[0]) {
    json_t *t = ux_tenants_usage(c->cp->srv->store, id->tenant);
    if (t) json_object_set_new(j, "tenant", t);
  }
  return ux_cp_ok(c, 200, j);
}

int ux_cp_templates(ux_cp_call *c) {
  json_t *ids = ux_cp_template_ids(c->cp, c->id.tenant);
  if (!ids) return ux_cp_store_failed(c, "template lookup failed");
  return ux_cp_ok(c, 200, json_pack("{s:o}", "templates", ids));
}

/* Live runtimes of the workspaces the identity sees. */
static json_t *visible_runtimes(ux_cp_call *c) {
  json_t *rows = ux_sandboxes_live(c->cp->srv->store);
  json_t *out = json_array(), *row;
  size_t i;
  json_array_foreach(rows, i, row) {
    json_t *ws = json_pack("{s:O,s:O,s:O}", "id", json_object_get(row, "wid"),
                           "tenant", json_object_get(row, "tenant"),
                           "subject", json_object_get(row, "subject"));
    ux_rt_info info;
    if (ux_cp_visible(&c->id, ws) &&
        ux_runtimes_info(c->cp->rts, json_string_value(json_object_get(row, "id")), &info) == 0)
      json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", info.sb_id,
        "workspace_id", info.ws_id, "status", info.status == UX_RT_RUNNING ? "running" : "pending",
        "template", info.template_id, "created_at", ux_cp_time(info.created_at)));
    json_decref(ws);
  }
  json_decref(rows);
  return out;
}

int ux_cp_monitoring(ux_cp_call *c) {
  int cluster = ux_id_global(&c->id);
  json_t *runtimes = visible_runtimes(c), *nodes = json_array();
  if (cluster) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    json_array_append_new(nodes, json_pack("{s:s,s:s,s:i,s:s}", "name", host, "status", "ready",
      "cpus", (int)sysconf(_SC_NPROCESSORS_ONLN), "runtime", "bubblewrap"));
  }
  /* the platform's MonitoringSnapshot counts nodes and runtimes in metrics */
  json_t *metrics = json_pack("{s:I,s:I,s:I}", "nodes", (json_int_t)json_array_size(nodes),
    "runtimes", (json_int_t)json_array_size(runtimes), "runtimes_live", (json_int_t)json_array_size(runtimes));
  /* storage: a tenant's own against its quota; the cluster's against the budget */
  char party[UX_LEDGER_PARTY_MAX];
  ux_ledger_usage u;
  if (c->id.tenant[0]) ux_ledger_tenant(party, sizeof party, c->id.tenant);
  if (ux_ledger_usage_of(c->cp->srv->store, c->id.tenant[0] ? party : NULL, &u) == 0) {
    json_object_set_new(metrics, "storage_used_bytes", json_integer((json_int_t)u.used));
    json_object_set_new(metrics, c->id.tenant[0] ? "storage_quota_bytes" : "storage_budget_bytes",
                        json_integer((json_int_t)u.limit));
  }
  return ux_cp_ok(c, 200, json_pack("{s:s,s:b,s:o,s:o,s:o}", "scope", cluster ? "cluster" : "tenant",
    "nodes_visible", cluster, "metrics", metrics, "nodes", nodes, "runtimes", runtimes));
}
