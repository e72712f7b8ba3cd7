/*
** Control Plane request framing: headers and the object-call rule
** (core/cprequest.h), MCP ids and checks (core/mcp.h), query strings
** (core/form.h) and workspace paths (core/wspath.h).
*/
#include <stdlib.h>
#include <string.h>

#include "core/cprequest.h"
#include "core/form.h"
#include "core/mcp.h"
#include "core/wspath.h"
#include "tests/tap.h"

#define SUBJ "0645ca35688bd5af1135ecc65edaa4ce"
#define TPV "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void lines_are(const unsb_cp_headers *h, const char *const *want, size_t n, const char *name) {
  int same = h->n == n;
  for (size_t i = 0; same && i < n; i++) same = strcmp(h->lines[i], want[i]) == 0;
  ok(same, "%s", name);
  if (!same)
    for (size_t i = 0; i < h->n; i++) printf("#   got [%zu] %s\n", i, h->lines[i]);
}

static void headers(void) {
  unsb_cp_headers h;
  unsb_error err;
  unsb_cp_header_opts o = {.token = "sk_abc_tenant_xyz"};

  ok(unsb_cp_headers_build(&o, &h, &err) == 0, "GET without subject");
  const char *get[] = {"Accept: application/json", "Authorization: Bearer sk_abc_tenant_xyz"};
  lines_are(&h, get, 2, "GET: Accept and Authorization only");
  unsb_cp_headers_free(&h);
  ok(h.n == 0, "freed");

  o.has_body = 1;
  o.subject = SUBJ;
  o.traceparent = TPV;
  ok(unsb_cp_headers_build(&o, &h, &err) == 0, "POST with subject and trace");
  const char *post[] = {"Accept: application/json", "Authorization: Bearer sk_abc_tenant_xyz",
                        "Content-Type: application/json", "X-Acting-Subject: " SUBJ,
                        "traceparent: " TPV};
  lines_are(&h, post, 5, "POST: Content-Type, X-Acting-Subject, traceparent");
  unsb_cp_headers_free(&h);

  o.content_type = "text/plain; charset=utf-8";
  unsb_cp_headers_build(&o, &h, &err);
  ok(h.n == 5 && strcmp(h.lines[2], "Content-Type: text/plain; charset=utf-8") == 0,
     "a blob upload's own content type");
  unsb_cp_headers_free(&h);

  unsb_cp_header_opts m = {.token = "scoped.tok", .subject = SUBJ, .mcp_tool = "shell"};
  ok(unsb_cp_headers_build(&m, &h, &err) == 0, "buffered MCP call");
  const char *mcp[] = {"Accept: application/json, text/event-stream",
                       "Authorization: Bearer scoped.tok", "Content-Type: application/json",
                       "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                       "Mcp-Name: shell", "X-Acting-Subject: " SUBJ};
  lines_are(&h, mcp, 7, "buffered MCP: the four headers, both types in Accept, the subject too");
  unsb_cp_headers_free(&h);
  m.streaming = 1;
  m.traceparent = TPV;
  m.content_type = "text/plain";   /* ignored: MCP bodies are JSON */
  ok(unsb_cp_headers_build(&m, &h, &err) == 0 && h.n == 8, "streaming MCP call: 8 lines");
  is_str(h.lines[0], "Accept: text/event-stream, application/json", "streaming: SSE first");
  is_str(h.lines[2], "Content-Type: application/json", "MCP body is always JSON");
  is_str(h.lines[7], "traceparent: " TPV, "streams carry the trace too");
  unsb_cp_headers_free(&h);
  m.tenant = "acme-2";
  ok(unsb_cp_headers_build(&m, &h, &err) == 0 && h.n == 9, "with a tenant: 9 lines");
  is_str(h.lines[7], "X-Sandbox-Tenant: acme-2", "X-Sandbox-Tenant after the subject");
  unsb_cp_headers_free(&h);
  m.tenant = "-acme";
  ok(unsb_cp_headers_build(&m, &h, &err) == -1 && err.kind == UNSB_EVALIDATION && h.n == 0,
     "a tenant that is not a tenant id is refused");
  ok(unsb_cp_valid_tenant("a") && unsb_cp_valid_tenant("a-b-0") &&
     unsb_cp_valid_tenant("abcdefghijklmnopqrstuvwxyz012345") &&
     !unsb_cp_valid_tenant("abcdefghijklmnopqrstuvwxyz0123456") && !unsb_cp_valid_tenant("a-") &&
     !unsb_cp_valid_tenant("A") && !unsb_cp_valid_tenant("a_b") && !unsb_cp_valid_tenant("") &&
     !unsb_cp_valid_tenant(NULL), "tenant id shape: 1-32 of [a-z0-9-], no dash at either end");
}

/* refused before anything is sent */
static void headers_refused(void) {
  unsb_cp_headers h;
  unsb_error err;
  static const struct { unsb_cp_header_opts o; const char *why; } BAD[] = {
    {{.token = NULL}, "no token"},
    {{.token = ""}, "empty token"},
    {{.token = "abc def"}, "token with a blank"},
    {{.token = "abc\r\nX-Evil: 1"}, "token with CR LF"},
    {{.token = "caf\xc3\xa9"}, "non-ASCII token"},
    {{.token = "t", .subject = "0645CA35688BD5AF1135ECC65EDAA4CE"}, "upper-case subject"},
    {{.token = "t", .subject = SUBJ "\n"}, "subject with a newline"},
    {{.token = "t", .subject = ""}, "empty subject"},
    {{.token = "t", .traceparent = TPV "\r\n"}, "traceparent with CR LF"},
    {{.token = "t", .traceparent = " " TPV}, "padded traceparent"},
    {{.token = "t", .traceparent = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
     "zero trace id"},
    {{.token = "t", .mcp_tool = "rm_rf"}, "unknown tool"},
    {{.token = "t", .has_body = 1, .content_type = "text"}, "content type without '/'"},
    {{.token = "t", .has_body = 1, .content_type = "a/b\r\nX: y"}, "content type with CR LF"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    int rc = unsb_cp_headers_build(&BAD[i].o, &h, &err);
    ok(rc == -1 && err.kind == UNSB_EVALIDATION && h.n == 0, "refused: %s", BAD[i].why);
  }
  unsb_cp_header_opts secret = {.token = "sk_secret value"};
  unsb_cp_headers_build(&secret, &h, &err);
  ok(!strstr(err.message, "sk_secret"), "the message never quotes the token: %s", err.message);
  char *long_token = malloc(8194);
  memset(long_token, 'a', 8193);
  long_token[8193] = '\0';
  secret.token = long_token;
  ok(unsb_cp_headers_build(&secret, &h, &err) == -1, "8193-byte token refused");
  long_token[8192] = '\0';
  ok(unsb_cp_headers_build(&secret, &h, &err) == 0, "8192-byte token accepted");
  unsb_cp_headers_free(&h);
  free(long_token);

  ok(unsb_cp_reserved_header("authorization") && unsb_cp_reserved_header("X-ACTING-SUBJECT") &&
     unsb_cp_reserved_header("Traceparent") && unsb_cp_reserved_header("mcp-name") &&
     !unsb_cp_reserved_header("X-Sandbox-Tenant") && !unsb_cp_reserved_header(NULL),
     "reserved headers, case-insensitive; X-Sandbox-Tenant is the caller's");
}

static void object_calls(void) {
  unsb_error err;
  static const char *const YES[] = {
    "/v1/storage/tickets", "/v1/storage/objects?scope=agent", "/v1/storage/content",
    "/v1/workspaces/ws-0123456789ab/objects/import",
    "/v1/workspaces/ws-0123456789ab/objects/export?x=1",
  };
  static const char *const NO[] = {
    "/v1/workspaces", "/v1/storage", "/v1/storagex/y", "/v1/workspaces/ws-1/objects/importx",
    "/v1/workspaces/ws-1/files/read?path=objects/import", "/v2/storage/objects", "", NULL,
  };
  for (size_t i = 0; i < sizeof YES / sizeof *YES; i++)
    ok(unsb_cp_is_object_call(YES[i]), "object call: %s", YES[i]);
  for (size_t i = 0; i < sizeof NO / sizeof *NO; i++)
    ok(!unsb_cp_is_object_call(NO[i]), "not an object call: %s", NO[i] ? NO[i] : "(NULL)");
  ok(unsb_cp_check_object_call("/v1/storage/objects?scope=agent", 0, 0, &err) == -1 &&
     strcmp(err.message, "/v1/storage/objects is an object call: bind an acting subject or pass an owner") == 0,
     "no subject, no owner: refused naming the path without its query");
  ok(unsb_cp_check_object_call("/v1/storage/objects", 1, 0, &err) == 0, "with a subject: fine");
  ok(unsb_cp_check_object_call("/v1/storage/objects", 0, 1, &err) == 0, "with an owner: fine");
  ok(unsb_cp_check_object_call("/v1/workspaces", 0, 0, &err) == 0, "not an object call: fine");
}

static void mcp(void) {
  unsb_mcp_ids ids;
  unsb_error err;
  char a[UNSB_MCP_ID_MAX], b[UNSB_MCP_ID_MAX];
  unsb_mcp_ids_init(&ids);
  ok(unsb_mcp_next_id(&ids, a, &err) == 0 && strncmp(a, "sandbox-client-1-", 17) == 0 &&
     strlen(a) == 23, "first id: %s", a);
  ok(unsb_mcp_next_id(&ids, b, &err) == 0 && strncmp(b, "sandbox-client-2-", 17) == 0, "second: %s", b);
  int hex = 1;
  for (int i = 17; i < 23; i++) hex &= (a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f');
  ok(hex, "6 lowercase hex at the end");
  ok(unsb_mcp_format_id(18446744073709551615ULL, a, &err) == 0 &&
     strncmp(a, "sandbox-client-18446744073709551615-", 36) == 0 && strlen(a) == 42,
     "the largest n fits");
  ok(unsb_mcp_format_id(0, a, &err) == -1, "n = 0 refused");
  int differ = 0;
  for (int i = 0; i < 20; i++) {
    unsb_mcp_format_id(7, a, &err);
    unsb_mcp_format_id(7, b, &err);
    differ += strcmp(a, b) != 0;
  }
  ok(differ >= 19, "the random part differs between ids of the same n (%d/20)", differ);

  ok(unsb_mcp_known_tool("shell") && unsb_mcp_known_tool("file_grep") && !unsb_mcp_known_tool("exec") &&
     !unsb_mcp_known_tool("Shell") && !unsb_mcp_known_tool(NULL), "known tools");
  is_str(unsb_mcp_session_action("exec"), "session_exec", "exec");
  is_str(unsb_mcp_session_action("kill"), "session_kill", "kill");
  ok(!unsb_mcp_session_action("exec_stream") && !unsb_mcp_session_action("session_exec") &&
     !unsb_mcp_session_action(""), "other actions refused");
  ok(unsb_mcp_valid_session_id("pty-1_a.b", 9) && !unsb_mcp_valid_session_id("-x", 2) &&
     !unsb_mcp_valid_session_id("a b", 3) && !unsb_mcp_valid_session_id("", 0) &&
     unsb_mcp_valid_session_id("a123456789012345678901234567890123456789012345678901234567890123", 64) &&
     !unsb_mcp_valid_session_id("a1234567890123456789012345678901234567890123456789012345678901234", 65),
     "PTY session id shape");

  const char *id = "sandbox-client-1-abcdef";
  ok(unsb_mcp_progress_ok(id, id, "stdout", 1, 1, 3), "progress: matching token, stdout, seq 1");
  ok(unsb_mcp_progress_ok(id, id, "stderr", 1, 99, 1), "stderr");
  ok(!unsb_mcp_progress_ok("sandbox-client-2-abcdef", id, "stdout", 1, 1, 3), "another request's token");
  ok(!unsb_mcp_progress_ok(NULL, id, "stdout", 1, 1, 3), "no token");
  ok(!unsb_mcp_progress_ok(id, id, "pty", 1, 1, 3), "unknown channel");
  ok(!unsb_mcp_progress_ok(id, id, "stdout", 1, 0, 3), "sequence 0");
  ok(!unsb_mcp_progress_ok(id, id, "stdout", 0, 2, 3), "fractional sequence");
  ok(!unsb_mcp_progress_ok(id, id, "stdout", 1, 1, 0), "empty chunk");
}

static char *form(const unsb_form_pair *p, size_t n, size_t max, unsb_error *err) {
  size_t len;
  return unsb_form_encode(p, n, max, &len, err);
}

#define P(k, v) {k, sizeof k - 1, v, v ? sizeof v - 1 : 0}

static void forms(void) {
  unsb_error err;
  char *s;
  unsb_form_pair loc[] = {P("scope", "agent"), P("agent_id", "my-agent"), P("run_id", "run-1"),
                          P("path", "outputs/a b/r\xc3\xa9sum\xc3\xa9.txt"), P("owner", ""),
                          {"upload_id", 9, NULL, 0}};
  s = form(loc, 6, 0, &err);
  is_str(s, "scope=agent&agent_id=my-agent&run_id=run-1&path=outputs%2Fa+b%2Fr%C3%A9sum%C3%A9.txt",
         "locator query; '' and nil dropped; UTF-8 percent-encoded");
  free(s);
  unsb_form_pair odd[] = {P("a b", "x&y=z/~.-_*"), P("k", "+%")};
  s = form(odd, 2, 0, &err);
  is_str(s, "a+b=x%26y%3Dz%2F~.-_%2A&k=%2B%25", "as Python's urlencode");
  free(s);
  unsb_form_pair none[] = {P("a", ""), {"b", 1, NULL, 0}};
  s = form(none, 2, 0, &err);
  is_str(s, "", "everything dropped: empty");
  free(s);
  s = form(NULL, 0, 0, &err);
  is_str(s, "", "no pairs: empty");
  free(s);
  unsb_form_pair nul[] = {{"k", 1, "a\0b", 3}};
  s = form(nul, 1, 0, &err);
  is_str(s, "k=a%00b", "NUL is encoded, not cut");
  free(s);
  unsb_form_pair empty_key[] = {P("a", "1"), {"", 0, "x", 1}};
  ok(form(empty_key, 2, 0, &err) == NULL && strstr(err.message, "parameter 2"), "empty name refused");
  unsb_form_pair big[] = {P("k", "\xff\xff\xff")};
  ok(form(big, 1, 10, &err) == NULL && strstr(err.message, "longer than 10"), "over max_len refused");
  s = form(big, 1, 11, &err);
  ok(s && strlen(s) == 11, "exactly max_len");
  free(s);
}

static void paths(void) {
  static const struct { const char *in, *out; } GOOD[] = {
    {"/workspace", ""}, {"/workspace/", ""}, {"/workspace/src/main.py", "src/main.py"},
    {"src/main.py", "src/main.py"}, {".", "."}, {"~user/x", "~user/x"}, {"a/../b", "a/../b"},
    {"/workspace//etc", "/etc"},
  };
  static const char *const BAD[] = {"", "/", "/etc/passwd", "/workspacex", "/workspace-2/a",
                                    "/Workspace/a", "~", "~/notes.txt", "//workspace/a"};
  unsb_error err;
  size_t off;
  for (size_t i = 0; i < sizeof GOOD / sizeof *GOOD; i++) {
    int rc = unsb_workspace_path(GOOD[i].in, strlen(GOOD[i].in), &off, &err);
    ok(rc == 0 && strcmp(GOOD[i].in + off, GOOD[i].out) == 0, "'%s' -> '%s'", GOOD[i].in, GOOD[i].out);
  }
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++)
    ok(unsb_workspace_path(BAD[i], strlen(BAD[i]), &off, &err) == -1 && err.kind == UNSB_EVALIDATION,
       "'%s' refused: %s", BAD[i], err.message);
  ok(unsb_workspace_path("a\0b", 3, &off, &err) == -1 && strstr(err.message, "NUL"), "NUL refused");
  ok(unsb_workspace_path(NULL, 0, &off, &err) == -1, "NULL refused");
  /* only len bytes are read, also for the message */
  ok(unsb_workspace_path("/etcXXXX", 4, &off, &err) == -1 && strstr(err.message, "'/etc'"),
     "the message quotes only len bytes");
}

int main(void) {
  headers();
  headers_refused();
  object_calls();
  mcp();
  forms();
  paths();
  return tap_done();
}
