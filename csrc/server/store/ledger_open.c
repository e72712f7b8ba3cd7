/*
** The ledger's tables and triggers, and what every start does with them
** (ledger.h). The rows the ledger follows are described once, in
** SOURCES: for each, the name of its item, its party, its kind and the
** bytes its row says it holds. From that one table come the triggers
** that commit an item when its row is stored and drop it when the row
** goes, and the view ledger_rows (every item the rows call for), with
** which a start drops items whose row is gone, adopts rows without an
** item (a data directory older than the ledger), and recounts the
** totals. Reservations are not here: they are memory (ledger.c), and a
** crash leaves none.
*/
#include "server/store/ledger.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "server/fsutil.h"
#include "server/mem.h"
#include "server/store/db.h"
#include "server/store/store_int.h"

static const char SCHEMA[] =
  "CREATE TABLE IF NOT EXISTS ledger(item TEXT PRIMARY KEY, party TEXT NOT NULL,"
  "  kind TEXT NOT NULL, bytes INTEGER NOT NULL, created_at INTEGER NOT NULL);"
  /* per party and kind, and per kind for everyone (party '*') */
  "CREATE TABLE IF NOT EXISTS ledger_totals(party TEXT NOT NULL, kind TEXT NOT NULL,"
  "  bytes INTEGER NOT NULL, items INTEGER NOT NULL, PRIMARY KEY(party, kind));"
  /* what a row whose bytes the row does not say is charged when nobody
  ** reserved them (a volume, a log): set by every start */
  "CREATE TABLE IF NOT EXISTS ledger_sizes(kind TEXT PRIMARY KEY, bytes INTEGER NOT NULL);"
  /* one upsert per total: the party's and everyone's */
  "DROP TRIGGER IF EXISTS ledger_add;"
  "CREATE TRIGGER ledger_add AFTER INSERT ON ledger BEGIN"
  "  INSERT INTO ledger_totals VALUES(new.party, new.kind, new.bytes, 1) ON CONFLICT DO UPDATE"
  "    SET bytes = bytes + excluded.bytes, items = items + 1;"
  "  INSERT INTO ledger_totals VALUES('*', new.kind, new.bytes, 1) ON CONFLICT DO UPDATE"
  "    SET bytes = bytes + excluded.bytes, items = items + 1;"
  "END;"
  "DROP TRIGGER IF EXISTS ledger_sub;"
  "CREATE TRIGGER ledger_sub AFTER DELETE ON ledger BEGIN"
  "  UPDATE ledger_totals SET bytes = bytes - old.bytes, items = items - 1"
  "    WHERE party = old.party AND kind = old.kind;"
  "  UPDATE ledger_totals SET bytes = bytes - old.bytes, items = items - 1"
  "    WHERE party = '*' AND kind = old.kind;"
  "  DELETE FROM ledger_totals WHERE party = old.party AND kind = old.kind AND items <= 0 AND party <> '*';"
  "END;"
  "DROP TRIGGER IF EXISTS ledger_change;"
  "CREATE TRIGGER ledger_change AFTER UPDATE OF bytes, party ON ledger BEGIN"
  "  UPDATE ledger_totals SET bytes = bytes - old.bytes, items = items - 1"
  "    WHERE party = old.party AND kind = old.kind;"
  "  UPDATE ledger_totals SET bytes = bytes - old.bytes, items = items - 1"
  "    WHERE party = '*' AND kind = old.kind;"
  "  DELETE FROM ledger_totals WHERE party = old.party AND kind = old.kind AND items <= 0 AND party <> '*';"
  "  INSERT INTO ledger_totals VALUES(new.party, new.kind, new.bytes, 1) ON CONFLICT DO UPDATE"
  "    SET bytes = bytes + excluded.bytes, items = items + 1;"
  "  INSERT INTO ledger_totals VALUES('*', new.kind, new.bytes, 1) ON CONFLICT DO UPDATE"
  "    SET bytes = bytes + excluded.bytes, items = items + 1;"
  "END;";

/*
** The triggers hand a reservation (in memory, ledger.c) over to the item
** they count, through two SQL functions of this connection:
** ux_ledger_held(item, 'party' | 'kind' | 'bytes') reads the reservation
** (NULL when there is none) and ux_ledger_release(item) drops it.
*/
static const char *const KIND_NAMES[UX_LEDGER_KINDS] = {
  "volume", "snapshot", "image", "job", "log", "checkpoint", "object"
};

