/*
** Strict UTF-8 decoding (RFC 3629: no overlong forms, no surrogates,
** nothing above U+10FFFF). The Control Plane's rules are stated on UTF-8
** text while Lua strings are bytes, so every rule that needs code points or
** must refuse what another SDK could never produce uses this one decoder.
*/
#ifndef UNSB_UTF8_H
#define UNSB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the sequence at s[0..len): returns its length (1-4) with *cp
** set, or 0 when the bytes there do not start a valid sequence (len == 0
** included). */
size_t unsb_utf8_next(const unsigned char *s, size_t len, uint32_t *cp);

/* 1 if all of s[0..len) is valid UTF-8. */
int unsb_utf8_valid(const char *s, size_t len);

#endif
