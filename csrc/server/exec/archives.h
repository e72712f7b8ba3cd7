/*
** The archives unsandboxd keeps in its data directory (snapshots and
** images, DATA/<kind>s/<id>.tar.gz) and the restores that unpack them,
** each written within a reservation of the ledger (store/ledger.h): a
** key over its quota, or a server over its budget, is refused (507)
** before a byte is written, and a refused or failed archive leaves no
** file and no reservation. The archive's item is committed by the row
** that records it (its size_bytes); a caller whose row cannot be stored
** cancels it (ux_ledger_cancel on hold.item).
*/
#ifndef UX_ARCHIVES_H
#define UX_ARCHIVES_H

#include "server/http/reply.h"
#include "server/store/ledger.h"

typedef struct ux_hold {
  ux_store *st;
  char party[UX_LEDGER_PARTY_MAX];
  char item[UX_LEDGER_ITEM_MAX];
  ux_ledger_kind kind;
  int refusal;                    /* UX_LEDGER_QUOTA or _BUDGET once refused */
  unsigned long long wanted;      /* the bytes that were asked for */
} ux_hold;

/* A hold for r's key on item <table>/<id>. */
void ux_hold_init(ux_hold *h, ux_req *r, ux_ledger_kind kind, const char *table, const char *id);
/* Answers the 507 of a refused hold. */
int ux_reply_hold(ux_req *r, const ux_hold *h);

/* Archives the volume dir into the file arch (its runs frozen meanwhile,
** and thawed afterwards unless stay_frozen: the resource was frozen by
** its owner; the archive made by the agent). The reservation is what the
** frozen volume holds (its used blocks and inodes, compressed archives
** being no larger) and, for an archive that outgrows it, once more what
** the volume can hold at most. 0; -1 with err; -2 the volume is gone;
** -3 refused (h->refusal). */
int ux_archive_volume(const char *dir, const char *arch, long *size, int stay_frozen,
                      ux_hold *h, char *err, size_t errlen);

/* Copies the root-owned archive from (a file of the data directory) to a
** new file to, via a temporary name, its size reserved first: 0; -1 with
** err; -3 refused (h->refusal). */
int ux_copy_archive(const char *from, const char *to, long *size, ux_hold *h,
                    char *err, size_t errlen);

/* Replaces the tree of volume dir with the archive's (unpacked by the
** agent into a fresh volume beside the old one, which takes a second
** volume's size while it lasts: reserved for h's party, item
** restores/<random>, and given back at the end): 0; -1 with err; -3
** refused (h->refusal). */
int ux_restore_volume(const char *arch, const char *dir, ux_hold *h, char *err, size_t errlen);

#endif
