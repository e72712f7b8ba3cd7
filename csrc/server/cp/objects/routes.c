/*
** /v1/storage/objects and its list, stat and versions (spec §4.3): the
** routes a control-plane credential uses on its own partition. Each
** handler is the same three steps: owner and locator (ux_cp_obj_target),
** one object store call, one view. Inline content (GET/POST with
** content_base64) is bounded by 4 MiB and passes the transfer gate like
** every content transfer; an inline read is streamed from the version's
** file, holding its gate slot until the client has it all.
*/
#include "server/cp/objects/routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "server/cp/audit.h"
#include "server/cp/b64_body.h"
#include "server/cp/auth/auth.h"
#include "server/jsonw.h"
#include "server/cp/objects/routes.h"
#include "server/cp/objects/request.h"
#include "server/store/ledger.h"
#include "server/http/limits.h"
#include "server/mem.h"

/* ------------------------------------------------------------------
** Shared by the object handlers (cp/objects/routes.h)
** ---------------------------------------------------------------- */

int ux_cp_obj_target(ux_cp_call *c, int from_query, int for_list, ux_objloc *l,
                     char key[UX_OBJ_KEY_MAX + 1]) {
  char err[512];
  ux_objreq_get get = from_query ? ux_objreq_query_get : ux_objreq_json_get;
  void *ctx = from_query ? (void *)c->r : (void *)c->body;
  const char *sent = NULL;
  size_t sent_len = 0;
  int t = get(ctx, "owner", &sent, &sent_len), audit = 0;
  ux_objreq_who who = { ux_id_admin(&c->id), c->id.tenant, c->id.subject };
  memset(l, 0, sizeof *l);
  /* a %00 cut the value's C string: what is left is not what was sent */
  if (from_query && c->r->query_nul) return ux_cp_fail(c, 400, "query arguments must not contain NUL");
  int st = ux_objreq_owner(&who, t, sent, sent_len, l->owner, err, sizeof err, &audit);
  if (st) {
    if (audit)
      ux_cp_audit(c->cp, &c->id, "object.owner",
                  t == 1 && strlen(sent) == sent_len && sent_len < 300 ? sent : c->r->path, "denied");
    return ux_cp_fail(c, st, "%s", err);
  }
  if (ux_objreq_locator(get, ctx, for_list, l, err, sizeof err) < 0) return ux_cp_fail(c, 400, "%s", err);
  if (ux_objloc_key(l, key, UX_OBJ_KEY_MAX + 1) < 0) return ux_cp_fail(c, 400, "object key is too long");
  return 0;
}

int ux_cp_obj_gate(ux_cp_call *c) {
  const char *party = ux_cp_home_tenant(&c->id);
  int rc = ux_objstore_transfer_begin(c->cp->objects, party);
  if (rc == UX_OBJ_OK) return 0;
  if (rc == UX_OBJ_ESHARE) {
    c->r->reply.retry_after = 1;
    return ux_cp_fail(c, 429, "object transfer limit reached for tenant %s; retry later", party);
  }
  c->r->reply.retry_after = 2;
  ux_cp_ok(c, 503, json_pack("{s:s, s:i}", "error", "object transfer queue is full; retry later",
                             "retry_after_seconds", 2));
  return -1;
}

void ux_cp_obj_gate_end(ux_cp_call *c) {
  ux_objstore_transfer_end(c->cp->objects, ux_cp_home_tenant(&c->id));
}

int ux_cp_obj_fail(ux_cp_call *c, int rc) {
  switch (rc) {
  case UX_OBJ_ENOENT: return ux_cp_fail(c, 404, "object not found");
  case UX_OBJ_ESTORE: return ux_cp_store_failed(c, "object metadata");
  case UX_OBJ_EBUSY: return ux_cp_fail(c, 503, "object transfer queue is full; retry later");
  default: return ux_cp_fail(c, 500, "object storage failed");
  }
}

