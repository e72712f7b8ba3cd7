/*
** Persistent state in DATA/unsandboxd.db (SQLite, WAL): API keys, and
** one JSON document per job, session, service and snapshot. Documents
** keep the code small: every resource is read and written whole, and the
** few columns beside the document exist only to filter (owner, status).
** All functions are thread-safe (one connection behind a mutex).
*/
#ifndef UX_STORE_H
#define UX_STORE_H

#include <stddef.h>
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

/* table is one of "jobs", "sessions", "services", "snapshots". */
int ux_store_put(ux_store *st, const char *table, const char *id,
                 const char *owner, const char *status, const json_t *doc);
/* The document of id when it belongs to owner (owner NULL = anyone). */
json_t *ux_store_get(ux_store *st, const char *table, const char *id, const char *owner);
/* Documents of owner (NULL = all) in creation order, as a JSON array. */
json_t *ux_store_list(ux_store *st, const char *table, const char *owner);
/* 1 when deleted, 0 when there was no such row. */
int ux_store_delete(ux_store *st, const char *table, const char *id, const char *owner);

/* Jobs left pending/running by a server that died become failed with
** error "server restarted". Returns how many. */
int ux_store_recover_jobs(ux_store *st, long now);

#endif
