/*
** Writing one object version (cp/objects/store.h): a temporary file in
** DATA/objects/tmp, hashed as it is written, then checked (size, sha256),
** synced, renamed to blobs/<version_id> and committed by one transaction
** that assigns the ordinal. Until that transaction commits no reader can
** find the version; when anything fails the file is removed, so an
** aborted or refused upload leaves nothing, not even on disk.
*/
#include "server/cp/objects/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/store/ledger.h"

/* A stream of unknown length reserves this much ahead of its bytes. */
#define GROW_STEP (1ull << 20)

struct ux_objput {
  ux_objstore *os;
  char version_id[33];                /* chosen now: it names the ledger item */
  char item[UX_LEDGER_ITEM_MAX];
  unsigned long long reserved;
  char bucket[32];
  char key[UX_OBJ_KEY_MAX + 1];
  char content_type[UX_OBJ_CTYPE_MAX + 1];
  char want_sha[65];                  /* "" = no check */
  unsigned long long max_bytes, bytes;
  int fd;
  char tmpname[48];
  EVP_MD_CTX *sha, *md5;
  int failed;                         /* sticky: the first error */
};

/* The ledger's answer as the store's result. */
static int held(int ledger) {
  return ledger == UX_LEDGER_OK ? UX_OBJ_OK : ledger == UX_LEDGER_QUOTA ? UX_OBJ_EQUOTA
       : ledger == UX_LEDGER_BUDGET ? UX_OBJ_EBUDGET : UX_OBJ_ESTORE;
}

/* Room for `total` bytes in p's reservation: they are counted before
** they are written. */
static int reserve_to(ux_objput *p, unsigned long long total) {
  if (total <= p->reserved) return UX_OBJ_OK;
  unsigned long long want = total + GROW_STEP;
  if (want > p->max_bytes) want = p->max_bytes > total ? p->max_bytes : total;
  int rc = held(ux_ledger_grow(p->os->st, p->item, want - p->reserved));
  if (rc == UX_OBJ_OK) p->reserved = want;
  else if (want > total && held(ux_ledger_grow(p->os->st, p->item, total - p->reserved)) == UX_OBJ_OK) {
    p->reserved = total;                          /* the step did not fit, the bytes do */
    rc = UX_OBJ_OK;
  }
  return rc;
}

static void put_free(ux_objput *p, int remove_tmp) {
  if (remove_tmp) ux_ledger_cancel(p->os->st, p->item);   /* nothing was stored */
  if (p->fd >= 0) close(p->fd);
  if (remove_tmp && p->tmpname[0] && unlinkat(p->os->tmpfd, p->tmpname, 0) < 0 && errno != ENOENT)
    fprintf(stderr, "unsandboxd: objects: cannot remove %s: %s\n", p->tmpname, strerror(errno));
  EVP_MD_CTX_free(p->sha);
  EVP_MD_CTX_free(p->md5);
  free(p);
}

static int fits(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) return 0;
  memcpy(dst, src, n + 1);
  return 1;
}

int ux_objput_begin(ux_objstore *os, const char *party, const char *bucket, const char *key,
                    const char *content_type, unsigned long long max_bytes,
                    unsigned long long expect, const char *sha256, ux_objput **out) {
  *out = NULL;
  ux_objput *p = calloc(1, sizeof *p);
  if (!p) return UX_OBJ_EIO;
  p->os = os;
  p->fd = -1;
  p->max_bytes = max_bytes;
  if (!content_type) content_type = "application/octet-stream";
  if (!sha256) sha256 = "";
  if (!fits(p->bucket, sizeof p->bucket, bucket) || !fits(p->key, sizeof p->key, key) ||
      !fits(p->content_type, sizeof p->content_type, content_type) ||
      !fits(p->want_sha, sizeof p->want_sha, sha256) ||
      !(p->sha = EVP_MD_CTX_new()) || !(p->md5 = EVP_MD_CTX_new()) ||
      EVP_DigestInit_ex(p->sha, EVP_sha256(), NULL) != 1 ||
      EVP_DigestInit_ex(p->md5, EVP_md5(), NULL) != 1 ||
      ux_random_id(p->tmpname, sizeof p->tmpname - 5, "up-", 16) < 0 ||
      ux_random_id(p->version_id, sizeof p->version_id, "", 16) < 0) {
    put_free(p, 0);
    return UX_OBJ_EIO;
  }
  ux_ledger_item(p->item, sizeof p->item, "cp_object_versions", p->version_id);
  int rc = held(ux_ledger_reserve(os->st, party,
                                  strcmp(bucket, "sandbox-workspaces") ? UX_LEDGER_OBJECT : UX_LEDGER_CHECKPOINT,
                                  p->item, expect < max_bytes ? expect : max_bytes));
  if (rc != UX_OBJ_OK) {
    p->item[0] = '\0';                             /* not ours to cancel */
    put_free(p, 0);
    return rc;
  }
  p->reserved = expect < max_bytes ? expect : max_bytes;
  strcat(p->tmpname, ".part");
  p->fd = openat(os->tmpfd, p->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (p->fd < 0) {
    fprintf(stderr, "unsandboxd: objects: cannot create a temporary file: %s\n", strerror(errno));
    p->tmpname[0] = '\0';
    put_free(p, 1);                               /* the reservation goes */
    return UX_OBJ_EIO;
  }
  *out = p;
  return UX_OBJ_OK;
}

int ux_objput_write(ux_objput *p, const void *buf, size_t len) {
  if (p->failed) return p->failed;
  if (len > p->max_bytes - p->bytes) return p->failed = UX_OBJ_ETOOBIG;
  int room = reserve_to(p, p->bytes + len);
  if (room != UX_OBJ_OK) return p->failed = room;
  if (EVP_DigestUpdate(p->sha, buf, len) != 1 || EVP_DigestUpdate(p->md5, buf, len) != 1)
    return p->failed = UX_OBJ_EIO;
  const char *c = buf;
  for (size_t done = 0; done < len;) {
    ssize_t n = write(p->fd, c + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "unsandboxd: objects: write: %s\n", n < 0 ? strerror(errno) : "no progress");
      return p->failed = UX_OBJ_EIO;
    }
    done += (size_t)n;
  }
  p->bytes += len;
  return UX_OBJ_OK;
}

