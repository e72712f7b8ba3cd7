/*
** The execution API's documents in the store (store.h): creation never
** replaces, changes are conditional, recovery is one statement, and a
** change racing a deletion never brings the row back (threads on one
** store, 300 rounds each for lock-vs-delete and touch-vs-delete).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/mem.h"
#include "server/store/db.h"
#include "server/store/store.h"
#include "tests/tap.h"

static json_t *doc_of(const char *id, const char *extra_key, json_t *extra) {
  json_t *d = json_pack("{s:s,s:s,s:I}", "id", id, "status", "ready", "created_at", (json_int_t)100);
  if (extra_key) json_object_set_new(d, extra_key, extra);
  return d;
}

static void test_insert(ux_store *st) {
  json_t *d = doc_of("s1", "locked", json_false());
  ok(ux_store_insert(st, "snapshots", "s1", "alice", "ready", d) == 0, "insert creates a row");
  ok(ux_store_insert(st, "snapshots", "s1", "alice", "ready", d) == -1, "a second insert of the id fails");
  ok(ux_store_insert(st, "nosuch", "s1", "alice", "ready", d) == -1, "an unknown table is refused");
  json_t *got = ux_store_get(st, "snapshots", "s1", "alice");
  ok(got && json_equal(got, d), "get returns the document as stored");
  json_decref(got);
  ok(!ux_store_get(st, "snapshots", "s1", "bob"), "another owner does not see it");
  got = ux_store_get(st, "snapshots", "s1", NULL);
  ok(got != NULL, "owner NULL sees it");
  json_decref(got);
  json_decref(d);
}

static void test_child(ux_store *st) {
  json_t *parent = doc_of("sess", NULL, NULL), *child = doc_of("snap", NULL, NULL);
  ok(ux_store_insert_child(st, "snapshots", "snap", "alice", "ready", child, "sessions", "sess") == 0,
     "a child of a missing parent is not stored");
  ok(!ux_store_get(st, "snapshots", "snap", NULL), "... and no row exists");
  ux_store_insert(st, "sessions", "sess", "alice", "running", parent);
  ok(ux_store_insert_child(st, "snapshots", "snap", "bob", "ready", child, "sessions", "sess") == 0,
     "a parent of another owner does not count");
  ok(ux_store_insert_child(st, "snapshots", "snap", "alice", "ready", child, "sessions", "sess") == 1,
     "a child of an existing parent is stored");
  ok(ux_store_insert_child(st, "snapshots", "snap", "alice", "ready", child, "nosuch", "sess") == -1,
     "an unknown parent table is refused");
  json_decref(parent);
  json_decref(child);
}

static void test_update(ux_store *st) {
  static const char *const unfinished[] = { "pending", "running", NULL };
  json_t *d = json_pack("{s:s,s:s,s:I,s:n,s:n}", "job_id", "j1", "status", "pending",
                        "created_at", (json_int_t)5, "completed_at", "error");
  ux_store_insert(st, "jobs", "j1", "alice", "pending", d);
  json_object_set_new(d, "status", json_string("completed"));
  ok(ux_store_update(st, "jobs", "j1", "alice", "completed", d, unfinished) == 1, "pending -> completed");
  json_object_set_new(d, "status", json_string("running"));
  ok(ux_store_update(st, "jobs", "j1", "alice", "running", d, unfinished) == 0,
     "a finished job's row does not change again");
  json_t *got = ux_store_get(st, "jobs", "j1", "alice");
  is_str(json_string_value(json_object_get(got, "status")), "completed", "... it stays completed");
  json_decref(got);
  ok(ux_store_update(st, "jobs", "j1", "alice", "failed", d, NULL) == 1, "from NULL: any status");
  ok(ux_store_update(st, "jobs", "nosuch", "alice", "failed", d, NULL) == 0, "no such row: 0");
  json_decref(d);

  /* recovery: one statement, fields edited in place, order kept */
  json_t *p = json_pack("{s:s,s:s,s:s,s:I,s:n,s:n}", "job_id", "j2", "status", "running",
                        "language", "bash", "created_at", (json_int_t)6, "completed_at", "error");
  ux_store_insert(st, "jobs", "j2", "alice", "running", p);
  json_decref(p);
  ok(ux_store_recover_jobs(st, 777) == 1, "recovery marks the one unfinished job");
  char *text = NULL;
  got = ux_store_get(st, "jobs", "j2", NULL);
  if (got) text = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
  is_str(text, "{\"job_id\":\"j2\",\"status\":\"failed\",\"language\":\"bash\",\"created_at\":6,"
               "\"completed_at\":777,\"error\":\"server restarted\"}", "... failed, in the same key order");
  free(text);
  json_decref(got);
  ok(ux_store_recover_jobs(st, 778) == 0, "a second recovery finds nothing");
}

