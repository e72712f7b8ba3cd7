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

/* n bytes from OpenSSL's CSPRNG. 0, or -1 if it is not seeded. */
int unsb_random_bytes(unsigned char *out, size_t n);

#endif
