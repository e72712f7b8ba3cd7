/*
** Object requests (cp/objects/request.h): the locator parser shared by JSON bodies
** and query strings, and the owner rules. A query argument is always a
** string; a JSON field may be anything, so "not a string" is reported
** with the same text the field's rule gives, as the platform does for a
** value that fails its pattern.
*/
#include "server/cp/objects/request.h"

#include <stdio.h>
#include <string.h>

#include "server/http/reply.h"

int ux_objreq_json_get(void *obj, const char *name, const char **s, size_t *len) {
  json_t *v = json_object_get((json_t *)obj, name);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v)) return -1;
  *s = json_string_value(v);
  *len = json_string_length(v);
  return 1;
}

int ux_objreq_query_get(void *req, const char *name, const char **s, size_t *len) {
  const char *v = ux_req_query((const ux_req *)req, name);
  if (!v) return 0;
  *s = v;
  *len = strlen(v);
  return 1;
}

static int id_field(ux_objreq_get get, void *ctx, const char *name, char out[UX_OBJ_ID_MAX + 1],
                    char *err, size_t errlen) {
  const char *s = NULL;
  size_t len = 0;
  int t = get(ctx, name, &s, &len);
  return ux_objloc_id(name, t == 1 ? s : NULL, len, out, err, errlen);
}

int ux_objreq_locator(ux_objreq_get get, void *ctx, int for_list, ux_objloc *l,
                      char *err, size_t errlen) {
  const char *s = NULL;
  size_t len = 0;
  char scope[16] = "";
  int t = get(ctx, "scope", &s, &len);
  if (t == 1 && len < sizeof scope && strlen(s) == len) memcpy(scope, s, len + 1);
  if (ux_objloc_scope(scope, &l->scope, err, errlen) < 0) return -1;
  l->upload_id[0] = l->agent_id[0] = l->run_id[0] = '\0';
  if (l->scope == UX_OBJ_UPLOAD) {
    if (id_field(get, ctx, "upload_id", l->upload_id, err, errlen) < 0) return -1;
  } else if (id_field(get, ctx, "agent_id", l->agent_id, err, errlen) < 0 ||
             id_field(get, ctx, "run_id", l->run_id, err, errlen) < 0) {
    return -1;
  }
  t = get(ctx, "path", &s, &len);
  if (t < 0) {
    snprintf(err, errlen, "path must be a string");
    return -1;
  }
  return ux_objloc_path(l->scope, t == 1 ? s : NULL, len, for_list, l->path, err, errlen);
}

/* The tenant segment of an owner (up to its '/'). */
static int owner_tenant_is(const char *owner, const char *tenant) {
  size_t n = strcspn(owner, "/");
  return strlen(tenant) == n && !memcmp(owner, tenant, n);
}

static int derive(const ux_objreq_who *who, char out[UX_OBJ_OWNER_MAX + 1], char *err, size_t errlen) {
  int n = snprintf(out, UX_OBJ_OWNER_MAX + 1, "%s/%s", who->tenant, who->subject);
  if (n < 0 || n > UX_OBJ_OWNER_MAX || ux_objloc_owner(out, (size_t)n, err, errlen) < 0) {
    snprintf(err, errlen, "cannot derive an object owner from this tenant and subject");
    return 400;
  }
  return 0;
}

int ux_objreq_owner(const ux_objreq_who *who, int sent_type, const char *sent, size_t sent_len,
                    char out[UX_OBJ_OWNER_MAX + 1], char *err, size_t errlen, int *audit) {
  int both = who->tenant[0] && who->subject[0];
  *audit = 0;
  if (!who->admin) {
    if (sent_type != 0) {
      *audit = 1;
      snprintf(err, errlen, "%s", UX_OBJREQ_OWNER_FORBIDDEN);
      return 403;
    }
    if (!who->subject[0] || !who->tenant[0]) {
      snprintf(err, errlen, "%s", UX_OBJREQ_NO_SUBJECT);
      return 400;
    }
    return derive(who, out, err, errlen);
  }
  if (sent_type == 0) {
    if (both) return derive(who, out, err, errlen);
    snprintf(err, errlen, "owner is required: admin credentials name the object owner "
             "(<tenant>/<subject>)");
    return 400;
  }
  if (sent_type < 0 || ux_objloc_owner(sent, sent_len, err, errlen) < 0) {
    if (sent_type < 0) snprintf(err, errlen, "owner must be a string");
    return 400;
  }
  memcpy(out, sent, sent_len);
  out[sent_len] = '\0';
  if (who->tenant[0] && !owner_tenant_is(out, who->tenant)) {
    snprintf(err, errlen, "owner %s does not belong to tenant %s", out, who->tenant);
    return 403;
  }
  return 0;
}
