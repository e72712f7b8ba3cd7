/*
** The ledger's reservations and readings (ledger.h); its schema, its
** triggers and what a start does are ledger_open.c. Everything here runs
** under the store's lock (recursive: the statements take it again), so
** a check of the counted totals and the reservations in flight and the
** reservation it allows are one step for every other writer. The
** counted sums come from ledger_totals, kept by triggers on every change
** of the ledger, so a check reads a few rows whatever the number of
** items; reservations are few (one per write in progress) and scanned.
*/
#include "server/store/ledger.h"

#include <stdio.h>
#include <string.h>

#include "server/fsutil.h"
#include "server/mem.h"
#include "server/store/db.h"
#include "server/store/store_int.h"

static const char *const KIND[UX_LEDGER_KINDS] = {
  "volume", "snapshot", "image", "job", "log", "checkpoint", "object"
};

const char *ux_ledger_kind_name(ux_ledger_kind k) {
  return k >= 0 && k < UX_LEDGER_KINDS ? KIND[k] : "";
}

void ux_ledger_key(char *out, size_t len, const char *public_key) {
  snprintf(out, len, "key/%s", public_key);
}

void ux_ledger_tenant(char *out, size_t len, const char *tenant) {
  snprintf(out, len, "tenant/%s", tenant);
}

void ux_ledger_item(char *out, size_t len, const char *table, const char *id) {
  if (ux_path(out, len, "%s/%s", table, id) < 0 && len) out[0] = '\0';
}

void ux_ledger_limits_of(ux_store *st, ux_ledger_limits *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&st->mu);
  out->budget = st->budget;
  out->key_quota = st->key_quota;
  out->tenant_quota = st->tenant_quota;
  pthread_mutex_unlock(&st->mu);
}

/* The quota of a party, from the kind its name says. Locked. */
static unsigned long long quota_of(ux_store *st, const char *party) {
  if (st->operator_party[0] && !strcmp(party, st->operator_party)) return st->budget;
  if (!strncmp(party, "key/", 4)) return st->key_quota;
  if (!strncmp(party, "tenant/", 7)) return st->tenant_quota;
  return st->budget;
}

/* ------------------------------------------------------------------
** Reservations in memory (locked)
** ---------------------------------------------------------------- */

static ux_ledger_hold *hold_of(ux_store *st, const char *item) {
  for (size_t i = 0; i < st->n_holds; i++)
    if (!strcmp(st->holds[i].item, item)) return &st->holds[i];
  return NULL;
}

/* Reserved bytes of party (NULL: everyone's). */
static unsigned long long held_by(ux_store *st, const char *party) {
  unsigned long long n = 0;
  for (size_t i = 0; i < st->n_holds; i++)
    if (!party || !strcmp(st->holds[i].party, party)) n += st->holds[i].bytes;
  return n;
}

static void drop_hold(ux_store *st, ux_ledger_hold *h) {
  *h = st->holds[--st->n_holds];
}

int ux_ledger_release_hold(ux_store *st, const char *item, unsigned long long *bytes) {
  pthread_mutex_lock(&st->mu);
  ux_ledger_hold *h = hold_of(st, item);
  if (h && bytes) *bytes = h->bytes;
  if (h) drop_hold(st, h);
  pthread_mutex_unlock(&st->mu);
  return h != NULL;
}

/* What is counted for party and for everyone, and whether item (may be
** NULL) is: one statement. 0, or -1. */
static int counted(ux_store *st, const char *party, const char *item, long long *mine,
                   long long *all, int *exists) {
  json_t *row = ux_db_row(st,
    "SELECT (SELECT coalesce(sum(bytes), 0) FROM ledger_totals WHERE party = ?1) AS mine,"
    " (SELECT coalesce(sum(bytes), 0) FROM ledger_totals WHERE party = '*') AS total,"
    " EXISTS (SELECT 1 FROM ledger WHERE item = ?2) AS here", "ss", party, item ? item : "");
  if (!row) return -1;
  *mine = json_integer_value(json_object_get(row, "mine"));
  *all = json_integer_value(json_object_get(row, "total"));
  if (exists) *exists = json_integer_value(json_object_get(row, "here")) != 0;
  json_decref(row);
  return 0;
}

/* Whether `more` bytes fit for party beside what is counted (mine, all)
** and reserved: OK, QUOTA or BUDGET. Locked. */
static int fits(ux_store *st, const char *party, long long mine, long long all, unsigned long long more) {
  if ((unsigned long long)mine + held_by(st, party) + more > quota_of(st, party)) return UX_LEDGER_QUOTA;
  if ((unsigned long long)all + held_by(st, NULL) + more > st->budget) return UX_LEDGER_BUDGET;
  return UX_LEDGER_OK;
}

static int room(ux_store *st, const char *party, unsigned long long more) {
  long long mine, all;
  return counted(st, party, NULL, &mine, &all, NULL) != 0 ? UX_LEDGER_ERROR : fits(st, party, mine, all, more);
}

