/*
** Lease rules (core/lease.h) and the per-Manager cache (core/leasecache.h)
** on a fake clock: every branch of §7.7 and §7.8, reply checks, the
** refresh period setting, LRU eviction and bad session ids.
*/
#include <stdio.h>
#include <string.h>

#include "core/cpshapes.h"
#include "core/lease.h"
#include "core/leasecache.h"
#include "tests/tap.h"

#define T0 1000000   /* the fake clock's start, seconds */
#define WS "ws-0123456789ab"
#define SB "sb-0123456789ab"

static unsb_workspace_reply ws_reply(const char *owner, long long expires_in, int created) {
  unsb_workspace_reply r = {WS, "ws-token", owner, expires_in, created};
  return r;
}

static unsb_runtime_reply rt_reply(const char *tmpl, long long expires_in) {
  unsb_runtime_reply r = {SB, "sb-token", tmpl, expires_in};
  return r;
}

static void workspace_rules(void) {
  unsb_lease l;
  unsb_error err;
  unsb_workspace_reply r;
  unsb_lease_init(&l);

  ok(unsb_lease_workspace_action(&l, NULL, 0, T0, 60) == UNSB_LEASE_CREATE, "empty lease: create");
  r = ws_reply(NULL, 900, -1);
  ok(unsb_lease_set_workspace(&l, &r, T0, &err) == 0, "workspace reply applied");
  ok(l.ws_created == 1, "created missing: true");
  ok(l.ws_expires_at == T0 + 900 && l.ws_checked_at == T0, "expiry and check time from the clock");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 59, 60) == UNSB_LEASE_REUSE,
     "fresh and checked 59 s ago: reuse");
  ok(unsb_lease_workspace_action(&l, NULL, 1, T0 + 1, 60) == UNSB_LEASE_CREATE, "refresh asked: create");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 60, 60) == UNSB_LEASE_CREATE,
     "checked exactly the period ago: stale, create");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 60, 3600) == UNSB_LEASE_REUSE,
     "with a longer period: reuse");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 839, 3600) == UNSB_LEASE_REUSE,
     "token expires in 61 s: reuse");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 840, 3600) == UNSB_LEASE_CREATE,
     "token expires in 60 s: create (the margin)");
  ok(unsb_lease_workspace_action(&l, "acme/" "0645ca35688bd5af1135ecc65edaa4ce", 0, T0 + 1, 60) ==
     UNSB_LEASE_CREATE, "an owner asked, none cached: create");

  r = ws_reply("acme/alice", -1, 0);
  ok(unsb_lease_set_workspace(&l, &r, T0 + 10, &err) == 0, "reply with owner, no expiry");
  ok(l.ws_expires_at == T0 + 10 + 600, "missing access_token_expires_in: 600 s");
  ok(l.ws_created == 0, "created false kept");
  ok(unsb_lease_workspace_action(&l, "acme/alice", 0, T0 + 11, 60) == UNSB_LEASE_REUSE,
     "same owner: reuse");
  ok(unsb_lease_workspace_action(&l, NULL, 0, T0 + 11, 60) == UNSB_LEASE_REUSE, "no owner asked: reuse");
  ok(unsb_lease_workspace_action(&l, "acme/bob", 0, T0 + 11, 60) == UNSB_LEASE_CREATE,
     "another owner: create");
  unsb_lease_clear(&l);
}

