/* Base64 (RFC 4648, standard alphabet) for input files and artifacts. */
#ifndef UX_B64_H
#define UX_B64_H

#include <stddef.h>

/* Returns a malloc'd NUL-terminated encoding, or NULL on allocation failure. */
char *ux_b64_encode(const unsigned char *data, size_t len);

/* Strict decode: padding optional, no whitespace, no stray characters.
** Returns a malloc'd buffer (length in *outlen) or NULL when invalid. */
unsigned char *ux_b64_decode(const char *s, size_t len, size_t *outlen);

#endif
