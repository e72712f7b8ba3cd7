/*
** Unit tests of the object request rules (cp/objects/request.h): locators from a
** JSON body and from query arguments (the same parser), wrong types, and
** the owner rules for tenant and admin credentials with their statuses
** and texts.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "server/cp/objects/request.h"
#include "server/http/reply.h"
#include "tests/tap.h"

static char err[512];

static int from_json(const char *text, int for_list, ux_objloc *l) {
  json_t *o = json_loads(text, JSON_ALLOW_NUL, NULL);
  memset(l, 0, sizeof *l);
  int rc = ux_objreq_locator(ux_objreq_json_get, o, for_list, l, err, sizeof err);
  json_decref(o);
  return rc;
}

static void json_locators(void) {
  ux_objloc l;
  ok(from_json("{\"scope\":\"upload\",\"upload_id\":\" U1 \",\"path\":\"source//a.txt\"}", 0, &l) == 0 &&
     l.scope == UX_OBJ_UPLOAD && !strcmp(l.upload_id, "u1") && !strcmp(l.path, "source/a.txt"),
     "upload locator, id trimmed and lower-cased, path normalised (%s)", err);
  ok(from_json("{\"scope\":\"agent\",\"agent_id\":\"a\",\"run_id\":\"r\",\"path\":\"logs/x\","
               "\"version_id\":\"ignored\",\"upload_id\":5}", 0, &l) == 0 &&
     !strcmp(l.agent_id, "a") && !strcmp(l.run_id, "r") && l.upload_id[0] == '\0',
     "agent locator; version_id and the other scope's fields ignored (%s)", err);
  ok(from_json("{\"scope\":\"agent\",\"agent_id\":\"a\",\"run_id\":\"r\"}", 1, &l) == 0 && l.path[0] == '\0',
     "list without a path: the whole prefix");
  ok(from_json("{\"scope\":\"agent\",\"agent_id\":\"a\",\"run_id\":\"r\",\"path\":null}", 1, &l) == 0,
     "a null path counts as absent");
  struct { const char *body; const char *msg; } bad[] = {
    { "{}", "scope must be 'upload' or 'agent'" },
    { "{\"scope\":1}", "scope must be 'upload' or 'agent'" },
    { "{\"scope\":\"upload\\u0000\"}", "scope must be 'upload' or 'agent'" },
    { "{\"scope\":\"upload\",\"path\":\"source/a\"}", "upload_id must be a lowercase DNS-style identifier" },
    { "{\"scope\":\"upload\",\"upload_id\":7,\"path\":\"source/a\"}",
      "upload_id must be a lowercase DNS-style identifier" },
    { "{\"scope\":\"agent\",\"agent_id\":\"a\",\"path\":\"logs/a\"}", "run_id must be a lowercase DNS-style identifier" },
    { "{\"scope\":\"agent\",\"agent_id\":\"a_b\",\"run_id\":\"r\",\"path\":\"logs/a\"}",
      "agent_id must be a lowercase DNS-style identifier" },
    { "{\"scope\":\"upload\",\"upload_id\":\"u\"}", "path is required" },
    { "{\"scope\":\"upload\",\"upload_id\":\"u\",\"path\":[]}", "path must be a string" },
    { "{\"scope\":\"upload\",\"upload_id\":\"u\",\"path\":\"source/a\\u0000b\"}", "path must not contain NUL bytes" },
    { "{\"scope\":\"upload\",\"upload_id\":\"u\",\"path\":\"source/../../x\"}", "path must not contain '..'" },
    { "{\"scope\":\"upload\",\"upload_id\":\"u\",\"path\":\"logs/x\"}",
      "path must start with one of: source, derived, meta" },
    { NULL, NULL }
  };
  for (int i = 0; bad[i].body; i++) {
    ok(from_json(bad[i].body, 0, &l) < 0, "refused: %s", bad[i].body);
    is_str(err, bad[i].msg, "its message");
  }
}

static void query_locators(void) {
  ux_kv q[] = { { "scope", "agent" }, { "agent_id", "Agent-7" }, { "run_id", "r1" }, { "path", "./outputs/x" } };
  ux_req r;
  memset(&r, 0, sizeof r);
  r.req_query = q;
  r.req_nquery = 4;
  ux_objloc l;
  ok(ux_objreq_locator(ux_objreq_query_get, &r, 0, &l, err, sizeof err) == 0 && !strcmp(l.agent_id, "agent-7") &&
     !strcmp(l.path, "outputs/x"), "a locator from query arguments (%s)", err);
  r.req_nquery = 3;
  ok(ux_objreq_locator(ux_objreq_query_get, &r, 1, &l, err, sizeof err) == 0 && l.path[0] == '\0',
     "list from the query without a path");
  ok(ux_objreq_locator(ux_objreq_query_get, &r, 0, &l, err, sizeof err) < 0, "stat needs a path");
  is_str(err, "path is required", "its message");
  q[0].value = "checkpoints";
  ok(ux_objreq_locator(ux_objreq_query_get, &r, 1, &l, err, sizeof err) < 0, "an unknown scope in the query");
}

static int owner(int admin, const char *tenant, const char *subject, int type, const char *sent,
                 char out[UX_OBJ_OWNER_MAX + 1], int *audit) {
  ux_objreq_who w = { admin, tenant, subject };
  return ux_objreq_owner(&w, type, sent, sent ? strlen(sent) : 0, out, err, sizeof err, audit);
}

static void owners(void) {
  char out[UX_OBJ_OWNER_MAX + 1];
  int audit = 9;
  const char *subj = "0645ca35688bd5af1135ecc65edaa4ce";
  ok(owner(0, "tenant-a", subj, 0, NULL, out, &audit) == 0 && audit == 0, "tenant key + subject");
  is_str(out, "tenant-a/0645ca35688bd5af1135ecc65edaa4ce", "owner derived from tenant and subject");
  ok(owner(0, "tenant-a", subj, 1, "tenant-a/0645ca35688bd5af1135ecc65edaa4ce", out, &audit) == 403 && audit == 1,
     "a tenant credential sending an owner (even its own): 403, audited");
  is_str(err, UX_OBJREQ_OWNER_FORBIDDEN, "the spec's text");
  ok(owner(0, "tenant-a", subj, -1, NULL, out, &audit) == 403 && audit == 1, "an owner of the wrong type too");
  ok(owner(0, "tenant-a", "", 0, NULL, out, &audit) == 400 && audit == 0, "a tenant credential without subject: 400");
  ok(strncmp(err, "object storage requires X-Acting-Subject: ", 42) == 0, "the spec's text");
  ok(owner(1, "", "", 1, "t/alice", out, &audit) == 0, "admin names the owner");
  is_str(out, "t/alice", "taken as sent");
  ok(owner(1, "", "", 0, NULL, out, &audit) == 400, "admin without owner: 400");
  ok(owner(1, "t", subj, 0, NULL, out, &audit) == 0, "admin acting for a tenant with a subject: derived");
  is_str(out, "t/0645ca35688bd5af1135ecc65edaa4ce", "derived owner");
  ok(owner(1, "t", "", 1, "u/alice", out, &audit) == 403 && audit == 0, "admin acting for t, owner of u: 403");
  ok(owner(1, "t", "", 1, "t/alice", out, &audit) == 0, "admin acting for t, owner of t: fine");
  ok(owner(1, "", "", 1, "nope", out, &audit) == 400, "a malformed owner: 400");
  ok(owner(1, "", "", -1, NULL, out, &audit) == 400, "an owner of the wrong type: 400");
  is_str(err, "owner must be a string", "its message");
  ok(owner(1, "", "", 1, "a/../b", out, &audit) == 400, "an owner with a path inside: 400");
}

int main(void) {
  json_locators();
  query_locators();
  owners();
  return tap_done();
}
