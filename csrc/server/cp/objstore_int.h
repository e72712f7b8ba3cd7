/*
** What objstore.c (metadata, reads, the ledger, the gate) and objput.c
** (writing versions) share. Nothing outside cp/objstore*.c and
** cp/objput.c includes this.
*/
#ifndef UX_CP_OBJSTORE_INT_H
#define UX_CP_OBJSTORE_INT_H

#include <pthread.h>
#include <jansson.h>

#include "server/cp/objstore.h"

struct ux_objstore {
  ux_store *st;
  int tmpfd;              /* DATA/objects/tmp: uploads in progress */
  int blobfd;             /* DATA/objects/blobs: one file per version */
  pthread_mutex_t mu;     /* the gate's counter */
  int transfers, max_transfers;
};

/* Fills m from a row of cp_object_versions (SELECT *). */
void ux_objstore_row_meta(const json_t *row, ux_obj_meta *m);

#endif