/* malformed workspace replies change nothing */
static void workspace_replies(void) {
  unsb_lease l;
  unsb_error err;
  unsb_workspace_reply r = ws_reply("acme/alice", -1, 0);
  unsb_lease_init(&l);
  unsb_lease_set_workspace(&l, &r, T0 + 10, &err);
  const char *bad_ids[] = {NULL, "", "ws-0123456789AB", "ws-0123456789a", "ws-0123456789abc",
                           "sb-0123456789ab", "ws-../../admin", "ws-0123456789a\n"};
  int unchanged = 1;
  for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++) {
    unsb_workspace_reply b = {bad_ids[i], "t", NULL, 900, 1};
    unchanged &= unsb_lease_set_workspace(&l, &b, T0 + 20, &err) == -1 && err.kind == UNSB_EPROTOCOL;
  }
  ok(unchanged && strcmp(l.workspace_id, WS) == 0 && l.ws_checked_at == T0 + 10,
     "8 malformed workspace ids refused, lease unchanged");
  const char *bad_tokens[] = {NULL, "", "a b", "a\r\nX-Evil: 1", "t\x7f", "caf\xc3\xa9"};
  unchanged = 1;
  for (size_t i = 0; i < sizeof bad_tokens / sizeof *bad_tokens; i++) {
    unsb_workspace_reply b = {WS, bad_tokens[i], NULL, 900, 1};
    unchanged &= unsb_lease_set_workspace(&l, &b, T0 + 20, &err) == -1;
  }
  ok(unchanged && strcmp(l.ws_token, "ws-token") == 0, "6 malformed tokens refused");
  unsb_workspace_reply b = {WS, "t", "no-slash", 900, 1};
  ok(unsb_lease_set_workspace(&l, &b, T0, &err) == -1, "owner without '/' refused");
  b.owner = "a/b\nc";
  ok(unsb_lease_set_workspace(&l, &b, T0, &err) == -1, "owner with a newline refused");

  r = ws_reply(NULL, 99999999999LL, 1);
  unsb_lease_set_workspace(&l, &r, T0, &err);
  ok(l.ws_expires_at == T0 + UNSB_LEASE_MAX_TTL_S, "a huge expires_in is clamped (no overflow)");
  unsb_lease_clear(&l);
  ok(l.workspace_id[0] == '\0' && !l.ws_token && !l.ws_owner, "clear empties the lease");
}

static void runtime_rules(void) {
  unsb_lease l;
  unsb_error err;
  unsb_workspace_reply w = ws_reply(NULL, 900, 1);
  unsb_runtime_reply r;
  unsb_lease_init(&l);
  unsb_lease_set_workspace(&l, &w, T0, &err);

  ok(unsb_lease_runtime_action(&l, NULL, T0, 60, &err) == UNSB_LEASE_CREATE, "no runtime: create");
  ok(unsb_lease_runtime_action(&l, "python", T0, 60, &err) == UNSB_LEASE_CREATE,
     "no runtime, a template: create");
  r = rt_reply("python", 900);
  ok(unsb_lease_set_runtime(&l, &r, T0, &err) == 0, "SandboxLease applied");
  ok(strcmp(l.template_id, "python") == 0, "template from the response");
  ok(unsb_lease_runtime_action(&l, NULL, T0 + 30, 60, &err) == UNSB_LEASE_REUSE, "fresh: reuse");
  ok(unsb_lease_runtime_action(&l, "python", T0 + 30, 60, &err) == UNSB_LEASE_REUSE,
     "same template: reuse");
  ok(unsb_lease_runtime_action(&l, "default", T0 + 30, 60, &err) == UNSB_LEASE_CONFLICT &&
     strstr(err.message, "'python', not 'default'") && strstr(err.message, SB),
     "another template: conflict (%s)", err.message);
  ok(unsb_lease_runtime_action(&l, NULL, T0 + 60, 60, &err) == UNSB_LEASE_REFRESH,
     "checked a period ago: refresh the token");
  ok(unsb_lease_runtime_action(&l, NULL, T0 + 839, 3600, &err) == UNSB_LEASE_REUSE,
     "token expires in 61 s: reuse");
  ok(unsb_lease_runtime_action(&l, NULL, T0 + 840, 3600, &err) == UNSB_LEASE_REFRESH,
     "token expires within 60 s: refresh");

  /* the token refresh (ScopedToken) keeps the template */
  r = rt_reply(NULL, -1);
  ok(unsb_lease_set_runtime(&l, &r, T0 + 840, &err) == 0, "ScopedToken applied");
  ok(strcmp(l.template_id, "python") == 0, "template kept by a refresh");
  ok(l.sb_expires_at == T0 + 840 + 600, "missing expiry: 600 s");
  ok(unsb_lease_runtime_action(&l, NULL, T0 + 841, 60, &err) == UNSB_LEASE_REUSE, "reuse after refresh");
  unsb_lease_clear(&l);
}

