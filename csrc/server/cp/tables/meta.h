/*
** cp_meta: the Control Plane's lasting secrets, made once per data
** directory (the key that signs tokens and tickets, the key of workspace
** ids), so tokens and workspace ids survive a restart.
*/
#ifndef UX_CP_TABLES_META_H
#define UX_CP_TABLES_META_H

#include <stddef.h>

#include "server/store/store.h"

int ux_meta_create(ux_store *st);

/* Loads secret name (len random bytes) into out, making it the first
** time. 0, or -1. */
int ux_meta_secret(ux_store *st, const char *name, unsigned char *out, size_t len);

#endif
