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

struct ux_store {
  sqlite3 *db;
  pthread_mutex_t mu;     /* recursive; one connection, one statement at a time */
  char dir[4096];         /* the data directory (spools go to its tmp/) */
  /* store_spool.c: a second connection that only reads documents out to
  ** spool files, so a long copy never holds the writers' mutex, and the
  ** spools its readers share */
  sqlite3 *ro;
  pthread_mutex_t ro_mu;  /* the reading connection, and spool creation */
  pthread_mutex_t spool_mu;  /* the list of spools (never held while copying) */
  ux_spool *spools;
};

/* store_spool.c: closes what the spools left open (at ux_store_close). */
void ux_store_spools_close(ux_store *st);

/* The tables whose names may be spliced into SQL (store_docs.c). */
int ux_store_known_table(const char *t);

#endif