static void test_fields(ux_store *st) {
  json_t *yes = json_true(), *no = json_false(), *out = NULL;
  ok(ux_store_set_field(st, "snapshots", "s1", "alice", "locked", yes, &out) == 1 &&
     json_is_true(json_object_get(out, "locked")), "set_field returns the new document");
  ok(json_integer_value(json_object_get(out, "created_at")) == 100, "... with the rest untouched");
  json_decref(out);
  ok(ux_store_set_field(st, "snapshots", "s1", "bob", "locked", yes, &out) == 0 && !out,
     "another owner's row: 0");
  ok(ux_store_set_field(st, "snapshots", "gone", "alice", "locked", yes, &out) == 0, "no such row: 0");
  ok(ux_store_set_field(st, "snapshots", "s1", "alice", "bad'field", yes, &out) == -1,
     "a field name that is not a plain word is refused");
  ok(ux_store_delete_unless(st, "snapshots", "s1", "alice", "locked") == UX_STORE_REFUSED,
     "a locked snapshot is not deleted");
  ok(ux_store_delete_unless(st, "snapshots", "s1", "bob", "locked") == UX_STORE_ABSENT,
     "another owner's row is absent");
  ux_store_set_field(st, "snapshots", "s1", "alice", "locked", no, &out);
  json_decref(out);
  ok(ux_store_delete_unless(st, "snapshots", "s1", "alice", "locked") == UX_STORE_DELETED,
     "unlocked: deleted");
  ok(ux_store_delete_unless(st, "snapshots", "s1", "alice", "locked") == UX_STORE_ABSENT,
     "deleted twice: absent");
  json_t *bare = doc_of("nolock", NULL, NULL);
  ux_store_insert(st, "snapshots", "nolock", "alice", "ready", bare);
  json_decref(bare);
  ok(ux_store_delete_unless(st, "snapshots", "nolock", "alice", "locked") == UX_STORE_DELETED,
     "a document without the field is deleted");
}

/* ---------------------------------------------------------------------
** the race: a change and a deletion of the same row at once
** ------------------------------------------------------------------- */

typedef struct {
  ux_store *st;
  const char *table, *id, *field;
  pthread_barrier_t *go;
  int rc;
} racer;

static void *do_delete(void *arg) {
  racer *r = arg;
  pthread_barrier_wait(r->go);
  r->rc = !strcmp(r->table, "snapshots")
          ? ux_store_delete_unless(r->st, r->table, r->id, "alice", "locked")
          : ux_store_delete(r->st, r->table, r->id, "alice");
  return NULL;
}

static void *do_change(void *arg) {
  racer *r = arg;
  json_t *v = !strcmp(r->field, "locked") ? json_true() : json_integer(12345), *out = NULL;
  pthread_barrier_wait(r->go);
  r->rc = ux_store_set_field(r->st, r->table, r->id, "alice", r->field, v, &out);
  json_decref(out);
  json_decref(v);
  return NULL;
}

/* Rounds in which a DELETE answered "deleted" but the row exists after. */
static int race(ux_store *st, const char *table, const char *field, int rounds) {
  int resurrected = 0;
  for (int i = 0; i < rounds; i++) {
    char id[32];
    snprintf(id, sizeof id, "race-%s-%d", table, i);
    json_t *d = doc_of(id, "locked", json_false());
    ux_store_insert(st, table, id, "alice", "ready", d);
    json_decref(d);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    racer del = { st, table, id, field, &go, -1 }, chg = { st, table, id, field, &go, -1 };
    pthread_t a, b;
    pthread_create(&a, NULL, do_delete, &del);
    pthread_create(&b, NULL, do_change, &chg);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&go);
    json_t *after = ux_store_get(st, table, id, NULL);
    if (del.rc == UX_STORE_DELETED && after) resurrected++;
    json_decref(after);
  }
  return resurrected;
}

/* Reads a whole spool through ux_spool_read in pieces of `piece`. */
static char *read_spool(ux_spool *sp, unsigned long long len, size_t piece) {
  char *out = ux_xmalloc(len + 1);
  unsigned long long at = 0;
  while (at < len) {
    ssize_t n = ux_spool_read(sp, at, out + at, piece);
    if (n <= 0) break;
    at += (unsigned long long)n;
  }
  out[at] = '\0';
  if (at != len) { free(out); return NULL; }
  return out;
}

