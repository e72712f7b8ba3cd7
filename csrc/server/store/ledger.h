/*
** The ledger: every byte a key (execution API) or a tenant (Control
** Plane) stores, counted in one table of the store, so one party can
** neither fill the disk nor take what the others need.
**
** An item is one stored thing, named "<table>/<id>" after the row that
** holds it (jobs/<id>, sessions/<id>, services/<id> and services/<id>/log,
** snapshots/<id>, images/<id>, cp_workspaces/<id>,
** cp_object_versions/<version_id>). A writer reserves an item's bytes
** BEFORE it writes them (ux_ledger_reserve; a stream of unknown length
** grows its reservation ahead of its bytes, ux_ledger_grow), writes, and
** then stores its row: the store's triggers count the item (its real
** size, read from the row) in the same statement that inserts the row,
** and hand the reservation back in that statement too; the statement
** that deletes the row drops the item. So a counted item and its row
** never part, and no byte is counted twice or not at all. A write that
** fails cancels its reservation (ux_ledger_cancel; harmless after the
** row took it over).
**
** Reservations live in memory, under the store's lock: a crash takes
** them along, and nothing waits at the next start for a write that will
** never end. ux_ledger_open adopts rows that have no item (a data
** directory from before the ledger), drops items whose row is gone, and
** recounts the totals: the counts survive any restart.
**
** A reservation is decided under the store's lock from the counted
** totals and the reservations in flight: the party's sum plus the new
** bytes must stay within the party's quota, and everyone's within the
** budget, or nothing changes. Reserved and counted bytes count alike.
*/
#ifndef UX_LEDGER_H
#define UX_LEDGER_H

#include <stddef.h>

#include "server/store/store.h"

typedef enum {
  UX_LEDGER_VOLUME, UX_LEDGER_SNAPSHOT, UX_LEDGER_IMAGE, UX_LEDGER_JOB, UX_LEDGER_LOG,
  UX_LEDGER_CHECKPOINT, UX_LEDGER_OBJECT, UX_LEDGER_KINDS
} ux_ledger_kind;

/* Results of a reservation. */
enum {
  UX_LEDGER_ERROR = -1,     /* the store failed (logged) */
  UX_LEDGER_OK = 0,
  UX_LEDGER_QUOTA = 1,      /* the party's quota has no room for it */
  UX_LEDGER_BUDGET = 2,     /* the server's budget has no room for it */
  UX_LEDGER_EXISTS = 3      /* the item is counted or reserved already (nothing changed) */
};

typedef struct ux_ledger_limits {
  unsigned long long budget;        /* everything together; 0 = the default */
  unsigned long long key_quota;     /* one execution API key; 0 = a quarter of the
                                       budget, at least a volume and a sixteenth */
  unsigned long long tenant_quota;  /* one Control Plane tenant; 0 = the same */
  unsigned long long volume_bytes;  /* what a volume without an item is charged */
  unsigned long long log_bytes;     /* what a service's log is charged */
  const char *operator_party;       /* bounded by the budget only (the Control
                                       Plane's operator), or NULL */
} ux_ledger_limits;

/* Parties: "key/<public key>", "tenant/<id>". */
#define UX_LEDGER_PARTY_MAX 200
#define UX_LEDGER_ITEM_MAX 200
void ux_ledger_key(char *out, size_t len, const char *public_key);
void ux_ledger_tenant(char *out, size_t len, const char *tenant);
/* "<table>/<id>", or "" when it does not fit. */
void ux_ledger_item(char *out, size_t len, const char *table, const char *id);

/* Creates the triggers on the tables the ledger follows (every one must
** exist by then), settles the counted items with the rows, and the
** limits: a budget of 0 becomes what is counted plus half the free space
** of data_dir's file system, a quota of 0 a quarter of the budget (at
** least a volume and a sixteenth more, at most the budget). Its
** tables exist from ux_store_open on, so reservations work before (with
** no limit). 0, or -1 with err. */
int ux_ledger_open(ux_store *st, const char *data_dir, const ux_ledger_limits *lim,
                   char *err, size_t errlen);
void ux_ledger_limits_of(ux_store *st, ux_ledger_limits *out);

/* Reserves bytes for a new item of party. One of the results above. */
int ux_ledger_reserve(ux_store *st, const char *party, ux_ledger_kind kind,
                      const char *item, unsigned long long bytes);
/* Adds bytes to an item that is still only reserved: OK, QUOTA, BUDGET,
** ERROR (also for an item that is not reserved). */
int ux_ledger_grow(ux_store *st, const char *item, unsigned long long more);
/* Counts a reserved item as stored, with the bytes reserved (an item
** whose row was stored before its bytes were written: a workspace's
** volume). 1, 0 (no reservation of that item), -1. */
int ux_ledger_commit(ux_store *st, const char *item);
/* Drops the reservation of item (a write that failed; after its row took
** it over there is none, and nothing changes). */
void ux_ledger_cancel(ux_store *st, const char *item);
/* 1 when what party holds is within its quota, else 0: for a change
** that moves bytes to a party (an image transferred: the store's trigger
** moves its item with its owner), checked in the change's transaction. */
int ux_ledger_within(ux_store *st, const char *party);

typedef struct ux_ledger_usage {
  unsigned long long used;          /* bytes, reserved ones included */
  unsigned long long limit;         /* the party's quota; the budget for all */
  /* bytes (reserved ones included) and stored items, by kind */
  struct { unsigned long long bytes; long long items; } kind[UX_LEDGER_KINDS];
} ux_ledger_usage;

/* What party (NULL: everyone) holds now. 0 or -1. */
int ux_ledger_usage_of(ux_store *st, const char *party, ux_ledger_usage *u);
const char *ux_ledger_kind_name(ux_ledger_kind k);

/* The execution API's 507 text for a refused reservation of bytes. */
void ux_ledger_explain(ux_store *st, const char *party, int result, unsigned long long bytes,
                       char *out, size_t len);

#endif
