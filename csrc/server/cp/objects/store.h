/*
** The Control Plane's object store (spec §4.3, §5.3): versioned objects
** in buckets, content on disk under DATA/objects, metadata in the
** server's SQLite store. The local stand-in for the platform's MinIO.
**
** Content is written to a temporary file (DATA/objects/tmp, 0600, never
** inside anything a sandbox can reach), hashed on the way (sha256 and the
** MD5 ETag), then renamed to DATA/objects/blobs/<version_id>; the version
** exists only once the one INSERT that commits its metadata succeeded.
** So an upload cut off mid-body, over max_bytes or with a sha256 mismatch
** leaves no version, and files a crash left behind (temporaries, blobs
** without a row) are removed at the next open. A version's content never
** changes after commit; purging removes the rows first, then the files
** (a reader that already opened one keeps reading it).
**
** Writes and reads stream: begin / write chunks / commit or abort, and
** open-for-read returns an fd, so an object never sits in memory whole.
** Concurrent puts of one key each get their own version; ordinals are
** assigned by the committing statement (1, 2, ...), none is lost.
**
** Also here, because they guard the same transfers: the single-use
** ticket ledger (burn a jti once) and the transfer gate (a cap on
** concurrent content transfers, whose refusal is the spec's queue-full
** 503 with retry_after_seconds 2, and within it each tenant's share,
** share.h, whose refusal is a 429 for that tenant alone).
*/
#ifndef UX_CP_OBJSTORE_H
#define UX_CP_OBJSTORE_H

#include <stddef.h>

#include "server/cp/objects/locator.h"
#include "server/store/store.h"

#define UX_OBJ_MAX_BYTES (64ull << 20)      /* tickets, archives */
#define UX_OBJ_INLINE_MAX (4u << 20)        /* content_base64 routes */
#define UX_OBJ_LIST_MAX 10000               /* objects one list returns */
#define UX_OBJ_TRANSFERS 64                 /* default transfer cap */

typedef struct ux_objstore ux_objstore;
typedef struct ux_objput ux_objput;

typedef enum {
  UX_OBJ_OK = 0,
  UX_OBJ_ENOENT,      /* no such object, or its latest version is a delete marker */
  UX_OBJ_ETOOBIG,     /* more bytes than max_bytes */
  UX_OBJ_ESHA,        /* the content's sha256 is not the expected one */
  UX_OBJ_EBUSY,       /* the transfer gate is full */
  UX_OBJ_ESHARE,      /* the party holds its share of the gate already */
  UX_OBJ_ESTORE,      /* the metadata store failed (the spec's 503) */
  UX_OBJ_EIO,         /* the disk failed */
  UX_OBJ_EQUOTA,      /* the tenant's storage quota has no room (store/ledger.h) */
  UX_OBJ_EBUDGET      /* the server's storage budget has no room */
} ux_obj_rc;

/* One version. Times are unix seconds. */
typedef struct ux_obj_meta {
  char bucket[32];
  char key[UX_OBJ_KEY_MAX + 1];
  char version_id[33];                    /* 32 hex */
  long long ordinal;                      /* 1, 2, ... per key */
  unsigned long long bytes;
  char sha256[65];                        /* "" for a delete marker */
  char etag[33];                          /* MD5 hex; "" for a delete marker */
  char content_type[UX_OBJ_CTYPE_MAX + 1];
  long long last_modified;
  int delete_marker;
  int is_latest;
} ux_obj_meta;

/* Opens (creating) DATA/objects and the tables, and removes what a crash
** left behind. NULL with err. */
ux_objstore *ux_objstore_open(ux_store *st, const char *data_dir, char *err, size_t errlen);
void ux_objstore_close(ux_objstore *os);

/* The transfer gate: at most `max` content transfers at once (default
** UX_OBJ_TRANSFERS; at least 0, where every transfer is refused), of
** which one party (a tenant) holds at most per_party (0, or max or more:
** no share; the default is share.h's of UX_OBJ_TRANSFERS). Set before
** any transfer. */
void ux_objstore_set_max_transfers(ux_objstore *os, int max, int per_party);
/* For party (NULL: ""): UX_OBJ_OK (a slot is held until
** ux_objstore_transfer_end with the same party), UX_OBJ_ESHARE when the
** party holds its share, or UX_OBJ_EBUSY when the gate is full. */
int ux_objstore_transfer_begin(ux_objstore *os, const char *party);
void ux_objstore_transfer_end(ux_objstore *os, const char *party);
/* Transfers in progress now. */
int ux_objstore_transfers(ux_objstore *os);