static void test_spool(ux_store *st) {
  /* a document of 3 MB (a file shared by its readers) and a small one */
  size_t big_len = 3u << 20;
  char *blob = ux_xmalloc(big_len + 1);
  for (size_t i = 0; i < big_len; i++) blob[i] = (char)('a' + i % 26);
  blob[big_len] = '\0';
  json_t *big = json_pack("{s:s,s:I,s:s}", "job_id", "job_big", "created_at", (json_int_t)1, "stdout", blob);
  json_t *small = json_pack("{s:s,s:I}", "job_id", "job_small", "created_at", (json_int_t)1);
  ok(ux_store_insert(st, "jobs", "job_big", "alice", "completed", big) == 0 &&
     ux_store_insert(st, "jobs", "job_small", "alice", "completed", small) == 0, "two finished jobs");
  char *want = json_dumps(big, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ux_spool *a = NULL, *b = NULL, *s = NULL, *none = NULL;
  unsigned long long la = 0, lb = 0, ls = 0, ln = 0;
  ok(ux_store_spool(st, "jobs", "job_big", "alice", &a, &la) == 1 &&
     ux_store_spool(st, "jobs", "job_big", NULL, &b, &lb) == 1 && a && a == b && la == strlen(want),
     "two readers of one large document share one spool of its exact length");
  char *got = a ? read_spool(a, la, 16384) : NULL;
  ok(got && !strcmp(got, want), "its bytes are the stored ones, read in 16 KiB pieces");
  ok(a && ux_spool_read(a, la, got, 10) == -1, "past the end: -1");
  free(got);
  ok(ux_store_spool(st, "jobs", "job_big", "bob", &none, &ln) == 0 && !none, "another owner finds nothing");
  ok(ux_store_spool(st, "jobs", "nosuch", "alice", &none, &ln) == 0, "an unknown id: 0");
  ok(ux_store_spool(st, "nosuch", "job_big", "alice", &none, &ln) == -1, "an unknown table: -1");
  ux_spool_put(a);
  got = b ? read_spool(b, lb, 1000) : NULL;
  ok(got && !strcmp(got, want), "the other reader still reads it after the first is done");
  free(got);
  ux_spool_put(b);
  char *want_small = json_dumps(small, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ok(ux_store_spool(st, "jobs", "job_small", "alice", &s, &ls) == 1 && ls == strlen(want_small),
     "a small document is read into memory");
  got = s ? read_spool(s, ls, 7) : NULL;
  ok(got && !strcmp(got, want_small), "and reads back the same");
  free(got);
  ux_spool_put(s);
  ux_spool *again = NULL;
  ok(ux_store_spool(st, "jobs", "job_big", "alice", &again, &la) == 1 && again, "a new spool after the last reader");
  ux_spool_put(again);
  free(want);
  free(want_small);
  free(blob);
  json_decref(big);
  json_decref(small);
}

typedef struct { char seen[256]; int stop_after; int calls; } each_seen;

static int each_collect(void *ctx, const char *doc, size_t len) {
  each_seen *e = ctx;
  json_t *d = json_loadb(doc, len, 0, NULL);
  const char *id = json_string_value(json_object_get(d, "id"));
  size_t used = strlen(e->seen);
  snprintf(e->seen + used, sizeof e->seen - used, "%s,", id ? id : "?");
  json_decref(d);
  return ++e->calls == e->stop_after;
}

static int count_row(void *ctx, ux_db_cursor *row) {
  (void)row;
  ++*(int *)ctx;
  return 0;
}

/* A list read row by row: the owner's documents in creation order, none
** of another owner's, a stop asked by fn, and the failures. */
static void test_each(ux_store *st) {
  const char *ids[] = { "e1", "e2", "e3" };
  for (int i = 0; i < 3; i++) {
    json_t *d = doc_of(ids[i], NULL, NULL);
    ux_store_insert(st, "services", ids[i], "each-owner", "ready", d);
    json_decref(d);
  }
  json_t *other = doc_of("e-other", NULL, NULL);
  ux_store_insert(st, "services", "e-other", "each-other", "ready", other);
  json_decref(other);
  each_seen e = { "", 0, 0 };
  int n = ux_store_each(st, "services", "each-owner", each_collect, &e);
  ok(n == 3 && !strcmp(e.seen, "e1,e2,e3,"), "each hands the owner's rows in creation order (%d: %s)", n, e.seen);
  each_seen first = { "", 2, 0 };
  n = ux_store_each(st, "services", "each-owner", each_collect, &first);
  ok(n == 2 && !strcmp(first.seen, "e1,e2,"), "fn stops the read when it returns non-zero (%d)", n);
  each_seen none = { "", 0, 0 };
  ok(ux_store_each(st, "services", "nobody", each_collect, &none) == 0 && none.calls == 0,
     "an owner with no rows: 0 and no call");
  ok(ux_store_each(st, "nosuch", "each-owner", each_collect, &none) == -1, "an unknown table: -1");
  int rows = 0;
  ok(ux_db_each(st, "SELECT nosuch FROM nowhere", "", count_row, &rows) == -1 && rows == 0,
     "a query the store refuses: -1, no row");
  ok(ux_db_each(st, "SELECT ?1 UNION ALL SELECT ?1", "s", count_row, &rows, "x") == 2 && rows == 2,
     "a query's rows are counted, with its bindings");
}

int main(void) {
  char dir[] = "/tmp/unsb-store-XXXXXX", err[256];
  ux_mem_init();
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
  ux_store *st = ux_store_open(dir, err, sizeof err);
  ok(st != NULL, "store opens (%s)", st ? "" : err);
  if (!st) return tap_done();
  test_insert(st);
  test_child(st);
  test_update(st);
  test_fields(st);
  test_spool(st);
  test_each(st);
  ok(race(st, "snapshots", "locked", 300) == 0, "300 rounds of lock vs delete: nothing comes back");
  ok(race(st, "sessions", "last_activity", 300) == 0,
     "300 rounds of a session touch vs delete: nothing comes back");
  ux_store_close(st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return tap_done();
}