int ux_objput_from_fd(ux_objput *p, int fd) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return p->failed = UX_OBJ_EIO;
    if (n == 0) return p->failed;
    int rc = ux_objput_write(p, buf, (size_t)n);
    if (rc != UX_OBJ_OK) return rc;
  }
}

int ux_objput_failure(const ux_objput *p) { return p->failed; }

void ux_objput_abort(ux_objput *p) {
  if (p) put_free(p, 1);
}

static void hex(const unsigned char *d, unsigned n, char *out) {
  static const char h[] = "0123456789abcdef";
  for (unsigned i = 0; i < n; i++) { out[2 * i] = h[d[i] >> 4]; out[2 * i + 1] = h[d[i] & 15]; }
  out[2 * n] = '\0';
}

/* Size and sha256 checks, then the content made durable. */
static int finish_content(ux_objput *p, ux_obj_meta *m) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (EVP_DigestFinal_ex(p->sha, d, &n) != 1 || n != 32) return UX_OBJ_EIO;
  hex(d, 32, m->sha256);
  if (EVP_DigestFinal_ex(p->md5, d, &n) != 1 || n != 16) return UX_OBJ_EIO;
  hex(d, 16, m->etag);
  if (p->want_sha[0] && strcmp(p->want_sha, m->sha256) != 0) return UX_OBJ_ESHA;
  if (fsync(p->fd) < 0 || close(p->fd) < 0) {
    p->fd = -1;
    fprintf(stderr, "unsandboxd: objects: sync: %s\n", strerror(errno));
    return UX_OBJ_EIO;
  }
  p->fd = -1;
  return UX_OBJ_OK;
}

int ux_objput_commit(ux_objput *p, ux_obj_meta *out) {
  ux_obj_meta m;
  memset(&m, 0, sizeof m);
  int rc = p->failed ? p->failed : finish_content(p, &m);
  memcpy(m.version_id, p->version_id, sizeof m.version_id);
  if (rc == UX_OBJ_OK && renameat(p->os->tmpfd, p->tmpname, p->os->blobfd, m.version_id) < 0) {
    fprintf(stderr, "unsandboxd: objects: rename: %s\n", strerror(errno));
    rc = UX_OBJ_EIO;
  }
  if (rc != UX_OBJ_OK) {
    put_free(p, 1);
    return rc;
  }
  p->tmpname[0] = '\0';                 /* it is the blob now */
  memcpy(m.bucket, p->bucket, sizeof m.bucket);
  memcpy(m.key, p->key, sizeof m.key);
  memcpy(m.content_type, p->content_type, sizeof m.content_type);
  m.bytes = p->bytes;
  m.last_modified = ux_now();
  m.is_latest = 1;
  /* the version's row commits its ledger item (a trigger, ledger.h) */
  if (ux_objstore_add_version(p->os, &m) != 0) {
    if (unlinkat(p->os->blobfd, m.version_id, 0) < 0)
      fprintf(stderr, "unsandboxd: objects: cannot remove %s: %s\n", m.version_id, strerror(errno));
    ux_ledger_cancel(p->os->st, p->item);
    rc = UX_OBJ_ESTORE;
  } else if (out) {
    *out = m;
  }
  put_free(p, 0);
  return rc;
}