void ux_cp_obj_party(const char *owner, char *party, size_t len, char *tenant, size_t tlen) {
  snprintf(tenant, tlen, "%.*s", (int)strcspn(owner, "/"), owner);
  ux_ledger_tenant(party, len, tenant);
}

int ux_cp_obj_put_fail(ux_cp_call *c, int rc, const char *tenant) {
  if (rc == UX_OBJ_EQUOTA) return ux_cp_storage_refused(c, UX_LEDGER_QUOTA, tenant);
  if (rc == UX_OBJ_EBUDGET) return ux_cp_storage_refused(c, UX_LEDGER_BUDGET, tenant);
  return ux_cp_obj_fail(c, rc);
}

json_t *ux_cp_obj_head(const ux_objloc *l, const char *key) {
  return json_pack("{s:s, s:s, s:s}", "scope", ux_objloc_scope_name(l->scope),
                   "bucket", ux_objloc_bucket(l->scope), "key", key);
}

/* ------------------------------------------------------------------
** Inline content
** ---------------------------------------------------------------- */

/* An inline read's reply, {"scope":..,"sha256":..,"content_base64":"<..>"},
** pulled from the version's file as the client takes it (ux_reply_source):
** the head as serialised, the content's base64, the closing quote and
** brace (b64_body.h). The transfer gate's slot is held until the reply is
** done, however slowly it is read. */
typedef struct inline_src {
  ux_b64_body *body;
  ux_objstore *gate;
  char party[64];             /* whose share of the gate the slot is */
} inline_src;

static ssize_t inline_read(void *ctx, unsigned long long pos, char *buf, size_t max) {
  return ux_b64_body_read(((inline_src *)ctx)->body, pos, buf, max);
}

static void inline_free(void *ctx) {
  inline_src *s = ctx;
  ux_b64_body_free(s->body);
  ux_objstore_transfer_end(s->gate, s->party);
  free(s);
}

/* Answers with the open version fd (taken) as inline content; the gate's
** slot passes to the reply. */
static int reply_inline(ux_cp_call *c, const ux_objloc *l, const char *key, int fd, const ux_obj_meta *m) {
  json_t *v = ux_cp_obj_head(l, key);
  json_object_set_new(v, "bytes", json_integer((json_int_t)m->bytes));
  json_object_set_new(v, "sha256", json_string(m->sha256));
  json_object_set_new(v, "content_base64", json_string(""));
  size_t len;
  char *text = ux_json_dump(v, &len);
  json_decref(v);
  inline_src *s = ux_xcalloc(1, sizeof *s);
  s->gate = c->cp->objects;
  snprintf(s->party, sizeof s->party, "%s", ux_cp_home_tenant(&c->id));
  /* content_base64 came last, empty: the head ends at its opening quote */
  int last = len >= 3 && strcmp(text + len - 3, "\"\"}") == 0;
  s->body = ux_b64_body_new(fd, m->bytes, text, last ? len - 2 : len, ux_xstrdup("\"}"), 2);
  if (!last) {
    inline_free(s);
    return ux_cp_fail(c, 500, "object storage failed");
  }
  return ux_reply_source(c->r, 200, UX_CP_JSON, ux_b64_body_length(s->body), inline_read, inline_free, s);
}

int ux_cp_obj_get(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1];
  if (ux_cp_obj_target(c, 1, 0, &l, key) || ux_cp_obj_gate(c)) return -1;
  int fd;
  ux_obj_meta m;
  int rc = ux_objstore_open_read(c->cp->objects, ux_objloc_bucket(l.scope), key, &fd, &m);
  if (rc == UX_OBJ_OK && m.bytes <= UX_OBJ_INLINE_MAX) return reply_inline(c, &l, key, fd, &m);
  if (rc == UX_OBJ_OK) close(fd);
  ux_cp_obj_gate_end(c);
  if (rc != UX_OBJ_OK) return ux_cp_obj_fail(c, rc);
  return ux_cp_fail(c, 400, "object is larger than %u bytes; use a download ticket", UX_OBJ_INLINE_MAX);
}