static void sql_held(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  ux_store *st = sqlite3_user_data(ctx);
  const char *item = (const char *)sqlite3_value_text(argv[0]);
  const char *field = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  sqlite3_result_null(ctx);
  if (!item || !field) return;
  pthread_mutex_lock(&st->mu);
  for (size_t i = 0; i < st->n_holds; i++) {
    const ux_ledger_hold *h = &st->holds[i];
    if (strcmp(h->item, item) != 0) continue;
    if (!strcmp(field, "bytes")) sqlite3_result_int64(ctx, (sqlite3_int64)h->bytes);
    else if (!strcmp(field, "party")) sqlite3_result_text(ctx, h->party, -1, SQLITE_TRANSIENT);
    else if (!strcmp(field, "kind")) sqlite3_result_text(ctx, KIND_NAMES[h->kind], -1, SQLITE_STATIC);
    break;
  }
  pthread_mutex_unlock(&st->mu);
}

static void sql_release(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *item = (const char *)sqlite3_value_text(argv[0]);
  if (item) ux_ledger_release_hold(sqlite3_user_data(ctx), item, NULL);
  sqlite3_result_null(ctx);
}

int ux_ledger_schema(ux_store *st) {
  int flags = SQLITE_UTF8;                          /* triggers call them */
  if (sqlite3_create_function(st->db, "ux_ledger_held", 2, flags, st, sql_held, NULL, NULL) != SQLITE_OK ||
      sqlite3_create_function(st->db, "ux_ledger_release", 1, flags, st, sql_release, NULL, NULL) != SQLITE_OK)
    return -1;
  return ux_db_exec(st, SCHEMA, "") < 0 ? -1 : 0;
}

/*
** The rows that hold counted bytes. Every expression is SQL over the
** row, PFX standing for "new." or "old." in a trigger and for nothing in
** the view. party and kind: those of the reservation when there is one
** (what the writer was refused or allowed against), else these. bytes:
** the row's own account of its size; NULL when it has none (a volume, a
** log: what was reserved, else ledger_sizes). final: the rows whose bytes
** are all there (a job's pending row holds no output yet). commit: the
** events that count the item; none when its writer does (ux_ledger_commit:
** a workspace's row is stored before its volume is made). owner: the
** column whose change gives the item to another key (an image's
** transfer).
*/
typedef struct source {
  const char *table, *item, *party, *kind, *bytes, *final, *commit, *owner;
} source;

#define KEY_PARTY "'key/' || PFXowner"
static const source SOURCES[] = {
  { "jobs", "'jobs/' || PFXid", KEY_PARTY, "'job'",
    "coalesce(PFXfile_bytes, length(CAST(PFXdoc AS BLOB)))",
    "PFXstatus NOT IN ('pending', 'running')", "INSERT|UPDATE OF status, doc", NULL },
  { "sessions", "'sessions/' || PFXid", KEY_PARTY, "'volume'", NULL, "1", "INSERT", NULL },
  { "services", "'services/' || PFXid", KEY_PARTY, "'volume'", NULL, "1", "INSERT", NULL },
  { "services", "'services/' || PFXid || '/log'", KEY_PARTY, "'log'", NULL, "1", "INSERT", NULL },
  { "snapshots", "'snapshots/' || PFXid", KEY_PARTY, "'snapshot'",
    "json_extract(PFXdoc, '$.size_bytes')", "1", "INSERT", NULL },
  { "images", "'images/' || PFXid", KEY_PARTY, "'image'",
    "json_extract(PFXdoc, '$.size_bytes')", "1", "INSERT", "owner" },
  { "cp_workspaces", "'cp_workspaces/' || PFXid", "'tenant/' || PFXtenant", "'volume'", NULL, "1", "", NULL },
  /* a version's tenant: users/<tenant>/<subject>/... ; a checkpoint's,
  ** its workspace's */
  { "cp_object_versions", "'cp_object_versions/' || PFXversion_id",
    "CASE WHEN PFXkey LIKE 'users/%/%' THEN 'tenant/' || substr(PFXkey, 7, instr(substr(PFXkey, 7), '/') - 1)"
    " ELSE coalesce((SELECT 'tenant/' || w.tenant FROM cp_workspaces w WHERE w.id ="
    " substr(PFXkey, 12, instr(substr(PFXkey, 12), '/') - 1)), '') END",
    "CASE PFXbucket WHEN 'sandbox-workspaces' THEN 'checkpoint' ELSE 'object' END",
    "PFXbytes", "PFXdelete_marker = 0", "INSERT", NULL },
};
#define N_SOURCES (sizeof SOURCES / sizeof SOURCES[0])

