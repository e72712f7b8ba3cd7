/*
** Object tickets and the content they move (spec §3, §4.3):
** POST /v1/storage/tickets mints one for a locator of the caller's own
** partition; GET / PUT /v1/storage/content spend it. Spending goes in a
** fixed order, each step before anything irreversible:
**   verify (401 invalid, expired, wrong operation) → the owner's tenant is
**   not suspended (403, audited, before the ticket is burned) → a slot of
**   the transfer gate, counted for the owner's tenant (429 at its share,
**   503 when full; both before burning, so a retry may reuse it) →
**   burn the jti (401 when it was used before) → the transfer.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/audit.h"
#include "server/cp/auth/auth.h"
#include "server/cp/objects/routes.h"
#include "server/cp/objects/tickets.h"
#include "server/cp/objects/transfer.h"
#include "server/cp/tables/tenants.h"
#include "server/fsutil.h"
#include "server/store/ledger.h"

#define BAD_TICKET "invalid, expired, or already used object ticket"

int ux_cp_obj_ticket(ux_cp_call *c) {
  ux_objloc l;
  ux_objticket t;
  char key[UX_OBJ_KEY_MAX + 1], err[256];
  const char *op, *ctype, *sha;
  long long max, ttl;
  memset(&t, 0, sizeof t);
  if (ux_cp_obj_target(c, 0, 0, &l, key) || ux_cp_str(c, "operation", 1, NULL, 16, &op)) return -1;
  if (strcmp(op, "upload") != 0 && strcmp(op, "download") != 0)
    return ux_cp_fail(c, 400, "operation must be 'upload' or 'download'");
  if (ux_cp_int(c, "max_bytes", 1, (long long)UX_OBJ_MAX_BYTES, (long long)UX_OBJ_MAX_BYTES, &max) ||
      ux_cp_str(c, "content_type", 0, "application/octet-stream", UX_OBJ_CTYPE_MAX, &ctype) ||
      ux_cp_str(c, "sha256", 0, "", 64, &sha) ||
      ux_cp_int(c, "expires_in", 1, UX_OBJTICKET_TTL_MAX, UX_OBJTICKET_TTL_MAX, &ttl))
    return -1;
  if (ux_objloc_content_type(ctype, strlen(ctype), err, sizeof err) < 0 ||
      (*sha && ux_objloc_sha256(sha, strlen(sha), t.sha256, err, sizeof err) < 0))
    return ux_cp_fail(c, 400, "%s", err);
  snprintf(t.op, sizeof t.op, "%s", op);
  snprintf(t.bucket, sizeof t.bucket, "%s", ux_objloc_bucket(l.scope));
  snprintf(t.key, sizeof t.key, "%s", key);
  snprintf(t.owner, sizeof t.owner, "%s", l.owner);
  snprintf(t.content_type, sizeof t.content_type, "%s", ctype);
  t.max_bytes = (unsigned long long)max;
  char *token = ux_objticket_mint(c->cp->signing_key, sizeof c->cp->signing_key, &t, ux_now(), (long)ttl);
  if (!token) return ux_cp_fail(c, 500, "cannot mint the ticket");
  json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:{s:s, s:s}}", "operation", op,
                        "method", !strcmp(op, "upload") ? "PUT" : "GET", "url", "/v1/storage/content",
                        "access_token", token, "expires_in", (json_int_t)ttl, "max_bytes", (json_int_t)max,
                        "object", "bucket", t.bucket, "key", t.key);
  free(token);
  return ux_cp_ok(c, 201, v);
}

/* 403 (audited) when the ticket's owner tenant exists and is suspended. */
static int owner_suspended(ux_cp_call *c, const ux_objticket *t) {
  char tenant[UX_OBJ_OWNER_MAX + 1];
  snprintf(tenant, sizeof tenant, "%.*s", (int)strcspn(t->owner, "/"), t->owner);
  if (!tenant[0]) return 0;
  ux_tenant_state state = ux_tenants_state(c->cp->srv->store, tenant);
  if (state == UX_TENANT_BROKEN) return ux_cp_store_failed(c, "tenant lookup failed");
  if (state != UX_TENANT_SUSPENDED) return 0;
  snprintf(c->id.tenant, sizeof c->id.tenant, "%.63s", tenant);
  ux_cp_audit(c->cp, &c->id, "object.ticket.suspended", t->key, "denied");
  return ux_cp_fail(c, 403, "tenant is suspended: %s", tenant);
}