/* content_base64 (and sha256, content_type) of the body, decoded. */
static int inline_body(ux_cp_call *c, unsigned char **data, size_t *len, char sha[65], const char **ctype) {
  const char *b64, *want;
  char err[256];
  *data = NULL;
  /* required, but may be "" (an empty object) */
  if (ux_cp_str(c, "content_base64", 0, NULL, (UX_OBJ_INLINE_MAX / 3 + 1) * 4, &b64)) return -1;
  if (!b64) return ux_cp_fail(c, 400, "content_base64 is required");
  if (ux_cp_str(c, "sha256", 0, NULL, 64, &want) ||
      ux_cp_str(c, "content_type", 0, "application/octet-stream", UX_OBJ_CTYPE_MAX, ctype))
    return -1;
  sha[0] = '\0';
  if (want && ux_objloc_sha256(want, strlen(want), sha, err, sizeof err) < 0) return ux_cp_fail(c, 400, "%s", err);
  if (ux_objloc_content_type(*ctype, strlen(*ctype), err, sizeof err) < 0) return ux_cp_fail(c, 400, "%s", err);
  if (!(*data = unsb_base64_decode(b64, strlen(b64), len)))
    return ux_cp_fail(c, 400, "content_base64 must be valid base64");
  if (*len > UX_OBJ_INLINE_MAX) {
    free(*data);
    return ux_cp_fail(c, 400, "content is larger than %u bytes; use an upload ticket", UX_OBJ_INLINE_MAX);
  }
  return 0;
}

int ux_cp_obj_post(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1], sha[65];
  unsigned char *data;
  size_t len;
  const char *ctype;
  if (ux_cp_obj_target(c, 0, 0, &l, key) || inline_body(c, &data, &len, sha, &ctype)) return -1;
  if (ux_cp_obj_gate(c)) { free(data); return -1; }
  ux_objput *p;
  ux_obj_meta m;
  char party[UX_LEDGER_PARTY_MAX], tenant[UX_OBJ_OWNER_MAX + 1];
  ux_cp_obj_party(l.owner, party, sizeof party, tenant, sizeof tenant);
  int rc = ux_objput_begin(c->cp->objects, party, ux_objloc_bucket(l.scope), key, ctype, UX_OBJ_INLINE_MAX,
                           len, sha, &p);
  if (rc == UX_OBJ_OK && (rc = ux_objput_write(p, data, len)) != UX_OBJ_OK) ux_objput_abort(p);
  else if (rc == UX_OBJ_OK) rc = ux_objput_commit(p, &m);
  free(data);
  ux_cp_obj_gate_end(c);
  if (rc == UX_OBJ_ESHA) return ux_cp_fail(c, 400, "sha256 does not match the content; nothing was stored");
  if (rc != UX_OBJ_OK) return ux_cp_obj_put_fail(c, rc, tenant);
  json_t *v = ux_cp_obj_head(&l, key);
  json_object_set_new(v, "bytes", json_integer((json_int_t)m.bytes));
  json_object_set_new(v, "sha256", json_string(m.sha256));
  return ux_cp_ok(c, 201, v);
}

/* ------------------------------------------------------------------
** Metadata routes
** ---------------------------------------------------------------- */

int ux_cp_obj_delete(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1];
  if (ux_cp_obj_target(c, 1, 0, &l, key)) return -1;
  int purge = ux_cp_flag(c->r, "purge_versions");
  int rc = ux_objstore_delete(c->cp->objects, ux_objloc_bucket(l.scope), key, purge);
  if (rc != UX_OBJ_OK) return ux_cp_obj_fail(c, rc);
  json_t *v = ux_cp_obj_head(&l, key);
  json_object_set_new(v, "deleted", json_true());
  json_object_set_new(v, "history_retained", json_boolean(!purge));
  return ux_cp_ok(c, 200, v);
}

