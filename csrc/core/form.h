/*
** Query strings of Control Plane calls (spec §7.1 "query form-encoded",
** §8 "locator as query, nil/"" dropped"): application/x-www-form-urlencoded
** as Python's urlencode writes it, so a locator reaches the server with the
** same bytes from every SDK. Unreserved bytes A-Z a-z 0-9 - . _ ~ stay,
** space becomes '+', every other byte (UTF-8 included) becomes %XX with
** upper-case hex. Pairs come out in the caller's order.
*/
#ifndef UNSB_FORM_H
#define UNSB_FORM_H

#include <stddef.h>

#include "core/error.h"

typedef struct {
  const char *key;   size_t key_len;
  const char *value; size_t value_len;    /* NULL or empty: the pair is dropped */
} unsb_form_pair;

/* "k=v&k2=v2" (without '?'), "" when every pair was dropped. Returns a
** malloc'd string with *out_len, or NULL with err: validation (err->arg 1:
** an empty key; 2: a result over max_len bytes, 0 = no limit) or memory. */
char *unsb_form_encode(const unsb_form_pair *pairs, size_t n, size_t max_len, size_t *out_len,
                       unsb_error *err);

#endif