static void runtime_changes(void) {
  unsb_lease l;
  unsb_error err;
  unsb_workspace_reply w = ws_reply(NULL, 900, 1);
  unsb_runtime_reply r = rt_reply("python", 900);
  unsb_lease_init(&l);
  unsb_lease_set_workspace(&l, &w, T0, &err);
  unsb_lease_set_runtime(&l, &r, T0, &err);

  /* 404 on refresh: the caller forgets and creates */
  unsb_lease_forget_runtime(&l);
  ok(unsb_lease_runtime_action(&l, "python", T0 + 842, 60, &err) == UNSB_LEASE_CREATE,
     "forgotten: create");
  ok(strcmp(l.workspace_id, WS) == 0, "the workspace lease survives");

  /* no template reported: counts as the server's default */
  r = rt_reply(NULL, 900);
  unsb_lease_set_runtime(&l, &r, T0, &err);
  ok(unsb_lease_runtime_action(&l, "default", T0 + 1, 60, &err) == UNSB_LEASE_REUSE,
     "unreported template = default");
  ok(unsb_lease_runtime_action(&l, "python", T0 + 1, 60, &err) == UNSB_LEASE_CONFLICT,
     "... so python conflicts");

  /* another sandbox id without a template: the old template is not kept */
  r = rt_reply("python", 900);
  unsb_lease_set_runtime(&l, &r, T0, &err);
  unsb_runtime_reply other = {"sb-ffffffffffff", "tok", NULL, 900};
  unsb_lease_set_runtime(&l, &other, T0, &err);
  ok(l.template_id[0] == '\0', "a new sandbox id drops the old template");

  /* a different workspace id drops the runtime lease */
  unsb_workspace_reply w2 = {"ws-ffffffffffff", "t2", NULL, 900, 1};
  unsb_lease_set_workspace(&l, &w2, T0, &err);
  ok(l.sandbox_id[0] == '\0' && !l.sb_token, "a new workspace id drops the runtime");

  /* malformed runtime replies */
  unsb_runtime_reply bad[] = {
    {"ws-0123456789ab", "t", NULL, 1}, {"sb-0123", "t", NULL, 1}, {NULL, "t", NULL, 1},
    {SB, "", NULL, 1}, {SB, "t", "Python", 1}, {SB, "t", "-x", 1},
    {SB, "t", "a23456789012345678901234567890123", 1}, {SB, "t", "", 1},
  };
  int refused = 1;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    refused &= unsb_lease_set_runtime(&l, &bad[i], T0, &err) == -1 && err.kind == UNSB_EPROTOCOL;
  ok(refused && l.sandbox_id[0] == '\0', "8 malformed runtime replies refused, lease unchanged");
  ok(unsb_valid_template("a2345678901234567890123456789012") && unsb_valid_template("default") &&
     unsb_valid_template("0") && !unsb_valid_template(NULL), "template shape");
  unsb_lease_clear(&l);
}

static void status(void) {
  unsb_lease l;
  unsb_lease_status st;
  unsb_error err;
  unsb_workspace_reply w = ws_reply(NULL, 100, 1);
  unsb_runtime_reply r = rt_reply("default", 50);
  unsb_lease_init(&l);
  unsb_lease_get_status(&l, T0, &st);
  ok(!st.workspace_id && !st.sandbox_id && !st.workspace_ready && !st.runtime_ready, "empty status");
  unsb_lease_set_workspace(&l, &w, T0, &err);
  unsb_lease_set_runtime(&l, &r, T0, &err);
  unsb_lease_get_status(&l, T0 + 49, &st);
  ok(st.workspace_ready && st.runtime_ready && strcmp(st.template_id, "default") == 0,
     "both ready while their tokens last");
  unsb_lease_get_status(&l, T0 + 50, &st);
  ok(st.workspace_ready && !st.runtime_ready && strcmp(st.sandbox_id, SB) == 0,
     "runtime token expired: not ready, id still reported");
  unsb_lease_clear(&l);
}

static void refresh_period(void) {
  static const struct { const char *v; long long want; } GOOD[] = {
    {NULL, 60}, {"", 60}, {"  ", 60}, {"60", 60}, {"5", 5}, {"4", 5}, {"0", 5}, {"-30", 5},
    {"+7", 7}, {" 10\t", 10}, {"86400", 86400},
  };
  static const char *const BAD[] = {"abc", "1.5", "10s", "1e3", "+", "-", "0x10", "1 0", "86401",
                                    "99999999999999999999"};
  int64_t out;
  unsb_error err;
  for (size_t i = 0; i < sizeof GOOD / sizeof *GOOD; i++)
    ok(unsb_lease_refresh_period(GOOD[i].v, &out, &err) == 0 && out == GOOD[i].want,
       "refresh period '%s' = %lld", GOOD[i].v ? GOOD[i].v : "(unset)", GOOD[i].want);
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++)
    ok(unsb_lease_refresh_period(BAD[i], &out, &err) == -1 && err.kind == UNSB_EVALIDATION &&
       strstr(err.message, "SANDBOX_LIFECYCLE_REFRESH_SECONDS"), "refresh period '%s' refused", BAD[i]);
}

