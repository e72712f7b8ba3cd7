/*
** The Control Plane's tables (in the server's SQLite database, names
** prefixed cp_), one module each: every SQL statement of a table is in its
** module, next to the table's schema, and the handlers of every concern
** (auth/, admin/, workspaces/, sandboxes/, ops/, ...) call these named
** functions instead of writing SQL. This folder includes the store and
** nothing of the Control Plane above it, so every concern may include it
** without a cycle between folders.
**
** A statement that reads a second table belongs to the table it writes or
** whose rows it returns (a workspace's insert checks its tenant's limit;
** a tenant's view counts its workspaces). A decision that reads and then
** writes is one conditional statement or one ux_db_tx transaction here.
**
** Reads return a JSON object (one row) or array (rows), NULL when there is
** none or the store failed: ux_db_unavailable (store/db.h) tells which.
** Writes return the rows changed, or -1 when the store failed (logged).
** Object storage keeps its own tables (cp/objects/store.c).
*/
#ifndef UX_CP_TABLES_H
#define UX_CP_TABLES_H

#include "server/store/store.h"

/* Creates every Control Plane table that does not exist yet. 0 or -1. */
int ux_cp_tables_create(ux_store *st);

#endif
