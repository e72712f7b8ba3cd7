/*
** file_write, file_write_binary (its base64 in the frame or in a data fd),
** file_edit and file_write_fd (the content read from a data fd, for
** object imports). Every write is atomic: the
** bytes go to a temporary file created O_EXCL in the target's directory
** (through that directory's fd), which then replaces the target with
** renameat, so a reader sees the old or the new file, never a half. A
** target that is a symlink inside the tree is written where it leads
** (that file is replaced); missing parents are created (0755); an existing
** file keeps its mode, a new one gets 0644.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "agent/args.h"
#include "agent/buf.h"
#include "agent/files.h"
#include "agent/fsfd.h"
#include "core/base64.h"

/* Opens the directory rel (normalised, "." = root), creating what is
** missing one level at a time, each level resolved from the root and
** checked (outside .sandbox) before anything is created in it. */
static int open_dirs(const ag_fs *fs, char *rel, const char *shown, ag_err *e) {
  int fd = ag_openat2(fs->root, rel, O_RDONLY | O_DIRECTORY, 0, AG_RES_INSIDE);
  if (fd >= 0 || errno != ENOENT) return fd >= 0 ? fd : ag_path_fail(shown, errno, e);
  int parent = dup(fs->root);
  if (parent < 0) return ag_sysfail(e, "dup");
  for (char *p = rel;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char saved = *p;
    *p = '\0';
    fd = ag_openat2(fs->root, rel, O_RDONLY | O_DIRECTORY, 0, AG_RES_INSIDE);
    if (fd < 0 && errno == ENOENT) {
      const char *last = strrchr(rel, '/');
      if (mkdirat(parent, last ? last + 1 : rel, 0755) < 0 && errno != EEXIST) fd = -1;
      else fd = ag_openat2(fs->root, rel, O_RDONLY | O_DIRECTORY, 0, AG_RES_INSIDE);
    }
    *p = saved;
    int err = errno;
    close(parent);
    if (fd < 0) return ag_path_fail(shown, err, e);
    if (ag_path_where(fs, fd, shown, NULL, e) < 0) { close(fd); return -1; }
    if (saved == '\0') return fd;
    parent = fd;
  }
}

/* Where new content comes from: a buffer, or (file_write_fd) a data fd
** read to its end, at most max bytes, hashed on the way and checked
** against want (a sha256, "" = none) before anything is renamed. */
typedef struct {
  const char *data;
  size_t len;
  int fd;                             /* -1: the buffer */
  unsigned long long max, bytes;
  const char *want;
  char sha[65];
} ag_src;

static int copy_fd(int out, ag_src *src, const char *shown, ag_err *e) {
  char buf[65536], s[AG_SHOW_MAX];
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  int rc = -1;
  EVP_MD_CTX *sha = EVP_MD_CTX_new();
  if (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(sha);
    return ag_fail(e, AG_INTERNAL, "out of memory");
  }
  ag_show(shown, s, sizeof s);
  for (;;) {
    ssize_t n = read(src->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { ag_sysfail(e, "path '%s': reading the data fd", s); goto done; }
    if (n == 0) break;
    if ((unsigned long long)n > src->max - src->bytes) {
      ag_fail(e, AG_INVALID, "path '%s': the data is more than %llu bytes; nothing was written", s, src->max);
      goto done;
    }
    if (ag_write_all(out, buf, (size_t)n) < 0) { ag_sysfail(e, "path '%s': write", s); goto done; }
    if (EVP_DigestUpdate(sha, buf, (size_t)n) != 1) { ag_fail(e, AG_INTERNAL, "sha256 failed"); goto done; }
    src->bytes += (unsigned long long)n;
  }
  if (EVP_DigestFinal_ex(sha, md, &mdlen) != 1 || mdlen != 32) { ag_fail(e, AG_INTERNAL, "sha256 failed"); goto done; }
  for (unsigned i = 0; i < 32; i++) sprintf(src->sha + 2 * i, "%02x", md[i]);
  if (*src->want && strcasecmp(src->want, src->sha) != 0) {
    ag_fail(e, AG_INVALID, "argument 'sha256' does not match the content (its sha256 is %s); nothing was written", src->sha);
    goto done;
  }
  rc = 0;
done:
  EVP_MD_CTX_free(sha);
  return rc;
}

static int write_temp(int dirfd, const char *leaf, ag_src *src, mode_t mode,
                      char *tmp, size_t tmplen, const char *shown, ag_err *e) {
  unsigned int rnd;
  int fd;
  if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) return ag_sysfail(e, "getrandom");
  snprintf(tmp, tmplen, ".%.200s.agent-%08x.tmp", leaf, rnd);
  fd = ag_openat2(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, AG_RES_STRICT);
  if (fd < 0) return ag_path_fail(shown, errno, e);
  int rc = src->fd >= 0 ? copy_fd(fd, src, shown, e) : 0;
  if (rc == 0 && ((src->fd < 0 && ag_write_all(fd, src->data, src->len) < 0) || fchmod(fd, mode) < 0))
    rc = ag_path_fail(shown, errno, e);
  if (close(fd) < 0 && rc == 0) rc = ag_path_fail(shown, errno, e);
  if (rc < 0) unlinkat(dirfd, tmp, 0);
  return rc;
}