/* A malloc'd copy of expr with PFX replaced by pfx. */
static char *expand(const char *expr, const char *pfx) {
  size_t n = 1, plen = strlen(pfx);
  for (const char *p = expr; *p; p++) n += strncmp(p, "PFX", 3) ? 1 : plen;
  char *out = ux_xmalloc(n), *o = out;
  for (const char *p = expr; *p;) {
    if (!strncmp(p, "PFX", 3)) { memcpy(o, pfx, plen); o += plen; p += 3; }
    else *o++ = *p++;
  }
  *o = '\0';
  return out;
}

static int exec_owned(ux_store *st, char *sql) {
  int rc = ux_db_exec(st, sql, "");
  free(sql);
  return rc < 0 ? -1 : 0;
}

/* The triggers of source n: one per commit event (the item counted, the
** reservation handed back), one for the delete, one for a new owner. */
static int make_triggers(ux_store *st, const source *s, int n) {
  char *item = expand(s->item, "new."), *party = expand(s->party, "new."), *kind = expand(s->kind, "new.");
  char *bytes = expand(s->bytes ? s->bytes : "NULL", "new."), *final = expand(s->final, "new.");
  char *old_item = expand(s->item, "old."), events[64];
  snprintf(events, sizeof events, "%s", s->commit);
  int rc = 0, e = 0;
  for (char *save = NULL, *ev = strtok_r(events, "|", &save); ev && rc == 0;
       ev = strtok_r(NULL, "|", &save), e++)
    rc = exec_owned(st, ux_xasprintf(
      "DROP TRIGGER IF EXISTS ledger_commit_%d_%d;"
      "CREATE TRIGGER ledger_commit_%d_%d AFTER %s ON %s WHEN %s BEGIN"
      " INSERT OR REPLACE INTO ledger(item, party, kind, bytes, created_at) VALUES(%s,"
      "  coalesce(ux_ledger_held(%s, 'party'), %s), coalesce(ux_ledger_held(%s, 'kind'), %s),"
      "  coalesce(%s, ux_ledger_held(%s, 'bytes'), (SELECT bytes FROM ledger_sizes WHERE kind = %s), 0),"
      "  CAST(strftime('%%s', 'now') AS INTEGER));"
      " SELECT ux_ledger_release(%s); END;",
      n, e, n, e, ev, s->table, final, item, item, party, item, kind, bytes, item, kind, item));
  if (rc == 0)
    rc = exec_owned(st, ux_xasprintf(
      "DROP TRIGGER IF EXISTS ledger_drop_%d;"
      "CREATE TRIGGER ledger_drop_%d AFTER DELETE ON %s BEGIN DELETE FROM ledger WHERE item = %s; END;",
      n, n, s->table, old_item));
  if (rc == 0 && s->owner)
    rc = exec_owned(st, ux_xasprintf(
      "DROP TRIGGER IF EXISTS ledger_owner_%d;"
      "CREATE TRIGGER ledger_owner_%d AFTER UPDATE OF %s ON %s BEGIN"
      " UPDATE ledger SET party = %s WHERE item = %s; END;", n, n, s->owner, s->table, party, item));
  free(item); free(party); free(kind); free(bytes); free(final); free(old_item);
  return rc;
}

