/*
** Templates: the runtime shapes a sandbox can be created from. The
** built-in `default` always exists; administrators may add templates
** (globally with tenant_id "*", or for one tenant) whose image comes from
** one of the configured registries (--image-registries, the platform's
** SANDBOX_IMAGE_REGISTRIES). Every template runs the same bubblewrap
** runtime here: the image is recorded, not pulled (docs/internals.md).
*/
#include <stdlib.h>
#include <string.h>

#include "server/cp/audit.h"
#include "server/cp/admin/admin.h"
#include "core/cpshapes.h"
#include "server/cp/tables/templates.h"
#include "server/cp/tables/tenants.h"
#include "server/fsutil.h"

#define BUILTIN_ID "default"
#define BUILTIN_IMAGE "unsandboxd/bubblewrap:debian-12"
#define DISABLED "template management is disabled: SANDBOX_IMAGE_REGISTRIES is not configured"

/* 1 when image starts with one of the comma-separated registry prefixes. */
static int image_allowed(const ux_cp *cp, const char *image) {
  const char *p = cp->registries;
  while (p && *p) {
    size_t n = strcspn(p, ",");
    if (n > 0 && !strncmp(image, p, n)) return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

static int by_string(const void *a, const void *b) {
  return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *ux_cp_template_ids(ux_cp *cp, const char *tenant) {
  json_t *rows = ux_templates_of(cp->srv->store, tenant);
  if (!rows) return NULL;
  json_t *v[512], *row;
  size_t n = 0, i;
  v[n++] = json_string(BUILTIN_ID);
  json_array_foreach(rows, i, row) {
    const char *id = json_string_value(json_object_get(row, "template_id"));
    int dup = 0;
    for (size_t k = 0; k < n && !dup; k++) dup = !strcmp(json_string_value(v[k]), id);
    if (!dup && n < 512 && image_allowed(cp, json_string_value(json_object_get(row, "image"))))
      v[n++] = json_string(id);
  }
  json_decref(rows);
  qsort(v, n, sizeof v[0], by_string);
  json_t *out = json_array();
  for (i = 0; i < n; i++) json_array_append_new(out, v[i]);
  return out;
}

int ux_cp_template_allowed(ux_cp *cp, const char *tenant, const char *template_id) {
  json_t *ids = ux_cp_template_ids(cp, tenant);
  json_t *v;
  size_t i;
  int found = 0;
  json_array_foreach(ids, i, v) found |= !strcmp(json_string_value(v), template_id);
  json_decref(ids);
  return found;
}

int ux_cp_admin_templates_list(ux_cp_call *c) {
  json_t *rows = ux_templates_all(c->cp->srv->store);
  if (!rows) return ux_cp_store_failed(c, "template list failed");
  json_t *row;
  size_t i;
  json_array_foreach(rows, i, row) {
    json_object_set_new(row, "created_at", ux_cp_time(json_integer_value(json_object_get(row, "created_at"))));
    json_object_set_new(row, "allowed",
      json_boolean(image_allowed(c->cp, json_string_value(json_object_get(row, "image")))));
  }
  return ux_cp_ok(c, 200, json_pack("{s:o,s:{s:s}}", "templates", rows, "builtin",
                                    BUILTIN_ID, BUILTIN_IMAGE));
}

int ux_cp_admin_templates_put(ux_cp_call *c) {
  const char *tenant, *tid, *image;
  if (!c->cp->registries) return ux_cp_fail(c, 409, DISABLED);
  if (ux_cp_str(c, "tenant_id", 0, "*", 64, &tenant) || ux_cp_str(c, "template_id", 1, NULL, 64, &tid) ||
      ux_cp_str(c, "image", 1, NULL, 512, &image))
    return -1;
  if (!unsb_valid_template(tid)) return ux_cp_fail(c, 400, "invalid template_id: %s", tid);
  if (!strcmp(tid, BUILTIN_ID)) return ux_cp_fail(c, 409, "template %s is built in", tid);
  if (strcmp(tenant, "*") != 0) {
    ux_tenant_state t = ux_tenants_state(c->cp->srv->store, tenant);
    if (t == UX_TENANT_BROKEN) return ux_cp_store_failed(c, "tenant lookup failed");
    if (t == UX_TENANT_UNKNOWN) return ux_cp_fail(c, 404, "unknown tenant: %s", tenant);
  }
  if (!image_allowed(c->cp, image)) return ux_cp_fail(c, 400, "image not allowed: %s", image);
  const char *by = c->id.kind == UX_ID_BREAK_GLASS ? "break-glass" : c->id.key_id;
  if (ux_templates_put(c->cp->srv->store, tenant, tid, image, (long long)ux_now(), by) != 1)
    return ux_cp_store_failed(c, "template write failed");
  ux_cp_audit(c->cp, &c->id, "template.put", tid, "ok");
  return ux_cp_ok(c, 201, json_pack("{s:s,s:s,s:s,s:s}", "tenant_id", tenant, "template_id", tid,
                                    "image", image, "created_by", by));
}

int ux_cp_admin_templates_delete(ux_cp_call *c) {
  if (!c->cp->registries) return ux_cp_fail(c, 409, DISABLED);
  const char *tenant = ux_req_query(c->r, "tenant_id");
  if (!tenant || !*tenant) tenant = "*";
  int n = ux_templates_remove(c->cp->srv->store, tenant, c->param[0]);
  if (n < 0) return ux_cp_store_failed(c, "template delete failed");
  ux_cp_audit(c->cp, &c->id, "template.delete", c->param[0], n ? "ok" : "noop");
  return ux_cp_ok(c, 200, json_pack("{s:s,s:s,s:b}", "tenant_id", tenant, "template_id", c->param[0],
                                    "deleted", n > 0));
}
