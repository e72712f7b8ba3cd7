/*
** The agent's archives: a gzip-compressed pax tar of a directory's
** contents, written and read strictly by file descriptor. Both directions
** are used by the command-line modes (archive / extract) and by the
** runtime's checkpoint / restore, so the rules live here once.
*/
#ifndef AG_TAR_H
#define AG_TAR_H

#include "agent/err.h"

#define AG_TAR_MAX_DEPTH 128          /* directory levels below DIR */
#define AG_TAR_NAME_MAX 4096          /* bytes of one member name */

typedef struct {
  unsigned long long max_bytes;       /* file bytes, all members together */
  unsigned long long max_entries;     /* members of any kind */
  unsigned long long max_file_bytes;  /* one member (extract only) */
  const char *const *exclude;         /* top-level names left out (archive) */
  size_t n_exclude;
  const char *const *only;            /* n_only > 0: the only top-level names
                                      ** archived (an export's `artifacts`) */
  size_t n_only;
} ag_tar_limits;

typedef struct {
  unsigned long long files, directories, symlinks, bytes;
  unsigned long long out_bytes;       /* compressed bytes written (archive) */
  char sha256[65];                    /* of the compressed stream (archive) */
} ag_tar_stats;

/* Fills the defaults: 4 GiB total, 1 000 000 entries, 1 GiB per file. */
void ag_tar_limits_default(ag_tar_limits *lim);

/* Writes the archive of the tree under dirfd to outfd. Skipped entries
** (FIFOs, sockets, devices, entries that changed type) get a warning line
** on stderr. Returns 0, or -1 with e set. */
int ag_tar_create(int dirfd, int outfd, const ag_tar_limits *lim,
                  ag_tar_stats *st, ag_err *e);

/* Extracts the archive read from infd into dirfd, refusing hostile
** members (see tar_in.c). Returns 0, or -1 with e naming the member. */
int ag_tar_extract(int infd, int dirfd, const ag_tar_limits *lim,
                   ag_tar_stats *st, ag_err *e);

#endif