/* Spends the request's ticket for op (the order of the header comment):
** 0 with *t and a gate slot held, or -1 with the reply. */
static int spend(ux_cp_call *c, const char *op, ux_objticket *t) {
  ux_cp *cp = c->cp;
  const char *bearer = ux_cp_bearer(c->r);
  long now = ux_now();
  if (!bearer || ux_objticket_verify(cp->signing_key, sizeof cp->signing_key, bearer, now, op, t) < 0)
    return ux_cp_fail(c, 401, BAD_TICKET);
  c->r->authenticated = 1;
  /* a ticket acts for its owner's tenant: the gate counts it there */
  snprintf(c->id.tenant, sizeof c->id.tenant, "%.*s", (int)strcspn(t->owner, "/"), t->owner);
  if (owner_suspended(c, t) || ux_cp_obj_gate(c)) return -1;
  int rc = ux_objstore_burn(cp->objects, t->jti, t->exp, now);
  if (rc == UX_OBJ_OK) return 0;
  ux_cp_obj_gate_end(c);
  return rc == UX_OBJ_ENOENT ? ux_cp_fail(c, 401, BAD_TICKET) : ux_cp_obj_fail(c, rc);
}

int ux_cp_content_get(ux_cp_call *c) {
  ux_objticket t;
  ux_obj_meta m;
  int fd;
  if (spend(c, "download", &t)) return -1;
  int rc = ux_objstore_open_read(c->cp->objects, t.bucket, t.key, &fd, &m);
  if (rc == UX_OBJ_OK && m.bytes > t.max_bytes) {
    close(fd);
    ux_cp_obj_gate_end(c);
    return ux_cp_fail(c, 400, "object is larger than the ticket's max_bytes (%llu)", t.max_bytes);
  }
  if (rc != UX_OBJ_OK) {
    ux_cp_obj_gate_end(c);
    return ux_cp_obj_fail(c, rc);
  }
  /* the slot goes with the reply */
  if (ux_objxfer_send(c->r, fd, &m, c->cp->objects, ux_cp_home_tenant(&c->id)) < 0)
    return ux_cp_fail(c, 500, "object storage failed");
  return 0;
}

int ux_cp_content_put(ux_cp_call *c) {
  ux_objticket t;
  ux_obj_meta m;
  char err[256];
  if (spend(c, "upload", &t)) return -1;
  /* stored for the owner's tenant: the ticket's owner, else its key's */
  char party[UX_LEDGER_PARTY_MAX], tenant[UX_OBJ_OWNER_MAX + 1];
  ux_cp_obj_party(t.owner[0] || strncmp(t.key, "users/", 6) ? t.owner : t.key + 6, party, sizeof party,
                  tenant, sizeof tenant);
  int st = ux_objxfer_receive(c->r, c->cp->objects, tenant, t.bucket, t.key, t.content_type, t.max_bytes,
                              t.sha256, &m, err, sizeof err);
  ux_cp_obj_gate_end(c);
  if (st < 0) return ux_cp_fail(c, 400, "the upload was cut off; nothing was stored");
  if (st == 503) return ux_cp_store_failed(c, "cannot record the object");
  if (st != 201) return ux_cp_fail(c, st, "%s", err);
  return ux_cp_ok(c, 201, json_pack("{s:s, s:s, s:I, s:s, s:s}", "bucket", t.bucket, "key", t.key,
                                    "bytes", (json_int_t)m.bytes, "sha256", m.sha256,
                                    "content_type", m.content_type));
}
