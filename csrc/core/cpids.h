/*
** Identifiers the Control Plane client derives itself (spec §5.1, vectors
** ids.json): the session id sent for a session key, and the normaliser of
** agent_id/run_id for object locators.
**
** object_id: Unicode lower-casing, then every character that is not ASCII
** [a-z0-9] becomes '-', runs of '-' collapse, '-' is stripped at both ends;
** an empty or longer-than-63 result becomes "id-" + 32 hex of SHA-256 of
** the original bytes. Which code points matter follows from the rule: the
** only non-ASCII characters whose lower case contains ASCII letters or
** digits are U+0130 (-> "i" U+0307, so "i-") and U+212A KELVIN SIGN (-> "k");
** every other non-ASCII character ends up as '-', whatever its lower case.
** Invalid UTF-8 is handled deterministically the same way: each byte that
** does not start a valid sequence is one non-ASCII character ('-'), and the
** hash fallback hashes the bytes as given. Because dashes collapse, how
** many dashes one character makes never changes the result.
*/
#ifndef UNSB_CPIDS_H
#define UNSB_CPIDS_H

#include <stddef.h>

#include "core/error.h"

#define UNSB_SESSION_ID_LEN 32
#define UNSB_OBJECT_ID_MAX 63
#define UNSB_SANDBOX_NAME_MAX 128

/* First 32 hex of SHA-256(key). The key must be non-empty valid UTF-8
** (validation error otherwise; the key itself is never quoted). */
int unsb_session_id(const char *key, size_t len, char out[UNSB_SESSION_ID_LEN + 1],
                    unsb_error *err);

/* The normalised id into out (at most 63 characters + NUL): 0, or -1 if
** OpenSSL fails. Any input is accepted. */
int unsb_object_id(const char *s, size_t len, char out[UNSB_OBJECT_ID_MAX + 1], unsb_error *err);

/* The name of a named sandbox (unsandbox.Sandbox: its session key): not
** blank, at most UNSB_SANDBOX_NAME_MAX bytes, no NUL, valid UTF-8. NULL or
** why not (a static reason that never quotes the name). */
const char *unsb_cp_sandbox_name_check(const char *name, size_t len);

#endif
