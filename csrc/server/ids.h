/*
** Identifiers: random ids for jobs and resources, request ids, and the
** path-id check (the same rule as the client's core.valid_id). Relative
** file names and environment names are core/validate.h's.
*/
#ifndef UX_IDS_H
#define UX_IDS_H

#include <stddef.h>

/* Writes prefix + 2*nbytes lowercase hex chars; returns 0 or -1. */
int ux_random_id(char *out, size_t outlen, const char *prefix, size_t nbytes);

/* 1 if s matches ^[A-Za-z0-9._-]+$, at most 128 bytes, and is not "." or "..". */
int ux_valid_id(const char *s);

#endif
