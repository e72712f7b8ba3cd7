/*
** What cp/objects/store.c (metadata, reads, the ledger, the gate) and cp/objects/put.c
** (writing versions) share. Nothing outside cp/objstore*.c and
** cp/objects/put.c includes this.
*/
#ifndef UX_CP_OBJSTORE_INT_H
#define UX_CP_OBJSTORE_INT_H

#include <pthread.h>
#include <jansson.h>

#include "server/cp/objects/store.h"
#include "server/share.h"

struct ux_objstore {
  ux_store *st;
  int tmpfd;              /* DATA/objects/tmp: uploads in progress */
  int blobfd;             /* DATA/objects/blobs: one file per version */
  pthread_mutex_t mu;     /* the gate's counters */
  int transfers, max_transfers;
  int per_party;          /* a party's share of max_transfers, 0 = none */
  ux_shares *parties;     /* the slots each party holds */
};

/* Records the version m describes as its key's latest, setting
** m->ordinal: 0, or -1 (nothing recorded). */
int ux_objstore_add_version(ux_objstore *os, ux_obj_meta *m);

/* Fills m from a row of cp_object_versions (SELECT *). */
void ux_objstore_row_meta(const json_t *row, ux_obj_meta *m);

#endif
