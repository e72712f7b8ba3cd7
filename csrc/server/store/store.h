/*
** Persistent state in DATA/unsandboxd.db (SQLite, WAL): API keys, and
** one JSON document per job, session, service and snapshot. Documents
** keep the code small: a resource is created and read whole, fields are
** changed in place by SQL, and the few columns beside the document exist
** only to filter (owner, status).
** All functions are thread-safe (one connection behind a mutex).
*/
#ifndef UX_STORE_H
#define UX_STORE_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

typedef struct ux_store ux_store;

/* Creates the data directory (0700) and the database (0600) as needed. */
ux_store *ux_store_open(const char *data_dir, char *err, size_t errlen);
void ux_store_close(ux_store *st);

/* dev: the key --dev-keys made, reused when the server restarts on the
** same data directory so earlier jobs stay visible. */
int ux_store_key_add(ux_store *st, const char *public_key, const char *secret_key, int dev);
/* The first dev key, if any: 0, else -1. */
int ux_store_dev_key(ux_store *st, char *pk, size_t pklen, char *sk, size_t sklen);
/* Copies the secret of a known key into out: 0, or -1 when unknown. */
int ux_store_key_secret(ux_store *st, const char *public_key, char *out, size_t outlen);

/* Documents: table is one of "jobs", "sessions", "services", "snapshots",
** "images";
** owner NULL means any owner. Nothing here reads a row to write it back
** (store_docs.c): a creation is an INSERT, every change one conditional
** statement or one transaction, so a change racing a DELETE never brings
** the row back. */

/* Creates a row: 0, or -1 (also when the id exists already). */
int ux_store_insert(ux_store *st, const char *table, const char *id,
                    const char *owner, const char *status, const json_t *doc);
/* Creates a row that belongs to parent_id of parent_table (same owner),
** in one statement that finds the parent: 1, 0 when the parent is gone,
** -1 on error. */
int ux_store_insert_child(ux_store *st, const char *table, const char *id, const char *owner,
                          const char *status, const json_t *doc,
                          const char *parent_table, const char *parent_id);
/* Replaces status and document of id while its status is one of from (a
** NULL-terminated list; NULL = any): 1, 0 (no such row, or a status not
** in from), -1. */
int ux_store_update(ux_store *st, const char *table, const char *id, const char *owner,
                    const char *status, const json_t *doc, const char *const *from);
/* Sets the top-level field of id's document to value (SQLite's json_set,
** the rest of the document untouched) and returns the new document in
** *out, in one transaction: 1, 0 when there is no such row, -1. */
int ux_store_set_field(ux_store *st, const char *table, const char *id, const char *owner,
                       const char *field, const json_t *value, json_t **out);

enum { UX_STORE_ABSENT = 0, UX_STORE_DELETED = 1, UX_STORE_REFUSED = 2 };
/* Deletes id unless its document's boolean field is true ("locked"), in
** one transaction: UX_STORE_DELETED, UX_STORE_REFUSED (the field is
** true), UX_STORE_ABSENT, or -1. */
int ux_store_delete_unless(ux_store *st, const char *table, const char *id,
                           const char *owner, const char *field);

/* The document of id when it belongs to owner. */
json_t *ux_store_get(ux_store *st, const char *table, const char *id, const char *owner);
/* Documents of owner in creation order, as a JSON array. */
json_t *ux_store_list(ux_store *st, const char *table, const char *owner);
/* The same handed to fn one at a time as the store reads them, as their
** stored text (fn copies or parses it; the store's lock is held): a list
** answer then holds one document at a time besides its own text. fn
** returns 0 to go on. How many rows were read, or -1. */
int ux_store_each(ux_store *st, const char *table, const char *owner,
                  int (*fn)(void *ctx, const char *doc, size_t len), void *ctx);
/* 1 when deleted, 0 when there was no such row, -1. */
int ux_store_delete(ux_store *st, const char *table, const char *id, const char *owner);

/* store_edit.c. Edits id's document with fn inside one transaction:
** fn changes doc in place and returns 0 to write it back, or non-zero to
** leave the row as it was (a refusal its ctx describes). Returns 1
** written (*out: the new document, when out is not NULL), 0 no such row,
** 2 refused by fn, -1 error. The table "images" is allowed here too. */
int ux_store_modify(ux_store *st, const char *table, const char *id, const char *owner,
                    int (*fn)(json_t *doc, void *ctx), void *ctx, json_t **out);
/* Gives id of owner to new_owner (and sets the document's owner_api_key),
** in one statement: 1, 0 (no such row of owner), -1. */
int ux_store_set_owner(ux_store *st, const char *table, const char *id, const char *owner,
                       const char *new_owner);

/* store_spool.c. A document that never changes once written (a finished
** job's), for sending in pieces without holding it whole: 1 with *out and
** *len (its exact stored bytes), 0 when id has no row of owner, -1 on
** error. A document over UX_SPOOL_MEM_MAX is copied once, by a read
** transaction of its own connection, into an unlinked file of DATA/tmp
** that every reader of it shares until the last is done, so n readers
** of it cost one file, not n copies; a smaller one is read into memory
** for this reader alone. Read with ux_spool_read (pread: never blocks on
** the store), give back with ux_spool_put. */
#define UX_SPOOL_MEM_MAX (64u * 1024u)
typedef struct ux_spool ux_spool;
int ux_store_spool(ux_store *st, const char *table, const char *id, const char *owner,
                   ux_spool **out, unsigned long long *len);
/* Up to max bytes at pos: how many (> 0), or -1 (past the end, a failed
** read). */
ssize_t ux_spool_read(ux_spool *sp, unsigned long long pos, char *buf, size_t max);
/* This reader is done with sp (the last one closes its file). */
void ux_spool_put(ux_spool *sp);

/* Jobs left pending/running by a server that died become failed with
** error "server restarted", in one statement. Returns how many, or -1. */
int ux_store_recover_jobs(ux_store *st, long now);

/* Removes the jobs that finished at or before `before` (unix seconds),
** in one statement, and gives their pages back: how many, or -1. Their
** ledger items go with the rows (ledger.h), their document files after
** them (jobdocs.c). */
int ux_store_expire_jobs(ux_store *st, long before);
/* The same for the one job id: 1 removed, 0 not (yet) expired, -1. */
int ux_store_expire_job(ux_store *st, const char *id, long before);

#endif