/*
** Writing a version. begin: bucket and key are stored as given (callers
** pass keys built by cp/objects/locator.h); party is the ledger's party that stores
** it (ux_ledger_tenant: the owner's tenant, a checkpoint's workspace's);
** content_type NULL is application/octet-stream; sha256 NULL or "" checks
** nothing, otherwise 64 lower-case hex. expect: the bytes announced
** (Content-Length, an inline body), reserved in the ledger at once; 0
** for a stream of unknown length, whose reservation grows ahead of the
** bytes as they are written. begin and write return UX_OBJ_EQUOTA or
** UX_OBJ_EBUDGET when the ledger has no room for the bytes (nothing of
** them is written). write: UX_OBJ_OK, UX_OBJ_ETOOBIG once more than
** max_bytes arrived (nothing is written beyond), UX_OBJ_EIO. commit and
** abort free p; commit returns UX_OBJ_OK with *out filled (out may be
** NULL), or ETOOBIG, ESHA, EIO, ESTORE, EQUOTA, EBUDGET, and then nothing
** was stored and nothing stays counted.
*/
int ux_objput_begin(ux_objstore *os, const char *party, const char *bucket, const char *key,
                    const char *content_type, unsigned long long max_bytes,
                    unsigned long long expect, const char *sha256, ux_objput **out);
int ux_objput_write(ux_objput *p, const void *buf, size_t len);
/* Reads fd to its end into p (a pipe from a sandbox's agent): UX_OBJ_OK,
** ETOOBIG (fd is then left unread), EIO. */
int ux_objput_from_fd(ux_objput *p, int fd);
int ux_objput_commit(ux_objput *p, ux_obj_meta *out);
/* The first failure of p's writes (UX_OBJ_OK while there is none): what
** a transfer that stopped early ran into, to answer before the abort. */
int ux_objput_failure(const ux_objput *p);
void ux_objput_abort(ux_objput *p);

/* The latest version of a key, when it is not a delete marker: OK,
** ENOENT, ESTORE. */
int ux_objstore_stat(ux_objstore *os, const char *bucket, const char *key, ux_obj_meta *meta);

/* stat, plus an O_RDONLY fd of its content in *fd (the caller closes it).
** ENOENT also when the version was purged in between; EIO when the file
** is not what the metadata says. */
int ux_objstore_open_read(ux_objstore *os, const char *bucket, const char *key,
                          int *fd, ux_obj_meta *meta);

/* Every version of a key, newest first, delete markers included, in a
** malloc'd array (the caller frees it): OK, ENOENT (none), ESTORE. */
int ux_objstore_versions(ux_objstore *os, const char *bucket, const char *key,
                         ux_obj_meta **v, size_t *n);

/* The live objects (latest version not a delete marker) whose key is
** `base` or starts with `base` + "/", by key, at most max: OK or ESTORE. */
int ux_objstore_list(ux_objstore *os, const char *bucket, const char *base, size_t max,
                     ux_obj_meta **v, size_t *n);
/* The same objects handed to fn one at a time as the store reads them
** (the store's lock held: fn only copies), with nothing built in
** between: a list of thousands costs what its reply weighs. fn returns 0
** to go on. OK or ESTORE. */
typedef int (*ux_obj_visit)(void *ctx, const char *key, size_t key_len, unsigned long long bytes,
                            long long last_modified);
int ux_objstore_list_each(ux_objstore *os, const char *bucket, const char *base, size_t max,
                          ux_obj_visit fn, void *ctx);

/* Without purge: adds a delete marker, when the latest version is live
** (else ENOENT). With purge: removes every version and its content (ENOENT
** when there is none). OK, ENOENT, ESTORE. */
int ux_objstore_delete(ux_objstore *os, const char *bucket, const char *key, int purge);

/* Burns a ticket's jti (expiring at exp, unix seconds) in one statement:
** UX_OBJ_OK for the first burn, UX_OBJ_ENOENT for every later one (a
** replay), ESTORE. Burned jtis are forgotten an hour after their expiry
** (an expired ticket is refused before its jti is looked at). */
int ux_objstore_burn(ux_objstore *os, const char *jti, long long exp, long long now);

#endif
