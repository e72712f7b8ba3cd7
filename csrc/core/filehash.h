/*
** The SHA-256 of a file while it is being written, computed on a thread
** of its own: a download to a file checks its bytes against the server's
** digest, and hashing them in line with the receive made the download
** take the sum of the two (SHA-256 runs at about the speed of loopback),
** where beside it the check is nearly free on a machine with a second
** core. The thread reads back what the writer reports written (pread, so
** the writer's offset is untouched); the bytes come from the page cache.
*/
#ifndef UNSB_FILEHASH_H
#define UNSB_FILEHASH_H

#include <stdint.h>

#include "core/digest.h"

typedef struct unsb_filehash unsb_filehash;

/* Starts hashing fd (open for reading; it must stay open until
** unsb_filehash_free). NULL if memory, OpenSSL or the thread's start
** fails. */
unsb_filehash *unsb_filehash_start(int fd);

/* The file's first `total` bytes are written: they may be hashed. */
void unsb_filehash_wrote(unsb_filehash *h, uint64_t total);

/* Waits until every byte reported written is hashed; the digest as 64
** lowercase hex characters and a NUL. 0, or -1 if OpenSSL or a read
** failed. */
int unsb_filehash_finish(unsb_filehash *h, char out[UNSB_SHA256_HEX_LEN + 1]);

/* Stops the thread (at its next piece) and frees; NULL is fine. */
void unsb_filehash_free(unsb_filehash *h);

#endif
