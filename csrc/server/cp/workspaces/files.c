/*
** File operations (see files.h). One table says, for every REST route,
** its agent op, whether it writes, and which arguments it takes with
** which type: query strings are converted by that table, and nothing
** that is not listed reaches the agent.
*/
#include "server/cp/workspaces/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { A_STR, A_INT, A_FLAG };

typedef struct { const char *name; int type; } arg;

static const struct route {
  const char *route, *op, *tool;
  int writes;
  arg args[9];
} routes[] = {
  { "list", "file_list", NULL, 0, { { "path", A_STR } } },
  { "read", "file_read", "file_read", 0, { { "path", A_STR }, { "offset", A_INT }, { "limit", A_INT } } },
  { "read-binary", "file_read_binary", NULL, 0, { { "path", A_STR } } },
  { "glob", "file_glob", "file_glob", 0, { { "path", A_STR }, { "pattern", A_STR }, { "limit", A_INT } } },
  { "grep", "file_grep", "file_grep", 0,
    { { "path", A_STR }, { "pattern", A_STR }, { "glob", A_STR }, { "mode", A_STR },
      { "case_insensitive", A_FLAG }, { "context", A_INT }, { "regex", A_FLAG }, { "limit", A_INT } } },
  { "write", "file_write", "file_write", 1, { { "path", A_STR }, { "content", A_STR } } },
  { "write-binary", "file_write_binary", NULL, 1,
    { { "path", A_STR }, { "content_base64", A_STR }, { "sha256", A_STR } } },
  { "edit", "file_edit", "file_edit", 1, { { "path", A_STR }, { "old", A_STR }, { "new", A_STR } } },
};

#define NROUTES (sizeof routes / sizeof routes[0])

static const struct route *find_route(const char *route) {
  for (size_t i = 0; route && i < NROUTES; i++)
    if (!strcmp(routes[i].route, route)) return &routes[i];
  return NULL;
}

const char *ux_files_op(const char *name) {
  for (size_t i = 0; name && i < NROUTES; i++)
    if (!strcmp(routes[i].route, name) || (routes[i].tool && !strcmp(routes[i].tool, name)))
      return routes[i].op;
  return NULL;
}

int ux_files_writes(const char *route) {
  const struct route *rt = find_route(route);
  return rt && rt->writes;
}

/* ---------------------------------------------------------------------
** Requests
** ------------------------------------------------------------------- */

