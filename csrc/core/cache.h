/*
** Small cache files (the languages list, spec §5.5): freshness by file
** mtime, atomic replacement. A cache is an optimisation, so nothing here
** raises or aborts: a bad cache is "missing" and a failed write is a message.
*/
#ifndef UNSB_CACHE_H
#define UNSB_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define UNSB_CACHE_MAX (1024 * 1024)   /* larger files count as missing */

typedef enum { UNSB_CACHE_MISSING, UNSB_CACHE_FRESH, UNSB_CACHE_STALE } unsb_cache_state;

/* Reads path whole. FRESH when its mtime is less than ttl_s seconds ago
** (or in the future), STALE otherwise; MISSING when it cannot be read, is
** not a regular file or exceeds UNSB_CACHE_MAX. On FRESH/STALE *data is a
** malloc'd copy (NUL-terminated, *len bytes) the caller frees. */
unsb_cache_state unsb_cache_read(const char *path, int64_t ttl_s,
                                 char **data, size_t *len);

/* Writes path atomically: creates the parent directory 0700 if it is
** missing (one level only), then writes it with mode 0600 and an fsync
** through unsb_file_write (file.h: a fresh temporary renamed over path).
** Returns 0, or -1 with a message in msg (the temporary file is removed). */
int unsb_cache_write(const char *path, const char *data, size_t len,
                     char *msg, size_t msg_size);

#endif
