/*
** The ledger of stored bytes (store/ledger.h): reservations within a
** party's quota and the budget, decided in one statement (8 threads
** racing for one quota never overshoot it); items committed and dropped
** by the rows that hold them (triggers), with the real size the row
** says; and a reopen that drops what a crash left, adopts rows without
** an item and forgets items without a row, so the counts match the rows.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mem.h"
#include "server/store/db.h"
#include "server/store/ledger.h"
#include "server/store/store.h"
#include "tests/tap.h"

/* The Control Plane's tables, as far as the ledger reads them. */
static const char CP_TABLES[] =
  "CREATE TABLE IF NOT EXISTS cp_workspaces(id TEXT PRIMARY KEY, tenant TEXT NOT NULL);"
  "CREATE TABLE IF NOT EXISTS cp_object_versions(bucket TEXT, key TEXT, ordinal INTEGER,"
  "  version_id TEXT UNIQUE, delete_marker INTEGER, bytes INTEGER);";

static const ux_ledger_limits LIMITS = { 1000, 600, 500, 100, 10, "tenant/op" };

static ux_store *open_all(const char *dir) {
  char err[256];
  ux_store *st = ux_store_open(dir, err, sizeof err);
  if (!st || ux_db_exec(st, CP_TABLES, "") < 0 || ux_ledger_open(st, dir, &LIMITS, err, sizeof err) != 0) {
    printf("Bail out! cannot open the store and ledger: %s\n", err);
    exit(1);
  }
  return st;
}

static unsigned long long used(ux_store *st, const char *party) {
  ux_ledger_usage u;
  return ux_ledger_usage_of(st, party, &u) == 0 ? u.used : ~0ull;
}

static long long items_of(ux_store *st, const char *party, ux_ledger_kind k) {
  ux_ledger_usage u;
  return ux_ledger_usage_of(st, party, &u) == 0 ? u.kind[k].items : -1;
}

static void test_limits(ux_store *st) {
  ok(ux_ledger_reserve(st, "key/a", UX_LEDGER_JOB, "jobs/j1", 400) == UX_LEDGER_OK, "a reservation within the quota");
  ok(ux_ledger_reserve(st, "key/a", UX_LEDGER_JOB, "jobs/j2", 300) == UX_LEDGER_QUOTA,
     "one past the party's quota is refused");
  ok(ux_ledger_reserve(st, "key/a", UX_LEDGER_JOB, "jobs/j1", 1) == UX_LEDGER_EXISTS, "an item is counted once");
  ok(ux_ledger_reserve(st, "key/b", UX_LEDGER_JOB, "jobs/j3", 500) == UX_LEDGER_OK, "another party has its own quota");
  ok(ux_ledger_reserve(st, "tenant/t", UX_LEDGER_OBJECT, "cp_object_versions/v0", 200) == UX_LEDGER_BUDGET,
     "one past the budget is refused, whatever the party's quota");
  ok(used(st, "key/a") == 400 && used(st, NULL) == 900, "refusals changed nothing");
  ok(ux_ledger_grow(st, "jobs/j1", 200) == UX_LEDGER_BUDGET, "a reservation grows within the budget only");
  ux_ledger_cancel(st, "jobs/j3");
  ok(ux_ledger_grow(st, "jobs/j1", 200) == UX_LEDGER_OK && used(st, "key/a") == 600, "a reservation grows");
  ok(ux_ledger_grow(st, "jobs/j1", 1) == UX_LEDGER_QUOTA, "... but not past the quota");
  ux_ledger_cancel(st, "jobs/j1");
  ok(used(st, NULL) == 0, "cancelled reservations are gone");
  ok(ux_ledger_reserve(st, "tenant/x", UX_LEDGER_VOLUME, "cp_workspaces/x", 800) == UX_LEDGER_QUOTA &&
     ux_ledger_reserve(st, "tenant/op", UX_LEDGER_VOLUME, "cp_workspaces/op", 800) == UX_LEDGER_OK,
     "the operator is bounded by the budget only, a tenant by its quota");
  ux_ledger_cancel(st, "cp_workspaces/op");
}

static json_t *job_doc(const char *id, const char *status, const char *out) {
  return json_pack("{s:s,s:s,s:s}", "job_id", id, "status", status, "stdout", out);
}

static void test_rows(ux_store *st) {
  /* a job: reserved, pending row (not final), final row (committed at its real size) */
  ux_ledger_reserve(st, "key/a", UX_LEDGER_JOB, "jobs/j4", 500);
  json_t *d = job_doc("j4", "pending", "");
  ux_store_insert(st, "jobs", "j4", "a", "pending", d);
  json_decref(d);
  ok(used(st, "key/a") == 500, "a pending row keeps the reservation");
  d = job_doc("j4", "completed", "hello");
  char *text = json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ux_store_update(st, "jobs", "j4", "a", "completed", d, NULL);
  ok(used(st, "key/a") == strlen(text), "the final row commits its real size (%llu)", used(st, "key/a"));
  ux_ledger_cancel(st, "jobs/j4");
  ok(used(st, "key/a") == strlen(text), "a committed item is not cancelled");
  free(text);
  json_decref(d);
  ux_store_delete(st, "jobs", "j4", "a");
  ok(used(st, "key/a") == 0, "deleting the row drops its item");
  /* a session's volume keeps the size reserved */
  ux_ledger_reserve(st, "key/a", UX_LEDGER_VOLUME, "sessions/s1", 100);
  d = json_pack("{s:s,s:I}", "id", "s1", "created_at", (json_int_t)1);
  ux_store_insert(st, "sessions", "s1", "a", "running", d);
  json_decref(d);
  ok(used(st, "key/a") == 100 && items_of(st, "key/a", UX_LEDGER_VOLUME) == 1, "a session's volume is counted");
  /* an image moves with its owner, within the receiver's quota */
  ux_ledger_reserve(st, "key/a", UX_LEDGER_IMAGE, "images/i1", 50);
  d = json_pack("{s:s,s:I,s:I}", "id", "i1", "created_at", (json_int_t)1, "size_bytes", (json_int_t)40);
  ux_store_insert(st, "images", "i1", "a", "ready", d);
  json_decref(d);
  ok(used(st, "key/a") == 140, "an image's row commits its size_bytes");
  ok(ux_store_set_owner(st, "images", "i1", "a", "c") == 1 && used(st, "key/c") == 40 &&
     used(st, "key/a") == 100, "a new owner takes the image's bytes along");
  ux_ledger_reserve(st, "key/c", UX_LEDGER_JOB, "jobs/big", 560);
  ok(ux_ledger_within(st, "key/c") == 1, "600 of 600: within the quota");
  ux_ledger_cancel(st, "jobs/big");
  ux_ledger_reserve(st, "key/b", UX_LEDGER_JOB, "jobs/big2", 570);
  ux_store_set_owner(st, "images", "i1", "c", "b");
  ok(ux_ledger_within(st, "key/b") == 0, "610 of 600: a receiver without room is told so");
  ux_ledger_cancel(st, "jobs/big2");
  ux_store_set_owner(st, "images", "i1", "b", "c");
}

