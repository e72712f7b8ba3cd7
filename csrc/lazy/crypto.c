/*
** libcrypto on first use (see lazy.h), as curl.c does for libcurl: the
** functions of OpenSSL the core calls (HMAC and SHA-256 through EVP,
** SHA-1 for WebSocket's accept key, base64 blocks, random bytes,
** constant-time compare), forwarding once
** libcrypto.so.3 is loaded. OPENSSL_cleanse alone is not forwarded: the
** core wipes secrets when objects die, often with nothing else of
** OpenSSL ever used, and glibc's explicit_bzero gives the same promise
** (the stores are never optimised away) without loading the library.
*/
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <string.h>

#include "lazy/lazy.h"

static const OSSL_PARAM no_param;   /* all zero: the list's end marker */

/* Functions with a result: type, name, parameters, arguments, and the
** result when libcrypto is missing. */
#define CRYPTO_FUNCS(X) \
  X(int, CRYPTO_memcmp, (const void *a, const void *b, size_t n), (a, b, n), 1) \
  X(int, EVP_EncodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n), -1) \
  X(int, EVP_DecodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n), -1) \
  X(int, EVP_Digest, (const void *d, size_t n, unsigned char *md, unsigned int *s, \
                      const EVP_MD *t, ENGINE *e), (d, n, md, s, t, e), 0) \
  X(const EVP_MD *, EVP_sha256, (void), (), NULL) \
  X(EVP_MD_CTX *, EVP_MD_CTX_new, (void), (), NULL) \
  X(int, EVP_DigestInit_ex, (EVP_MD_CTX *c, const EVP_MD *t, ENGINE *e), (c, t, e), 0) \
  X(int, EVP_DigestUpdate, (EVP_MD_CTX *c, const void *d, size_t n), (c, d, n), 0) \
  X(int, EVP_DigestFinal_ex, (EVP_MD_CTX *c, unsigned char *md, unsigned int *s), (c, md, s), 0) \
  X(const EVP_MD *, EVP_sha1, (void), (), NULL) \
  X(EVP_MAC *, EVP_MAC_fetch, (OSSL_LIB_CTX *c, const char *a, const char *p), (c, a, p), NULL) \
  X(EVP_MAC_CTX *, EVP_MAC_CTX_new, (EVP_MAC *m), (m), NULL) \
  X(EVP_MAC_CTX *, EVP_MAC_CTX_dup, (const EVP_MAC_CTX *c), (c), NULL) \
  X(int, EVP_MAC_init, (EVP_MAC_CTX *c, const unsigned char *k, size_t n, const OSSL_PARAM p[]), \
    (c, k, n, p), 0) \
  X(int, EVP_MAC_update, (EVP_MAC_CTX *c, const unsigned char *d, size_t n), (c, d, n), 0) \
  X(int, EVP_MAC_final, (EVP_MAC_CTX *c, unsigned char *o, size_t *n, size_t s), (c, o, n, s), 0) \
  X(OSSL_PARAM, OSSL_PARAM_construct_utf8_string, (const char *k, char *b, size_t n), (k, b, n), \
    no_param) \
  X(OSSL_PARAM, OSSL_PARAM_construct_end, (void), (), no_param) \
  X(int, RAND_bytes, (unsigned char *b, int n), (b, n), 0)

/* Functions without one: name, parameters, arguments. */
#define CRYPTO_PROCS(X) \
  X(EVP_MAC_free, (EVP_MAC *m), (m)) \
  X(EVP_MAC_CTX_free, (EVP_MAC_CTX *c), (c)) \
  X(EVP_MD_CTX_free, (EVP_MD_CTX *c), (c))

enum { CRYPTO_FUNCS(UNSB_LAZY_IDX_F) CRYPTO_PROCS(UNSB_LAZY_IDX_P) N_FUNCS };
static const char *const names[N_FUNCS + 1] = { CRYPTO_FUNCS(UNSB_LAZY_NAME_F) CRYPTO_PROCS(UNSB_LAZY_NAME_P) NULL };
static void *slot[N_FUNCS];
static unsb_lazy lib = { "libcrypto.so.3", names, slot, PTHREAD_ONCE_INIT, 0 };

CRYPTO_FUNCS(UNSB_LAZY_FORWARD_F)
CRYPTO_PROCS(UNSB_LAZY_FORWARD_P)

void OPENSSL_cleanse(void *p, size_t n) { explicit_bzero(p, n); }