/* A query string as the agent's type; -1 with err for a bad integer. */
static int query_value(const arg *a, const char *v, json_t **out, char *err, size_t errlen) {
  if (a->type == A_STR) { *out = json_string(v); return *out ? 0 : -1; }
  if (a->type == A_FLAG) {
    *out = json_boolean(!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
    return 0;
  }
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (!*v || *end || errno || (v[0] != '-' && (v[0] < '0' || v[0] > '9'))) {
    snprintf(err, errlen, "%s must be an integer", a->name);
    return -1;
  }
  *out = json_integer(n);
  return *out ? 0 : -1;
}

json_t *ux_files_request(const char *route, const char *(*query)(void *ctx, const char *name),
                         void *ctx, const json_t *body, char *err, size_t errlen) {
  const struct route *rt = find_route(route);
  if (!rt) { snprintf(err, errlen, "unknown file operation"); return NULL; }
  if (rt->writes && !json_is_object(body)) {
    snprintf(err, errlen, "request body must be a JSON object");
    return NULL;
  }
  json_t *req = json_pack("{s:s}", "op", rt->op);
  for (const arg *a = rt->args; req && a < rt->args + 9 && a->name; a++) {
    json_t *v = NULL;
    if (rt->writes) {
      v = json_object_get(body, a->name);
      if (v) json_incref(v);
    } else {
      const char *s = query ? query(ctx, a->name) : NULL;
      /* an empty value is an absent one: the agent's default applies */
      if (s && *s && query_value(a, s, &v, err, errlen) != 0) { json_decref(req); return NULL; }
    }
    if (v && json_object_set_new(req, a->name, v) != 0) { json_decref(req); req = NULL; }
  }
  if (!req) snprintf(err, errlen, "out of memory");
  return req;
}

json_t *ux_files_tool_request(const char *tool, const json_t *args, char *err, size_t errlen) {
  const char *op = ux_files_op(tool);
  if (!op || strncmp(tool, "file_", 5) != 0) { snprintf(err, errlen, "unknown tool: %s", tool); return NULL; }
  if (args && !json_is_object(args)) { snprintf(err, errlen, "arguments must be an object"); return NULL; }
  if (json_object_get(args, "op")) { snprintf(err, errlen, "unknown argument 'op' for %s", tool); return NULL; }
  json_t *req = args ? json_deep_copy(args) : json_object();
  if (!req || json_object_set_new(req, "op", json_string(op)) != 0) {
    json_decref(req);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  return req;
}

/* ---------------------------------------------------------------------
** Calls and answers
** ------------------------------------------------------------------- */

int ux_files_call(ux_rt *rt, const json_t *req, int data_fd, json_t **result, char *err, size_t errlen) {
  return ux_rt_call(rt, req, data_fd, UX_FILES_TIMEOUT_MS, NULL, NULL, result, err, errlen);
}

int ux_files_http_error(int rtc, const char *err, json_t **body) {
  char text[600];
  int status;
  switch (rtc) {
  case UX_RTC_INVALID: status = 400; snprintf(text, sizeof text, "%s", err); break;
  case UX_RTC_BUSY: status = 503; snprintf(text, sizeof text, "%s", err); break;
  case UX_RTC_TIMEOUT: status = 504; snprintf(text, sizeof text, "%s", err); break;
  case UX_RTC_GONE: status = 502; snprintf(text, sizeof text, "internal service unavailable: %s", err); break;
  default: status = 500; snprintf(text, sizeof text, "%s", err); break;
  }
  *body = json_pack("{s:s}", "error", text);
  return status;
}

json_t *ux_files_no_runtime(const char *route, const char *ws_id) {
  char text[200];
  snprintf(text, sizeof text, "%s requires a running Runtime for %s", route, ws_id);
  return json_pack("{s:s, s:s}", "error", text, "hint", "create a sandbox for this workspace first");
}

static const char *req_query(void *ctx, const char *name) { return ux_req_query(ctx, name); }

int ux_files_answer(ux_cp_call *c, int rc, json_t *res, const char *err) {
  if (rc != UX_RTC_OK) {
    json_t *e = NULL;
    int status = ux_files_http_error(rc, err, &e);   /* sets e: not in the same call */
    return ux_cp_ok(c, status, e);
  }
  if (json_object_set_new(res, "workspace_id", json_string(c->param[0])) != 0) {
    json_decref(res);
    return ux_cp_fail(c, 500, "out of memory");
  }
  return ux_cp_ok(c, 200, res);
}

int ux_cp_files(ux_cp_call *c) {
  const char *ws = c->param[0], *slash = strrchr(c->r->path, '/'), *route = slash ? slash + 1 : "";
  char sb[32], err[600];
  if (!find_route(route)) return ux_cp_fail(c, 404, "not found");
  ux_rt *rt = ux_runtimes_of_workspace(c->cp->rts, ws, sb) == 0 ? ux_runtimes_get(c->cp->rts, sb) : NULL;
  if (!rt) return ux_cp_ok(c, 409, ux_files_no_runtime(route, ws));
  json_t *req = NULL, *res = NULL;
  if (c->r->query_nul) snprintf(err, sizeof err, "query arguments must not contain NUL");
  else req = ux_files_request(route, req_query, c->r, c->body, err, sizeof err);
  if (req && (!strcmp(route, "read-binary") || !strcmp(route, "write-binary"))) {
    int done = ux_files_binary_call(c, rt, route, req, err, sizeof err);
    ux_rt_put(rt);
    json_decref(req);
    return done;
  }
  int rc = req ? ux_files_call(rt, req, -1, &res, err, sizeof err) : -1;
  ux_rt_put(rt);
  json_decref(req);
  if (rc < 0) return ux_cp_fail(c, 400, "%s", err);
  return ux_files_answer(c, rc, res, err);
}
