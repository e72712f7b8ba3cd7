/*
** Response header values the clients keep: a header line's value by name,
** and Retry-After as seconds. Pure functions of their input (the time is a
** parameter), so a hostile server's bytes can be tested and fuzzed here
** without a transfer. http.c calls them from libcurl's header callback.
*/
#ifndef UNSB_HEADERS_H
#define UNSB_HEADERS_H

#include <stddef.h>
#include <stdint.h>

/* The longest wait a server can ask for: a larger delay, or a date further
** ahead, is cut to this (a day), so no reply makes a caller sleep for
** years. The facade clamps a body's retry_after to the same. */
#define UNSB_RETRY_AFTER_MAX 86400

/* The value of `line[0..len)` if it is "Name: value" for `name` (ASCII
** case-insensitive), blanks and the line end trimmed; else NULL. */
const char *unsb_header_value(const char *line, size_t len, const char *name, size_t *vlen);

/* Retry-After (RFC 9110 §10.2.3): delta-seconds (digits only) or an
** HTTP-date, as seconds from now, in 0..UNSB_RETRY_AFTER_MAX; a date in
** the past is 0. -1 for anything else (empty, signs, blanks inside,
** fractions, an unparsable date), which callers ignore. */
long long unsb_retry_after(const char *value, size_t len, int64_t now);

#endif
