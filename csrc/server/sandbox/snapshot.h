/*
** Snapshot archives (libarchive): a tar.gz of a work directory, and a
** restore that either replaces the directory whole or leaves it untouched.
*/
#ifndef UX_SNAPSHOT_H
#define UX_SNAPSHOT_H

#include <stddef.h>

/* Archives srcdir's content into archive (written to a temporary name
** then renamed). *size gets the archive's size. 0 or -1 with err set. */
int ux_snapshot_create(const char *srcdir, const char *archive, long *size,
                       char *err, size_t errlen);

/* Extracts archive into a new directory next to target, then swaps the
** two with one rename, so target never holds a half-restored tree.
** target must be an absolute path and the process's cwd "/" (see .c).
** 0 or -1 with err set; on failure target is unchanged. */
int ux_snapshot_restore(const char *archive, const char *target, char *err, size_t errlen);

#endif
