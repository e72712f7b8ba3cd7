/*
** SHA-256, hex and random bytes (see digest.h).
*/
#include "core/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void unsb_hex(const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

int unsb_sha256_hex(const void *data, size_t len, char out[UNSB_SHA256_HEX_LEN + 1]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (!data && len) return -1;
  if (EVP_Digest(data ? data : "", len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
    return -1;
  unsb_hex(md, 32, out);
  return 0;
}

struct unsb_sha256 {
  EVP_MD_CTX *ctx;                           /* NULL once finished */
  char hex[UNSB_SHA256_HEX_LEN + 1];         /* the digest, once finished */
};

unsb_sha256 *unsb_sha256_new(void) {
  unsb_sha256 *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    unsb_sha256_free(h);
    return NULL;
  }
  return h;
}

int unsb_sha256_update(unsb_sha256 *h, const void *data, size_t len) {
  if (!h->ctx) return -1;
  return len == 0 || EVP_DigestUpdate(h->ctx, data, len) == 1 ? 0 : -1;
}

int unsb_sha256_final(unsb_sha256 *h, char out[UNSB_SHA256_HEX_LEN + 1]) {
  if (h->ctx) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    int ok = EVP_DigestFinal_ex(h->ctx, md, &md_len) == 1 && md_len == 32;
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    if (!ok) return -1;
    unsb_hex(md, 32, h->hex);
  }
  if (!h->hex[0]) return -1;
  memcpy(out, h->hex, sizeof h->hex);
  return 0;
}

void unsb_sha256_free(unsb_sha256 *h) {
  if (!h) return;
  if (h->ctx) EVP_MD_CTX_free(h->ctx);
  free(h);
}

static int hash_fd(int fd, unsb_sha256 *h, char *buf, size_t size, long long *total) {
  for (;;) {
    ssize_t n = read(fd, buf, size);
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (unsb_sha256_update(h, buf, (size_t)n) != 0) {
      errno = EIO;
      return -1;
    }
    *total += n;
  }
}

int unsb_sha256_file(const char *path, char out[UNSB_SHA256_HEX_LEN + 1], long long *size) {
  enum { PIECE = 1 << 20 };
  struct stat st;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc = -1, saved;
  if (fd < 0) return -1;
  unsb_sha256 *h = NULL;
  char *buf = NULL;
  *size = 0;
  if (fstat(fd, &st) != 0) goto done;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    goto done;
  }
  if (!(buf = malloc(PIECE)) || !(h = unsb_sha256_new())) {
    errno = ENOMEM;
    goto done;
  }
  if (hash_fd(fd, h, buf, PIECE, size) != 0) goto done;
  if (unsb_sha256_final(h, out) != 0) errno = EIO;
  else rc = 0;
done:
  saved = errno;
  unsb_sha256_free(h);
  free(buf);
  close(fd);
  errno = saved;
  return rc;
}

int unsb_random_bytes(unsigned char *out, size_t n) {
  if (n > (size_t)1 << 20) return -1;   /* far beyond any id; RAND_bytes takes an int */
  return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}

/* The id pool: per thread (two Lua states in two threads never share
** one), refilled when empty or when a fork happened since it was filled
** (a child's draws must differ from its parent's). */
#define ID_POOL 1024

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static volatile unsigned long forks;
static void count_fork(void) { forks++; }
static void watch_forks(void) { pthread_atfork(NULL, NULL, count_fork); }

static _Thread_local struct {
  unsigned char bytes[ID_POOL];
  size_t left;                   /* the unused bytes are the last `left` */
  unsigned long forks;           /* the fork count when it was filled */
} pool;

int unsb_random_id_bytes(unsigned char *out, size_t n) {
  if (n > 64) return -1;
  pthread_once(&fork_once, watch_forks);
  if (pool.left < n || pool.forks != forks) {
    if (RAND_bytes(pool.bytes, ID_POOL) != 1) {
      pool.left = 0;
      return -1;
    }
    pool.left = ID_POOL;
    pool.forks = forks;
  }
  unsigned char *p = pool.bytes + ID_POOL - pool.left;
  memcpy(out, p, n);
  memset(p, 0, n);
  pool.left -= n;
  return 0;
}