/* Writes data to norm as the header comment says. */
static int atomic_write(const ag_fs *fs, const char *norm, const char *shown,
                        ag_src *src, ag_err *e) {
  char target[AG_PATH_MAX], tmp[300], s[AG_SHOW_MAX];
  mode_t mode = 0644;
  struct stat st;
  int fd = ag_openat2(fs->root, norm, O_PATH, 0, AG_RES_INSIDE);
  ag_show(shown, s, sizeof s);
  if (fd >= 0) {                      /* it exists: write where it leads */
    int rc = ag_path_where(fs, fd, shown, target, e);
    if (rc == 0 && fstat(fd, &st) < 0) rc = ag_sysfail(e, "path '%s': fstat", s);
    close(fd);
    if (rc < 0) return -1;
    if (S_ISDIR(st.st_mode)) return ag_fail(e, AG_INVALID, "path '%s': is a directory", s);
    if (!S_ISREG(st.st_mode)) return ag_fail(e, AG_INVALID, "path '%s': is not a regular file", s);
    if (!strcmp(target, ".")) return ag_fail(e, AG_INVALID, "path '%s': is the workspace", s);
    mode = st.st_mode & 0777;
  } else if (errno == ENOENT) {
    snprintf(target, sizeof target, "%s", norm);
  } else {
    return ag_path_fail(shown, errno, e);
  }
  char *slash = strrchr(target, '/'), dir[AG_PATH_MAX];
  const char *leaf = slash ? slash + 1 : target;
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - target) : 1, slash ? target : ".");
  int dfd = open_dirs(fs, dir, shown, e);
  if (dfd < 0) return -1;
  char where[AG_PATH_MAX];
  if (ag_path_where(fs, dfd, shown, where, e) < 0) { close(dfd); return -1; }
  if (!strcmp(where, ".") && !strcmp(leaf, ".sandbox")) {
    close(dfd);
    return ag_fail(e, AG_INVALID, "path '%s': .sandbox is reserved", s);
  }
  if (write_temp(dfd, leaf, src, mode, tmp, sizeof tmp, shown, e) < 0) { close(dfd); return -1; }
  if (renameat(dfd, tmp, dfd, leaf) < 0) {
    int err = errno;
    unlinkat(dfd, tmp, 0);
    close(dfd);
    return ag_path_fail(shown, err, e);
  }
  close(dfd);
  return 0;
}

