/*
** See vault.h. OpenSSL's EVP AEAD interface does the cryptography; the
** key never leaves this file's callers' stack buffers, which they wipe.
** The parser works on a bounded copy of the text (UX_VAULT_MAX), line by
** line, and lets the core's rule decide what a valid environment is.
*/
#include "server/exec/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core/base64.h"
#include "core/validate.h"
#include "server/fsutil.h"
#include "server/mem.h"

#define NONCE_LEN 12
#define TAG_LEN 16

static int read_key(int fd, unsigned char *key, char *err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) ||
      st.st_uid != geteuid() || st.st_size != UX_VAULT_KEY_LEN) {
    snprintf(err, errlen, "vault.key must be a %d-byte regular file of ours, mode 0600",
             UX_VAULT_KEY_LEN);
    return -1;
  }
  ssize_t n = read(fd, key, UX_VAULT_KEY_LEN);
  if (n != UX_VAULT_KEY_LEN) {
    snprintf(err, errlen, "cannot read vault.key: %s", n < 0 ? strerror(errno) : "short read");
    return -1;
  }
  return 0;
}

int ux_vault_key(const char *data_dir, unsigned char key[UX_VAULT_KEY_LEN],
                 char *err, size_t errlen) {
  char path[4200];
  if (ux_path(path, sizeof path, "%s/vault.key", data_dir) != 0) {
    snprintf(err, errlen, "data directory path too long");
    return -1;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {                                   /* first use: make the key */
    int ok = RAND_bytes(key, UX_VAULT_KEY_LEN) == 1 &&
             write(fd, key, UX_VAULT_KEY_LEN) == UX_VAULT_KEY_LEN && fsync(fd) == 0;
    close(fd);
    if (ok) return 0;
    OPENSSL_cleanse(key, UX_VAULT_KEY_LEN);
    unlink(path);
    snprintf(err, errlen, "cannot write vault.key");
    return -1;
  }
  if (errno != EEXIST || (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
    snprintf(err, errlen, "cannot open vault.key: %s", strerror(errno));
    return -1;
  }
  int rc = read_key(fd, key, err, errlen);
  close(fd);
  return rc;
}

/* One AES-256-GCM pass: enc 1 seals in into out (+ tag), enc 0 opens
** (in ends with the tag). The output length, or -1. */
static int gcm(int enc, const unsigned char *key, const unsigned char *nonce, const char *aad,
               const unsigned char *in, int inlen, unsigned char *out) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int len = 0, fin = 0, ok = c != NULL;
  int body = enc ? inlen : inlen - TAG_LEN;
  ok = ok && body >= 0 && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1 &&
       EVP_CipherInit_ex(c, NULL, NULL, key, nonce, enc) == 1 &&
       EVP_CipherUpdate(c, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
       EVP_CipherUpdate(c, out, &len, in, body) == 1;
  if (ok && !enc)
    ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, (void *)(in + body)) == 1;
  ok = ok && EVP_CipherFinal_ex(c, out + len, &fin) == 1;
  if (ok && enc) ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + len + fin) == 1;
  EVP_CIPHER_CTX_free(c);
  return ok ? len + fin + (enc ? TAG_LEN : 0) : -1;
}

json_t *ux_vault_seal(const unsigned char key[UX_VAULT_KEY_LEN], const char *aad,
                      const char *text, size_t len) {
  unsigned char nonce[NONCE_LEN];
  if (len > UX_VAULT_MAX || RAND_bytes(nonce, NONCE_LEN) != 1) return NULL;
  unsigned char *out = ux_xmalloc(len + TAG_LEN);
  if (!out) return NULL;
  int n = gcm(1, key, nonce, aad, (const unsigned char *)text, (int)len, out);
  char *b_nonce = unsb_base64_encode(nonce, NONCE_LEN, NULL);
  char *b_data = n >= 0 ? unsb_base64_encode(out, (size_t)n, NULL) : NULL;
  free(out);
  json_t *j = NULL;
  if (b_nonce && b_data) {
    j = json_object();
    if (j && (json_object_set_new(j, "nonce", json_string(b_nonce)) != 0 ||
              json_object_set_new(j, "data", json_string(b_data)) != 0)) {
      json_decref(j);
      j = NULL;
    }
  }
  free(b_nonce);
  free(b_data);
  return j;
}

char *ux_vault_open(const unsigned char key[UX_VAULT_KEY_LEN], const char *aad,
                    const json_t *sealed, size_t *len) {
  const char *sn = json_string_value(json_object_get(sealed, "nonce"));
  const char *sd = json_string_value(json_object_get(sealed, "data"));
  size_t nn = 0, nd = 0;
  unsigned char *nonce = sn ? unsb_base64_decode(sn, strlen(sn), &nn) : NULL;
  unsigned char *data = sd ? unsb_base64_decode(sd, strlen(sd), &nd) : NULL;
  char *out = NULL;
  if (nonce && data && nn == NONCE_LEN && nd >= TAG_LEN && nd <= UX_VAULT_MAX + TAG_LEN &&
      (out = ux_xmalloc(nd + 1)) != NULL) {
    int n = gcm(0, key, nonce, aad, data, (int)nd, (unsigned char *)out);
    if (n < 0) { free(out); out = NULL; }
    else { out[n] = '\0'; *len = (size_t)n; }
  }
  free(nonce);
  free(data);
  return out;
}