static int list_entry(void *ctx, const char *key, size_t key_len, unsigned long long bytes,
                      long long last_modified) {
  ux_jw *w = ctx;
  ux_jw_open(w, '{');
  ux_jw_key(w, "key");           ux_jw_str(w, key, key_len);
  ux_jw_key(w, "bytes");         ux_jw_int(w, (long long)bytes);
  ux_jw_key(w, "last_modified"); ux_cp_jw_time(w, last_modified);
  ux_jw_close(w);
  return 0;
}

/* Written row by row as the store reads them, into the reply's own text:
** 10,000 objects cost their reply's bytes, not a tree of them. The text
** starts with room for a full list of short keys (~100 bytes a row): in
** the buffer the last long reply left (mem.h) when there is one, so a
** long list grows once or not at all, and its first bytes are not copied
** through the writer's small buffers first. */
#define LIST_RESERVE ((size_t)UX_OBJ_LIST_MAX * 100)

int ux_cp_obj_list(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1];
  if (ux_cp_obj_target(c, 1, 1, &l, key)) return -1;
  ux_jw w;
  ux_jw_init(&w);
  ux_jw_reserve(&w, LIST_RESERVE);
  ux_jw_open(&w, '{');
  ux_jw_key(&w, "scope");  ux_jw_cstr(&w, ux_objloc_scope_name(l.scope));
  ux_jw_key(&w, "bucket"); ux_jw_cstr(&w, ux_objloc_bucket(l.scope));
  ux_jw_key(&w, "objects");
  ux_jw_open(&w, '[');
  int rc = ux_objstore_list_each(c->cp->objects, ux_objloc_bucket(l.scope), key, UX_OBJ_LIST_MAX,
                                 list_entry, &w);
  if (rc != UX_OBJ_OK) {
    ux_jw_free(&w);
    return ux_cp_obj_fail(c, rc);
  }
  ux_jw_close(&w);
  ux_jw_close(&w);
  return ux_cp_ok_text(c, 200, &w);
}

int ux_cp_obj_stat(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1];
  ux_obj_meta m;
  if (ux_cp_obj_target(c, 1, 0, &l, key)) return -1;
  int rc = ux_objstore_stat(c->cp->objects, ux_objloc_bucket(l.scope), key, &m);
  if (rc != UX_OBJ_OK) return ux_cp_obj_fail(c, rc);
  json_t *v = ux_cp_obj_head(&l, key);
  json_object_update_new(v, json_pack("{s:I, s:s, s:o, s:s, s:s, s:s}", "bytes", (json_int_t)m.bytes,
                                      "etag", m.etag, "last_modified", ux_cp_time(m.last_modified),
                                      "version_id", m.version_id, "content_type", m.content_type,
                                      "sha256", m.sha256));
  return ux_cp_ok(c, 200, v);
}

static json_t *version_view(const ux_obj_meta *m) {
  return json_pack("{s:s, s:b, s:b, s:I, s:o, s:o, s:I}", "version_id", m->version_id,
                   "is_latest", m->is_latest, "delete_marker", m->delete_marker,
                   "bytes", (json_int_t)m->bytes, "last_modified", ux_cp_time(m->last_modified),
                   "etag", m->delete_marker ? json_null() : json_string(m->etag),
                   "version_ordinal", (json_int_t)m->ordinal);
}

int ux_cp_obj_versions(ux_cp_call *c) {
  ux_objloc l;
  char key[UX_OBJ_KEY_MAX + 1];
  ux_obj_meta *v = NULL;
  size_t n = 0;
  if (ux_cp_obj_target(c, 1, 0, &l, key)) return -1;
  int rc = ux_objstore_versions(c->cp->objects, ux_objloc_bucket(l.scope), key, &v, &n);
  if (rc != UX_OBJ_OK) return ux_cp_obj_fail(c, rc);
  json_t *versions = json_array();
  for (size_t i = 0; versions && i < n; i++) json_array_append_new(versions, version_view(&v[i]));
  free(v);
  json_t *out = ux_cp_obj_head(&l, key);
  json_object_set_new(out, "versions", versions);
  return ux_cp_ok(c, 200, out);
}
