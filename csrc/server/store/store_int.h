/*
** The store's insides, shared by its files (store.c: the execution API's
** documents; db.c: the generic statement helpers the Control Plane's
** tables use). Nothing outside store/ includes this.
*/
#ifndef UX_STORE_INT_H
#define UX_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>

struct ux_store {
  sqlite3 *db;
  pthread_mutex_t mu;     /* recursive; one connection, one statement at a time */
};

/* The tables whose names may be spliced into SQL (store_docs.c). */
int ux_store_known_table(const char *t);

#endif
