/* API key pairs: unsb-pk-xxxx-xxxx-xxxx-xxxx / unsb-sk-xxxxx-xxxxx-xxxxx-xxxxx. */
#ifndef UX_KEYS_H
#define UX_KEYS_H

#include "server/store/store.h"

#define UX_PK_LEN 27   /* "unsb-pk-" + 4 groups of 4 + 3 dashes */
#define UX_SK_LEN 31   /* "unsb-sk-" + 4 groups of 5 + 3 dashes */

/* Generates a pair and stores it (dev: see ux_store_key_add): 0, or -1
** when randomness or the store failed. */
int ux_keys_add(ux_store *st, char pk[UX_PK_LEN + 1], char sk[UX_SK_LEN + 1], int dev);

#endif
