/*
** A finished job's document: the exact bytes of every answer about it,
** written once, when the job ends, and then only read. A document of at
** most UX_JOBDOC_INLINE_MAX bytes is the row's `doc`, as every other
** document; a larger one (megabytes of output, artifacts) is the file
** DATA/jobs/<id>.json, root's and 0600, next to a small row whose `doc`
** is the job's head (its status and times: what retention and recovery
** read) and whose `file_bytes` is the file's length, which the ledger
** counts. Output is escaped into the text as the runner handed it over,
** through one buffer of UX_JOBDOC_INLINE_MAX bytes that spills to the file
** once it is full: no document tree, no second encoding, no copy in the
** database's pages and its log, and a reader's reply is pulled from the
** file (store.h, ux_store_spool).
**
** The file is made before its row and removed after it: a crash in
** between leaves a file without a row, which the next start removes
** (exec/leftovers.c); never a row without its file.
*/
#ifndef UX_JOBDOCS_H
#define UX_JOBDOCS_H

#include "server/jsonw.h"
#include "server/store/store.h"

#define UX_JOBDOC_INLINE_MAX (64u * 1024u)

typedef struct ux_jobdoc ux_jobdoc;

/* A document of job id to be written (ids are the server's own: letters,
** digits and '_'); NULL for an id of another shape. */
ux_jobdoc *ux_jobdoc_begin(ux_store *st, const char *id);
/* Its writer: the document is one JSON object written into it. */
ux_jw *ux_jobdoc_writer(ux_jobdoc *d);
/* Forgets what was written, to write it again (smaller). */
void ux_jobdoc_restart(ux_jobdoc *d);
/* Ends the writing: the document's length, or -1 when its file could not
** be written (the disk is full: the caller writes a smaller one). */
long long ux_jobdoc_end(ux_jobdoc *d);

/* Stores it as job id's final row, with status and created_at; head is
** the row's `doc` when the text is in a file (the job's head, which has
** its completed_at). insert: there is no row yet; else the row is
** replaced only while pending or running. 1 stored, 0 not (no such
** unfinished row), -1 error. */
int ux_jobdoc_store(ux_jobdoc *d, const char *owner, const char *status, long created_at,
                    const char *head, int insert);

/* A spool of the document as written, stored or not (store.h): for the
** answer of the request that waited for the job. 0, or -1. */
int ux_jobdoc_spool(ux_jobdoc *d, ux_spool **out, unsigned long long *len);

/* Frees it; a file no row names is removed. */
void ux_jobdoc_free(ux_jobdoc *d);

/* The file of stored job id, opened for reading and checked to be the
** regular file of `bytes` bytes its row says: an fd, or -1 (errno ENOENT
** when it is gone: the job expired meanwhile). */
int ux_jobdoc_open(ux_store *st, const char *id, unsigned long long bytes);

/* Removes the files of DATA/jobs/ that no row names (a crash's): how many. */
int ux_jobdoc_sweep(ux_store *st);

#endif
