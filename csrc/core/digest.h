/*
** SHA-256, lowercase hex and random bytes: the three primitives the
** Control Plane identifiers are made of (session ids, object id fallbacks,
** trace ids, MCP request ids). OpenSSL does the work, so nothing here is a
** hand-written hash or generator.
*/
#ifndef UNSB_DIGEST_H
#define UNSB_DIGEST_H

#include <stddef.h>

#define UNSB_SHA256_HEX_LEN 64

/* Lowercase hex of n bytes into out (2n characters and a NUL). */
void unsb_hex(const unsigned char *in, size_t n, char *out);

/* 64 lowercase hex characters and a NUL. 0, or -1 if OpenSSL fails. */
int unsb_sha256_hex(const void *data, size_t len, char out[UNSB_SHA256_HEX_LEN + 1]);

/* An incremental SHA-256, for bytes that come in pieces (a transfer's
** checksum, computed while it streams, so no whole file is ever held). */
typedef struct unsb_sha256 unsb_sha256;

/* A fresh hash; NULL if memory or OpenSSL fails. */
unsb_sha256 *unsb_sha256_new(void);
/* Adds len bytes. 0, or -1 if OpenSSL fails or the hash was finished. */
int unsb_sha256_update(unsb_sha256 *h, const void *data, size_t len);
/* The digest as 64 lowercase hex characters and a NUL; the hash is then
** finished (a second call gives the same digest). 0, or -1. */
int unsb_sha256_final(unsb_sha256 *h, char out[UNSB_SHA256_HEX_LEN + 1]);
void unsb_sha256_free(unsb_sha256 *h);

/* The SHA-256 and size of the regular file at path, read in 1 MiB pieces
** (a FIFO or device is refused, never waited on: EINVAL). 0, or -1 with
** errno set (EIO when OpenSSL fails). */
int unsb_sha256_file(const char *path, char out[UNSB_SHA256_HEX_LEN + 1], long long *size);

/* n bytes from OpenSSL's CSPRNG. 0, or -1 if it is not seeded. */
int unsb_random_bytes(unsigned char *out, size_t n);

/* n (at most 64) bytes for identifiers that are sent in the clear and
** made for every request (trace and span ids): the same CSPRNG, drawn
** 1 KiB at a time into a per-thread pool, since one RAND_bytes call costs
** as much as the rest of a request's signing. Bytes are handed out once
** and wiped from the pool; a forked child refills before it draws, so it
** never repeats its parent's ids. Secrets, keys and masks use
** unsb_random_bytes. 0, or -1 if the CSPRNG fails. */
int unsb_random_id_bytes(unsigned char *out, size_t n);

#endif