typedef struct { ux_store *st; int id, won; } racer;

static void *race(void *arg) {
  racer *r = arg;
  for (int i = 0; i < 50; i++) {
    char item[64];
    snprintf(item, sizeof item, "jobs/race-%d-%d", r->id, i);
    if (ux_ledger_reserve(r->st, "key/p", UX_LEDGER_JOB, item, 10) == UX_LEDGER_OK) r->won++;
  }
  return NULL;
}

static void test_race(ux_store *st) {
  pthread_t t[8];
  racer r[8];
  for (int i = 0; i < 8; i++) {
    r[i] = (racer){ st, i, 0 };
    pthread_create(&t[i], NULL, race, &r[i]);
  }
  int won = 0;
  for (int i = 0; i < 8; i++) { pthread_join(t[i], NULL); won += r[i].won; }
  ok(won == 60 && used(st, "key/p") == 600, "8 threads, 400 reservations of 10 for a quota of 600: %d won", won);
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 50; k++) {
      char item[64];
      snprintf(item, sizeof item, "jobs/race-%d-%d", i, k);
      ux_ledger_cancel(st, item);
    }
  ok(used(st, "key/p") == 0, "cancelled, they are gone");
}

static void test_reopen(const char *dir) {
  ux_store *st = open_all(dir);
  /* what a crash leaves, and rows from before the ledger */
  ux_ledger_reserve(st, "key/a", UX_LEDGER_SNAPSHOT, "snapshots/half", 70);
  ux_db_exec(st, "INSERT INTO ledger VALUES('jobs/ghost', 'key/a', 'job', 5, 0)", "");
  ux_db_exec(st, "INSERT INTO sessions(id, owner, status, created_at, doc)"
                 " VALUES('old', 'z', 'running', 1, '{}')", "");
  ux_db_exec(st, "DELETE FROM ledger WHERE item = 'sessions/old'", "");
  ux_db_exec(st, "INSERT INTO cp_workspaces VALUES('ws-1', 't2')", "");
  ux_db_exec(st, "INSERT INTO cp_object_versions VALUES('user-uploads', 'users/acme/s/uploads/u/f', 1, 'v1', 0, 33),"
                 " ('sandbox-workspaces', 'workspaces/ws-1/checkpoints/c.tar.gz', 1, 'v2', 0, 44),"
                 " ('user-uploads', 'users/acme/s/uploads/u/f', 2, 'v3', 1, 0)", "");
  ux_db_exec(st, "DELETE FROM ledger WHERE item LIKE 'cp_%'", "");
  ok(ux_ledger_reserve(st, "tenant/t2", UX_LEDGER_VOLUME, "cp_workspaces/ws-2", 100) == UX_LEDGER_OK &&
     ux_ledger_commit(st, "cp_workspaces/ws-2") == 1 && ux_ledger_commit(st, "cp_workspaces/ws-2") == 0,
     "a reservation is counted once by its writer");
  ux_db_exec(st, "INSERT INTO cp_workspaces VALUES('ws-2', 't2')", "");
  ux_store_close(st);
  st = open_all(dir);
  ok(used(st, "key/a") == 100, "a reopen has no reservation of before, and drops the item without a row");
  ok(used(st, "key/z") == 100, "a session from before the ledger is charged a volume");
  ok(used(st, "tenant/t2") == 200 + 44 && items_of(st, "tenant/t2", UX_LEDGER_CHECKPOINT) == 1,
     "a workspace and its checkpoint are the workspace's tenant's");
  ok(used(st, "tenant/acme") == 33 && items_of(st, "tenant/acme", UX_LEDGER_OBJECT) == 1,
     "an object version is its owner's tenant's (a delete marker holds nothing)");
  ok(used(st, NULL) == 100 + 40 + 100 + 244 + 33, "the totals are the items' sum (%llu)", used(st, NULL));
  ux_ledger_limits lim;
  ux_ledger_limits_of(st, &lim);
  ok(lim.budget == 1000 && lim.key_quota == 600 && lim.tenant_quota == 500, "the limits are the ones given");
  ux_store_close(st);
}

int main(void) {
  char dir[] = "/tmp/unsb-ledger-XXXXXX";
  ux_mem_init();
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
  ux_store *st = open_all(dir);
  test_limits(st);
  test_rows(st);
  test_race(st);
  ux_store_close(st);
  test_reopen(dir);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return tap_done();
}
