/*
** Base64 (RFC 4648, with padding) for input files and artifacts, on top of
** OpenSSL's EVP block coder so there is no hand-written codec to trust.
*/
#ifndef UNSB_BASE64_H
#define UNSB_BASE64_H

#include <stddef.h>

/* Returns a malloc'd NUL-terminated encoding and its length, or NULL. */
char *unsb_base64_encode(const unsigned char *in, size_t len, size_t *out_len);

/* Encodes len bytes into out, which holds UNSB_BASE64_LEN(len) + 1 bytes
** (NUL-terminated): for encoding a stream piece by piece, each piece but
** the last a multiple of 3 bytes. Returns the length written. */
#define UNSB_BASE64_LEN(n) (4 * (((n) + 2) / 3))
size_t unsb_base64_encode_into(const unsigned char *in, size_t len, char *out);

/* Returns malloc'd bytes, or NULL for invalid input (a character outside
** the alphabet, whitespace, '=' anywhere but the last two places, an
** impossible length). Padding is optional. */
unsigned char *unsb_base64_decode(const char *in, size_t len, size_t *out_len);

/* The URL-safe alphabet ('-' and '_' for '+' and '/') without padding, as
** tokens use it (RFC 4648 section 5). Decoding refuses '+', '/', '=' and
** any other character outside that alphabet. */
char *unsb_base64url_encode(const unsigned char *in, size_t len, size_t *out_len);
unsigned char *unsb_base64url_decode(const char *in, size_t len, size_t *out_len);

#endif
