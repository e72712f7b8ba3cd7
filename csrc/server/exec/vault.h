/*
** The env vault's pieces that need no request: the key file, sealing
** and opening (AES-256-GCM, a fresh random nonce per seal, the service
** id as associated data so a sealed vault copied to another service's
** row does not open), and the .env parser. Kept apart from the routes
** (envvault.c) so the C tests exercise them directly.
*/
#ifndef UX_VAULT_H
#define UX_VAULT_H

#include <stddef.h>
#include <jansson.h>

#define UX_VAULT_MAX (64 * 1024)        /* the .env text, as the service caps it */
#define UX_VAULT_KEY_LEN 32

/* DATA/vault.key: made once (0600, O_EXCL, random bytes), then read; a
** key file of the wrong size, not a regular file, or readable by others
** is refused rather than used. 0, or -1 with err. */
int ux_vault_key(const char *data_dir, unsigned char key[UX_VAULT_KEY_LEN],
                 char *err, size_t errlen);

/* {"nonce": base64, "data": base64 of ciphertext + 16-byte tag}, or NULL. */
json_t *ux_vault_seal(const unsigned char key[UX_VAULT_KEY_LEN], const char *aad,
                      const char *text, size_t len);

/* The plaintext (malloc'd, NUL-terminated, *len bytes), or NULL when the
** sealed object is malformed or does not authenticate. */
char *ux_vault_open(const unsigned char key[UX_VAULT_KEY_LEN], const char *aad,
                    const json_t *sealed, size_t *len);

/* Parses .env text: one NAME=value per line; blank lines and lines
** starting with '#' skipped; an optional "export " prefix; CR before LF
** dropped; a value wholly in matching single or double quotes loses
** them (no escapes are interpreted). The whole set must pass the core's
** environment rule. On success *env holds *n malloc'd "NAME=value"
** strings (NULL-terminated array) and 0 is returned; -1 with err naming
** the line otherwise. */
int ux_vault_parse(const char *text, size_t len, char ***env, size_t *n,
                   char *err, size_t errlen);

void ux_vault_env_free(char **env, size_t n);

#endif
