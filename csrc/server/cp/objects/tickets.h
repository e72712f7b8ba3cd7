/*
** Object tickets (spec §3, §4.3): the bearer credential of one content
** transfer, minted by POST /v1/storage/tickets and spent by GET or PUT
** /v1/storage/content. A ticket is a token of tokens.h with kind
** `object-ticket` whose claims bind the operation, the object (bucket,
** key), the owner, max_bytes, the content type, the optional sha256 and a
** random jti; single use is the object store's jti ledger
** (ux_objstore_burn), not this file.
*/
#ifndef UX_CP_OBJTICKET_H
#define UX_CP_OBJTICKET_H

#include <stddef.h>

#include "server/cp/objects/locator.h"

#define UX_OBJTICKET_KIND "object-ticket"
#define UX_OBJTICKET_TTL_MAX 900

typedef struct ux_objticket {
  char op[16];                          /* "upload" or "download" */
  char bucket[32];
  char key[UX_OBJ_KEY_MAX + 1];
  char owner[UX_OBJ_OWNER_MAX + 1];     /* the `own` claim; "" none */
  unsigned long long max_bytes;
  char content_type[UX_OBJ_CTYPE_MAX + 1];
  char sha256[65];                      /* "" = not checked */
  char jti[33];                         /* 32 hex */
  long long exp;                        /* unix seconds */
} ux_objticket;

/* Sets t->jti (fresh random) and t->exp (now + expires_in) and returns the
** token (malloc'd), or NULL (out of memory, no randomness). */
char *ux_objticket_mint(const unsigned char *key, size_t keylen, ux_objticket *t,
                        long now, long expires_in);

/* 0 with *t filled when token is a genuine, unexpired object ticket for
** operation want_op whose claims all have their types and sizes; else -1
** (the caller answers 401 without saying which check failed). */
int ux_objticket_verify(const unsigned char *key, size_t keylen, const char *token,
                        long now, const char *want_op, ux_objticket *t);

#endif
