/*
** The SHA-256 of a file while it is being written, computed by a thread
** of its own that reads behind the writer (the bytes are still in the
** page cache): a download is hashed on another core as it arrives, not
** between its writes, so checking it costs no time on the wire.
*/
#ifndef UNSB_HASHFOLLOW_H
#define UNSB_HASHFOLLOW_H

#include <stddef.h>

#include "core/digest.h"

typedef struct unsb_hashfollow unsb_hashfollow;

/* Follows the file open as fd (readable, written from offset 0; fd stays
** the caller's and must stay open until _free). NULL if memory, OpenSSL
** or the thread cannot be had. */
unsb_hashfollow *unsb_hashfollow_new(int fd);

/* n more bytes are in the file (after a write that succeeded). */
void unsb_hashfollow_wrote(unsb_hashfollow *f, size_t n);

/* Waits until every byte written is hashed: the digest as 64 lowercase
** hex characters and a NUL. 0, or -1 (the file could not be read back,
** or OpenSSL failed); a second call gives the same. */
int unsb_hashfollow_final(unsb_hashfollow *f, char out[UNSB_SHA256_HEX_LEN + 1]);

/* Stops the thread (at once, when the digest was not asked for) and frees. */
void unsb_hashfollow_free(unsb_hashfollow *f);

#endif
