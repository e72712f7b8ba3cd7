/*
** Identifiers inserted into request paths (job, session, service, snapshot
** ids) are checked locally rather than percent-encoded (spec §7.10): how
** the service treats encoded paths is unknown, so anything odd is refused.
*/
#ifndef UNSB_IDS_H
#define UNSB_IDS_H

#include <stddef.h>

#define UNSB_ID_MAX 128

/* 1 if s[0..len) is 1..UNSB_ID_MAX characters of [A-Za-z0-9._-] and is
** neither "." nor ".." (they would be dot-segments of the URL path). */
int unsb_valid_id(const char *s, size_t len);

#endif
