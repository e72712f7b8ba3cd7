/*
** Generic statements on the store's connection, so a module with tables
** of its own writes SQL and nothing else. Parameters are described by a
** type string, one letter each:
**   s  const char *      text (NULL binds SQL NULL)
**   i  long long         integer
**   b  const void *, size_t   blob
** Every change is one statement (conditional: UPDATE ... WHERE ..., with
** the row count telling whether it applied) or one ux_db_tx transaction:
** never read, decide, then write in separate steps.
*/
#ifndef UX_DB_H
#define UX_DB_H

#include <stddef.h>
#include <jansson.h>

#include "server/store/store.h"

/* Runs sql (one statement, or several without parameters when types is
** ""): the number of rows changed, or -1 (logged). */
int ux_db_exec(ux_store *st, const char *sql, const char *types, ...);

/* Runs a query: its rows as a JSON array of objects keyed by column name
** (integers, text, NULL; a blob becomes lowercase hex), or NULL on error
** (logged). */
json_t *ux_db_rows(ux_store *st, const char *sql, const char *types, ...);

/* Runs a query and hands each row to fn as it is stepped, with nothing
** built in between: how a list of thousands of rows goes straight into
** its reply (jsonw.h). fn reads the row's columns (0-based) with the
** accessors below and returns 0 to go on, non-zero to stop. The store's
** lock is held meanwhile, so fn only copies. The number of rows handed
** over, or -1 (logged). */
typedef struct ux_db_cursor ux_db_cursor;
int ux_db_each(ux_store *st, const char *sql, const char *types,
               int (*fn)(void *ctx, ux_db_cursor *row), void *ctx, ...);
long long ux_db_int(ux_db_cursor *row, int col);
/* Text of a column (its length in *len, may be NULL); NULL for SQL NULL. */
const char *ux_db_text(ux_db_cursor *row, int col, size_t *len);

/* The first row of a query (a JSON object), or NULL when there is none
** or on error. */
json_t *ux_db_row(ux_store *st, const char *sql, const char *types, ...);

/* Runs fn inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK when fn returns
** non-zero), holding the store's lock throughout: fn's statements (made
** with the functions above) see and change the database alone. Returns
** fn's value, or -1 when the transaction itself failed. */
int ux_db_tx(ux_store *st, int (*fn)(ux_store *st, void *ctx), void *ctx);

/* 0 when the database answers a query, -1 when it does not (health). */
int ux_db_ping(ux_store *st);

/* 1 when the last failure was a broken database (not a constraint): the
** Control Plane answers 503 "store unavailable" then. */
int ux_db_unavailable(ux_store *st);

#endif
