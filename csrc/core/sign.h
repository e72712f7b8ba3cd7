/*
** Request signing for the unsandbox execution API: the one function that
** computes X-Signature, used by the client and by unsandboxd alike.
**
** X-Signature = lowercase hex HMAC-SHA256(key = secret,
**                                        msg = "<ts>:<METHOD>:<path>:<body>")
** The path is signed exactly as given: callers pass it WITHOUT the query
** string (the project's rule, see unsb_path_for_signing); the body is the
** exact bytes sent, empty when there is none.
*/
#ifndef UNSB_SIGN_H
#define UNSB_SIGN_H

#include <stddef.h>

#define UNSB_SIGNATURE_HEX_LEN 64

/* Writes 64 lowercase hex characters and a NUL to out. Returns 0, or -1 if
** a required argument is NULL or OpenSSL fails. body may be NULL when
** body_len is 0. */
int unsb_sign(const char *secret, size_t secret_len,
              const char *timestamp, const char *method, const char *path,
              const char *body, size_t body_len,
              char out[UNSB_SIGNATURE_HEX_LEN + 1]);

/* A signer keyed once with a secret: the HMAC key schedule is made once
** and copied for each signature, which is what a client that signs every
** request wants. Holds key material: unsb_signer_free wipes it. */
typedef struct unsb_signer unsb_signer;

/* NULL if memory or OpenSSL fails. */
unsb_signer *unsb_signer_new(const char *secret, size_t secret_len);
/* As unsb_sign, with the signer's secret. */
int unsb_signer_sign(const unsb_signer *s, const char *timestamp, const char *method,
                     const char *path, const char *body, size_t body_len,
                     char out[UNSB_SIGNATURE_HEX_LEN + 1]);
void unsb_signer_free(unsb_signer *s);

/* Length of the part of a request target that is signed: up to the first
** '?' (the query string is never signed by this project). */
size_t unsb_path_for_signing(const char *target);

/* Lowercase hex HMAC-SHA256 of one message; unsb_sign is built on it. */
int unsb_hmac_hex(const char *key, size_t key_len, const char *msg, size_t msg_len,
                  char out[UNSB_SIGNATURE_HEX_LEN + 1]);

/* Constant-time comparison of two NUL-terminated signatures: 1 if equal. */
int unsb_signature_equal(const char *a, const char *b);

#endif