int ux_ledger_reserve(ux_store *st, const char *party, ux_ledger_kind kind,
                      const char *item, unsigned long long bytes) {
  if (!item || !*item || strlen(item) >= sizeof st->holds[0].item ||
      strlen(party) >= sizeof st->holds[0].party || kind < 0 || kind >= UX_LEDGER_KINDS)
    return UX_LEDGER_ERROR;
  pthread_mutex_lock(&st->mu);
  long long mine = 0, all = 0;
  int here = 0, rc = hold_of(st, item) ? UX_LEDGER_EXISTS
                   : counted(st, party, item, &mine, &all, &here) != 0 ? UX_LEDGER_ERROR
                   : here ? UX_LEDGER_EXISTS : fits(st, party, mine, all, bytes);
  if (rc == UX_LEDGER_OK) {
    if (st->n_holds == st->cap_holds) {
      st->cap_holds = st->cap_holds ? 2 * st->cap_holds : 64;
      st->holds = ux_xrealloc(st->holds, st->cap_holds * sizeof *st->holds);
    }
    ux_ledger_hold *h = &st->holds[st->n_holds++];
    snprintf(h->item, sizeof h->item, "%s", item);
    snprintf(h->party, sizeof h->party, "%s", party);
    h->kind = kind;
    h->bytes = bytes;
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_ledger_grow(ux_store *st, const char *item, unsigned long long more) {
  pthread_mutex_lock(&st->mu);
  ux_ledger_hold *h = hold_of(st, item);
  int rc = !h ? UX_LEDGER_ERROR : more ? room(st, h->party, more) : UX_LEDGER_OK;
  if (rc == UX_LEDGER_OK) h->bytes += more;
  pthread_mutex_unlock(&st->mu);
  return rc;
}

void ux_ledger_cancel(ux_store *st, const char *item) {
  if (item && *item) ux_ledger_release_hold(st, item, NULL);
}

int ux_ledger_commit(ux_store *st, const char *item) {
  pthread_mutex_lock(&st->mu);
  ux_ledger_hold *h = hold_of(st, item);
  int rc = 0;
  if (h) {
    rc = ux_db_exec(st, "INSERT OR IGNORE INTO ledger(item, party, kind, bytes, created_at)"
                        " VALUES(?1, ?2, ?3, ?4, ?5)", "sssii", h->item, h->party, KIND[h->kind],
                    (long long)h->bytes, (long long)ux_now()) < 0 ? -1 : 1;
    if (rc == 1) drop_hold(st, h);
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int ux_ledger_within(ux_store *st, const char *party) {
  pthread_mutex_lock(&st->mu);
  int ok = room(st, party, 0) == UX_LEDGER_OK;
  pthread_mutex_unlock(&st->mu);
  return ok;
}

/* ------------------------------------------------------------------
** Readings
** ---------------------------------------------------------------- */

int ux_ledger_usage_of(ux_store *st, const char *party, ux_ledger_usage *u) {
  memset(u, 0, sizeof *u);
  pthread_mutex_lock(&st->mu);
  json_t *rows = ux_db_rows(st, "SELECT kind, bytes, items FROM ledger_totals WHERE party = ?1",
                            "s", party ? party : "*");
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    const char *kind = json_string_value(json_object_get(row, "kind"));
    for (int k = 0; kind && k < UX_LEDGER_KINDS; k++)
      if (!strcmp(kind, KIND[k])) {
        u->kind[k].bytes = (unsigned long long)json_integer_value(json_object_get(row, "bytes"));
        u->kind[k].items = json_integer_value(json_object_get(row, "items"));
      }
  }
  for (size_t h = 0; h < st->n_holds; h++)
    if (!party || !strcmp(st->holds[h].party, party)) u->kind[st->holds[h].kind].bytes += st->holds[h].bytes;
  for (int k = 0; k < UX_LEDGER_KINDS; k++) u->used += u->kind[k].bytes;
  u->limit = party ? quota_of(st, party) : st->budget;
  pthread_mutex_unlock(&st->mu);
  int rc = rows ? 0 : -1;
  json_decref(rows);
  return rc;
}

void ux_ledger_explain(ux_store *st, const char *party, int result, unsigned long long bytes,
                       char *out, size_t len) {
  ux_ledger_usage u;
  unsigned long long mib = (bytes + (1 << 20) - 1) >> 20;
  if (result == UX_LEDGER_BUDGET) {
    ux_ledger_usage_of(st, NULL, &u);
    snprintf(out, len, "the server's disk budget (%llu MiB) has no room for %llu MiB more"
             " (%llu MiB in use by all keys and tenants); retry once others free some",
             u.limit >> 20, mib, u.used >> 20);
    return;
  }
  ux_ledger_usage_of(st, party, &u);
  snprintf(out, len, "the storage quota of this key (%llu MiB) has no room for %llu MiB more"
           " (%llu MiB in use); delete sessions, services, snapshots or images, or let finished"
           " jobs expire", u.limit >> 20, mib, u.used >> 20);
}