int ag_op_file_write(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "content", NULL };
  char norm[AG_PATH_MAX];
  const char *path, *content;
  size_t plen, clen;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_arg_str(req, "content", NULL, 1, &content, &clen, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  if (clen > AG_WRITE_MAX)
    return ag_fail(e, AG_INVALID, "argument 'content': %zu bytes, more than %d", clen, AG_WRITE_MAX);
  ag_src src = { .data = content, .len = clen, .fd = -1 };
  if (atomic_write(fs, norm, path, &src, e) < 0) return -1;
  *result = json_pack("{s:s, s:I, s:I}", "path", path, "chars", (json_int_t)ag_utf8_chars(content, clen),
                      "bytes", (json_int_t)clen);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

static int is_hex64(const char *s) {
  if (strlen(s) != 64) return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F'))) return 0;
  return 1;
}

#define B64_MAX ((AG_WRITE_MAX / 3 + 1) * 4)   /* content_base64 of AG_WRITE_MAX bytes */

/* file_write_binary's content_base64 from its data fd: at most B64_MAX
** bytes (one more tells a longer text), into *out (caller frees). */
static int b64_from_fd(int datafd, char **out, size_t *len, ag_err *e) {
  if (ag_fd_mode(datafd) != O_RDONLY && ag_fd_mode(datafd) != O_RDWR)
    return ag_fail(e, AG_INVALID, "file_write_binary: the data fd is not readable");
  char *b = malloc(B64_MAX + 2);
  if (!b) return ag_fail(e, AG_INTERNAL, "out of memory");
  ssize_t n = ag_read_full(datafd, b, B64_MAX + 1);
  if (n < 0) { free(b); return ag_sysfail(e, "file_write_binary: reading the data fd"); }
  b[n] = '\0';
  if (memchr(b, '\0', (size_t)n)) {
    free(b);
    return ag_fail(e, AG_INVALID, "argument 'content_base64' must not contain a NUL byte");
  }
  *out = b;
  *len = (size_t)n;
  return 0;
}

int ag_op_file_write_binary(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "content_base64", "sha256", NULL };
  static const char *const fd_keys[] = { "path", "sha256", NULL };
  char norm[AG_PATH_MAX], sha[65], *from_fd = NULL;
  const char *path, *b64 = NULL, *want;
  size_t plen, blen = 0, len;
  unsigned char *data;
  if (ag_args_only(req, datafd >= 0 ? fd_keys : keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      (datafd < 0 && ag_arg_str(req, "content_base64", NULL, 0, &b64, &blen, e) < 0) ||
      ag_arg_str(req, "sha256", "", 0, &want, NULL, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  if (*want && !is_hex64(want)) return ag_fail(e, AG_INVALID, "argument 'sha256' must be 64 hexadecimal digits");
  if (datafd >= 0) {
    if (b64_from_fd(datafd, &from_fd, &blen, e) < 0) return -1;
    b64 = from_fd;
  }
  if (blen > B64_MAX) {
    free(from_fd);
    return ag_fail(e, AG_INVALID, "argument 'content_base64': the content is more than %d bytes", AG_WRITE_MAX);
  }
  data = unsb_base64_decode(b64, blen, &len);
  free(from_fd);
  if (!data) return ag_fail(e, AG_INVALID, "argument 'content_base64' is not valid base64");
  if (len > AG_WRITE_MAX) {
    free(data);
    return ag_fail(e, AG_INVALID, "argument 'content_base64': %zu bytes, more than %d", len, AG_WRITE_MAX);
  }
  if (ag_sha256_hex(data, len, sha) < 0) { free(data); return ag_fail(e, AG_INTERNAL, "sha256 failed"); }
  if (*want && strcasecmp(want, sha) != 0) {
    free(data);
    return ag_fail(e, AG_INVALID, "argument 'sha256' does not match the content (its sha256 is %s); nothing was written", sha);
  }
  ag_src src = { .data = (char *)data, .len = len, .fd = -1 };
  int rc = atomic_write(fs, norm, path, &src, e);
  free(data);
  if (rc < 0) return -1;
  *result = json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)len, "sha256", sha);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

int ag_op_file_edit(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "old", "new", NULL };
  char norm[AG_PATH_MAX], real[AG_PATH_MAX], s[AG_SHOW_MAX];
  const char *path, *old, *new;
  size_t plen, olen, nlen, len, count = 0;
  char *data, *hit = NULL;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_arg_str(req, "old", NULL, 1, &old, &olen, e) < 0 ||
      ag_arg_str(req, "new", NULL, 1, &new, &nlen, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  ag_show(path, s, sizeof s);
  if (olen == 0) return ag_fail(e, AG_INVALID, "argument 'old' must not be empty");
  if (ag_read_regular(fs, norm, path, AG_READ_MAX, &data, &len, real, e) < 0) return -1;
  if (!ag_utf8_valid(data, len)) {
    free(data);
    return ag_fail(e, AG_INVALID, "path '%s': is not UTF-8 text", s);
  }
  for (char *p = data; (p = memmem(p, len - (size_t)(p - data), old, olen)) != NULL; p += olen) {
    if (!hit) hit = p;
    count++;
  }
  if (count != 1) {
    free(data);
    if (count == 0) return ag_fail(e, AG_INVALID, "path '%s': old string was not found", s);
    return ag_fail(e, AG_INVALID, "path '%s': old string occurs %zu times; it must occur exactly once", s, count);
  }
  size_t outlen = len - olen + nlen;
  if (outlen > AG_WRITE_MAX) {
    free(data);
    return ag_fail(e, AG_INVALID, "path '%s': the edited file would be %zu bytes, more than %d", s, outlen, AG_WRITE_MAX);
  }
  ag_buf out = { 0 };
  size_t at = (size_t)(hit - data);
  ag_buf_add(&out, data, at);
  ag_buf_add(&out, new, nlen);
  ag_buf_add(&out, data + at + olen, len - at - olen);
  free(data);
  if (out.oom) { ag_buf_free(&out); return ag_fail(e, AG_INTERNAL, "out of memory"); }
  ag_src src = { .data = out.p ? out.p : "", .len = out.len, .fd = -1 };
  int rc = atomic_write(fs, real, path, &src, e);
  ag_buf_free(&out);
  if (rc < 0) return -1;
  *result = json_pack("{s:s, s:i}", "path", path, "replacements", 1);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

int ag_op_file_write_fd(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "sha256", "max_bytes", NULL };
  char norm[AG_PATH_MAX];
  const char *path, *want;
  size_t plen;
  long long max;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_arg_str(req, "sha256", "", 0, &want, NULL, e) < 0 ||
      ag_arg_int(req, "max_bytes", AG_FD_MAX, 0, AG_FD_MAX, &max, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  if (*want && !is_hex64(want)) return ag_fail(e, AG_INVALID, "argument 'sha256' must be 64 hexadecimal digits");
  if (ag_fd_mode(datafd) != O_RDONLY && ag_fd_mode(datafd) != O_RDWR)
    return ag_fail(e, AG_INVALID, "file_write_fd: the data fd is not readable");
  ag_src src = { .fd = datafd, .max = (unsigned long long)max, .want = want };
  if (atomic_write(fs, norm, path, &src, e) < 0) return -1;
  *result = json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)src.bytes, "sha256", src.sha);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}
