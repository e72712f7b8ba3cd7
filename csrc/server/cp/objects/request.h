/*
** What the object routes read from a request, apart from the HTTP frame:
** a locator from a JSON body or from query arguments (one parser for
** both, through a getter), and the owner the caller's identity allows
** (spec §5.1 "Owner", §5.3). Pure functions over plain inputs, so every
** rule has a C test; the handlers turn the outcome into replies.
*/
#ifndef UX_CP_OBJREQ_H
#define UX_CP_OBJREQ_H

#include <stddef.h>
#include <jansson.h>

#include "server/cp/objects/locator.h"

/* A field of the request: 1 with *s / *len (bytes, may hold NUL), 0 when
** absent, -1 when present but not a string (a JSON number, ...). */
typedef int (*ux_objreq_get)(void *ctx, const char *name, const char **s, size_t *len);

/* Getters: ctx is a json_t object, or a ux_req (query arguments). */
int ux_objreq_json_get(void *obj, const char *name, const char **s, size_t *len);
int ux_objreq_query_get(void *req, const char *name, const char **s, size_t *len);

/* scope, its ids and path into l (owner untouched); for_list: the path
** is optional (a prefix). 0, or -1 with the 400 text in err. version_id
** and fields of the other scope are ignored (spec §11). */
int ux_objreq_locator(ux_objreq_get get, void *ctx, int for_list, ux_objloc *l,
                      char *err, size_t errlen);

/* Who asks, as far as owners are concerned. */
typedef struct ux_objreq_who {
  int admin;              /* break-glass or an admin key */
  const char *tenant;     /* the tenant acted for; "" none */
  const char *subject;    /* X-Acting-Subject; "" none */
} ux_objreq_who;

/* The owner of a request that sent `sent` (NULL: no owner field; s may
** be any bytes): 0 with out filled; otherwise the HTTP status (400, 403)
** with the spec's text in err, and *audit set when the refusal is to be
** audited (object.owner: a tenant credential that sent an owner).
**   tenant credential: <tenant>/<subject>; an owner sent ⇒ 403; no subject ⇒ 400
**   admin: the owner sent (checked); none ⇒ <tenant>/<subject> when both
**          are known, else 400; acting for tenant t, the owner's tenant
**          must be t (403) */
int ux_objreq_owner(const ux_objreq_who *who, int sent_type, const char *sent, size_t sent_len,
                    char out[UX_OBJ_OWNER_MAX + 1], char *err, size_t errlen, int *audit);

#define UX_OBJREQ_OWNER_FORBIDDEN "this credential is bound to a tenant; owner is derived from the " \
  "credential and X-Acting-Subject and is not accepted in a request"
#define UX_OBJREQ_NO_SUBJECT "object storage requires X-Acting-Subject: tenant credentials store " \
  "objects under users/<tenant>/<subject>/"

#endif
