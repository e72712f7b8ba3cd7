/*
** The store's insides, shared by its files (store.c: the execution API's
** documents; db.c: the generic statement helpers the Control Plane's
** tables use). Nothing outside store/ includes this.
*/
#ifndef UX_STORE_INT_H
#define UX_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>

typedef struct ux_spool ux_spool;

/* A reservation of the ledger (ledger.h): bytes of a write in progress. */
typedef struct ux_ledger_hold {
  char item[200], party[200];
  int kind;
  unsigned long long bytes;
} ux_ledger_hold;

/* Prepared statements kept for reuse (db.c): preparing is most of a
** small statement's cost, and compiling the triggers a write fires is
** part of preparing it. */
#define UX_STORE_CACHE 64
typedef struct ux_stmt_cache {
  char *sql;
  sqlite3_stmt *stmt;
  unsigned long long used;
} ux_stmt_cache;

struct ux_store {
  sqlite3 *db;
  ux_stmt_cache cache[UX_STORE_CACHE];
  unsigned long long ticks;
  pthread_mutex_t mu;     /* recursive; one connection, one statement at a time;
                             also guards the ledger's reservations */
  /* the ledger's limits, settled once by ux_ledger_open, and its
  ** reservations: in memory, so a crash leaves none behind */
  unsigned long long budget, key_quota, tenant_quota;
  char operator_party[200];
  ux_ledger_hold *holds;
  size_t n_holds, cap_holds;
  char dir[4096];         /* the data directory (spools go to its tmp/) */
  /* store_spool.c: a second connection that only reads documents out to
  ** spool files, so a long copy never holds the writers' mutex, and the
  ** spools its readers share */
  sqlite3 *ro;
  pthread_mutex_t ro_mu;  /* the reading connection, and spool creation */
  pthread_mutex_t spool_mu;  /* the list of spools (never held while copying) */
  ux_spool *spools;
};

/* The ledger's own tables and SQL functions (ledger_open.c), made with
** the store's, so a reservation works from the start and every process
** that opens the store can run the triggers; ux_ledger_open adds the
** triggers on the tables it follows once they all exist. 0 or -1. */
int ux_ledger_schema(ux_store *st);

/* Finalizes the cached statements (before the connection closes). */
void ux_db_cache_clear(ux_store *st);

/* Drops the reservation of item, its bytes in *bytes (may be NULL): 1,
** or 0 when there was none (ledger.c; the triggers' SQL functions). */
int ux_ledger_release_hold(ux_store *st, const char *item, unsigned long long *bytes);

/* store_spool.c: spools of bytes already at hand (jobdocs.c): mem (taken,
** malloc'd) or fd (taken), len bytes. */
ux_spool *ux_spool_of_mem(ux_store *st, char *mem, unsigned long long len);
ux_spool *ux_spool_of_fd(ux_store *st, int fd, unsigned long long len);

/* store_spool.c: closes what the spools left open (at ux_store_close). */
void ux_store_spools_close(ux_store *st);

/* The tables whose names may be spliced into SQL (store_docs.c). */
int ux_store_known_table(const char *t);

#endif