static void sid(char out[33], int n) { snprintf(out, 33, "%032x", n); }

static void cache(void) {
  unsb_lease_cache *c = unsb_lease_cache_new(3);
  unsb_error err;
  unsb_workspace_reply w = ws_reply(NULL, 900, 1);
  char k[5][33];
  for (int i = 0; i < 5; i++) sid(k[i], i + 1);

  ok(c && unsb_lease_cache_capacity(c) == 3 && unsb_lease_cache_count(c) == 0, "empty cache of 3");
  ok(unsb_lease_cache_find(c, k[0]) == NULL, "find on empty: NULL");
  unsb_lease *a = unsb_lease_cache_obtain(c, k[0], &err);
  ok(a && a->workspace_id[0] == '\0', "obtain creates an empty lease");
  unsb_lease_set_workspace(a, &w, T0, &err);
  ok(unsb_lease_cache_obtain(c, k[0], &err) == a && unsb_lease_cache_count(c) == 1,
     "obtain again: the same lease");
  unsb_lease_cache_obtain(c, k[1], &err);
  unsb_lease_cache_obtain(c, k[2], &err);
  ok(unsb_lease_cache_count(c) == 3, "three sessions");
  ok(unsb_lease_cache_find(c, k[0]) == a, "touch session 1: now most recent");
  unsb_lease_cache_obtain(c, k[3], &err);
  ok(unsb_lease_cache_count(c) == 3, "a fourth session: still three (the cap)");
  ok(unsb_lease_cache_find(c, k[1]) == NULL, "session 2, the least recently used, was evicted");
  ok(unsb_lease_cache_find(c, k[0]) && strcmp(unsb_lease_cache_find(c, k[0])->workspace_id, WS) == 0,
     "session 1 kept its lease");
  unsb_lease *e = unsb_lease_cache_obtain(c, k[4], &err);
  ok(unsb_lease_cache_find(c, k[2]) == NULL && e->workspace_id[0] == '\0' && !e->ws_token,
     "next eviction: session 3; the reused slot starts empty");
  ok(unsb_lease_cache_remove(c, k[0]) == 1 && unsb_lease_cache_remove(c, k[0]) == 0 &&
     unsb_lease_cache_count(c) == 2, "remove once, twice is a no-op");
  ok(unsb_lease_cache_obtain(c, "DEMO", &err) == NULL && err.kind == UNSB_EVALIDATION,
     "a raw key is not a session id");
  ok(unsb_lease_cache_obtain(c, "2A97516C354B68848CDBD8F54A226A0A", &err) == NULL,
     "upper-case session id refused");
  ok(unsb_lease_cache_obtain(c, NULL, &err) == NULL && unsb_lease_cache_find(c, NULL) == NULL &&
     unsb_lease_cache_remove(c, "x") == 0, "NULL and junk ids");

  /* churn: many sessions through a small cache stay bounded */
  char key[33];
  int bounded = 1;
  for (int i = 0; i < 10000 && bounded; i++) {
    sid(key, 100 + i);
    unsb_lease *l = unsb_lease_cache_obtain(c, key, &err);
    bounded = l && unsb_lease_set_workspace(l, &w, T0, &err) == 0 && unsb_lease_cache_count(c) <= 3;
  }
  ok(bounded, "10000 sessions through a cache of 3 stay at 3 (valgrind: no leak)");
  unsb_lease_cache_free(c);
  unsb_lease_cache_free(NULL);
  c = unsb_lease_cache_new(0);
  ok(c && unsb_lease_cache_capacity(c) == UNSB_LEASE_CACHE_DEFAULT, "default capacity 64");
  unsb_lease_cache_free(c);
  c = unsb_lease_cache_new(1u << 30);
  ok(c && unsb_lease_cache_capacity(c) == UNSB_LEASE_CACHE_MAX, "capacity clamped to 4096");
  unsb_lease_cache_free(c);
}

int main(void) {
  workspace_rules();
  workspace_replies();
  runtime_rules();
  runtime_changes();
  status();
  refresh_period();
  cache();
  return tap_done();
}
