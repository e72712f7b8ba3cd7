/*
** The Control Plane's acting subject (spec §3, vectors acting-subject.json):
** X-Acting-Subject = hex(HMAC-SHA256(salt, tenant ‖ U+0000 ‖ subject)[0:16]).
** The application holds the salt; the platform and the client never
** re-hash a value, they only check its shape before sending it.
**
** Beyond the spec's rule, derivation refuses what would make two different
** (tenant, subject) pairs meet or what no other SDK could reproduce: a NUL
** in either half (it is the separator), invalid UTF-8 (the rule is stated
** on text), and an empty half (an empty subject would pool every caller
** without an id into one partition).
*/
#ifndef UNSB_PSEUDONYM_H
#define UNSB_PSEUDONYM_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_SUBJECT_LEN 32
#define UNSB_SALT_MIN 32

/* 0 with out = 32 lowercase hex, or -1 with a validation err (short salt,
** empty, NUL or invalid UTF-8 in tenant or subject; err->arg: 1 salt, 2
** tenant, 3 subject) that never quotes the salt. */
int unsb_acting_subject(const char *salt, size_t salt_len, const char *tenant, size_t tenant_len,
                        const char *subject, size_t subject_len,
                        char out[UNSB_SUBJECT_LEN + 1], unsb_error *err);

/* 1 if s[0..len) is exactly 32 lowercase hex digits (^[0-9a-f]{32}$ with
** no trailing newline, no padding). */
int unsb_valid_subject(const char *s, size_t len);

#endif