/* The view of every item the rows call for: item, party, kind, bytes
** (NULL: as reserved). */
static int make_view(ux_store *st) {
  char *sql = ux_xstrdup("DROP VIEW IF EXISTS ledger_rows; CREATE VIEW ledger_rows AS ");
  for (size_t i = 0; i < N_SOURCES; i++) {
    const source *s = &SOURCES[i];
    char *item = expand(s->item, ""), *party = expand(s->party, ""), *kind = expand(s->kind, "");
    char *bytes = expand(s->bytes ? s->bytes : "NULL", ""), *final = expand(s->final, "");
    char *part = ux_xasprintf("%s SELECT %s AS item, %s AS party, %s AS kind, %s AS bytes FROM %s WHERE %s",
                              i ? " UNION ALL" : "", item, party, kind, bytes, s->table, final);
    char *joined = ux_xasprintf("%s%s", sql, part);
    free(item); free(party); free(kind); free(bytes); free(final); free(part); free(sql);
    sql = joined;
  }
  char *done = ux_xasprintf("%s;", sql);
  free(sql);
  return exec_owned(st, done);
}

/* What a start does: items without a row go, rows without an item are
** adopted (charged ledger_sizes where the row does not say its size),
** the totals are counted afresh. One transaction, so nothing is seen
** half done. */
typedef struct { long long volume, log; } adopt_sizes;

static int settle_tx(ux_store *st, void *ctx) {
  const adopt_sizes *a = ctx;
  if (ux_db_exec(st, "INSERT OR REPLACE INTO ledger_sizes VALUES('volume', ?1), ('log', ?2)", "ii",
                 a->volume, a->log) < 0 ||
      ux_db_exec(st, "DELETE FROM ledger WHERE item NOT IN (SELECT item FROM ledger_rows)", "") < 0 ||
      ux_db_exec(st, "INSERT OR IGNORE INTO ledger(item, party, kind, bytes, created_at)"
                     " SELECT item, party, kind, coalesce(bytes, (SELECT s.bytes FROM ledger_sizes s"
                     " WHERE s.kind = ledger_rows.kind), 0), ?1 FROM ledger_rows",
                 "i", (long long)ux_now()) < 0 ||
      ux_db_exec(st, "DELETE FROM ledger_totals", "") < 0 ||
      ux_db_exec(st, "INSERT INTO ledger_totals SELECT party, kind, sum(bytes), count(*)"
                     " FROM ledger GROUP BY party, kind", "") < 0 ||
      ux_db_exec(st, "INSERT INTO ledger_totals SELECT '*', kind, sum(bytes), count(*)"
                     " FROM ledger GROUP BY kind", "") < 0)
    return -1;
  return 0;
}

/* A budget of 0: what is counted now plus half the free space. */
static unsigned long long default_budget(ux_store *st, const char *data_dir) {
  ux_ledger_usage u;
  struct statvfs fs;
  ux_ledger_usage_of(st, NULL, &u);
  if (statvfs(data_dir, &fs) != 0) return 1ull << 62;
  return u.used + (unsigned long long)fs.f_bavail * fs.f_frsize / 2;
}

int ux_ledger_open(ux_store *st, const char *data_dir, const ux_ledger_limits *lim,
                   char *err, size_t errlen) {
  for (size_t i = 0; i < N_SOURCES; i++)
    if (make_triggers(st, &SOURCES[i], (int)i) != 0) {
      snprintf(err, errlen, "cannot create the ledger's triggers on %s", SOURCES[i].table);
      return -1;
    }
  adopt_sizes a = { (long long)lim->volume_bytes, (long long)lim->log_bytes };
  if (make_view(st) != 0 || ux_db_tx(st, settle_tx, &a) != 0) {
    snprintf(err, errlen, "cannot settle the ledger with the stored rows");
    return -1;
  }
  unsigned long long budget = lim->budget ? lim->budget : default_budget(st, data_dir);
  /* a quarter of the budget, so it takes four parties to fill it; but on
  ** a small disk at least one volume and a sixteenth more (its jobs'
  ** output), or a party could not even have a session */
  unsigned long long quota = budget / 4, least = lim->volume_bytes + lim->volume_bytes / 16;
  if (quota < least) quota = least < budget ? least : budget;
  pthread_mutex_lock(&st->mu);
  st->budget = budget;
  st->key_quota = lim->key_quota ? lim->key_quota : quota;
  st->tenant_quota = lim->tenant_quota ? lim->tenant_quota : quota;
  snprintf(st->operator_party, sizeof st->operator_party, "%s", lim->operator_party ? lim->operator_party : "");
  pthread_mutex_unlock(&st->mu);
  return 0;
}
