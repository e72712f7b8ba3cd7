/*
** file_read (a window of lines of a UTF-8 text file), file_read_binary
** (a whole file as base64, or its bytes to a data fd) and file_read_fd (a whole file streamed to a
** data fd, for object exports). Lines are counted as the text after each
** "\n"; a final "\n" does not start another line, so an empty file has no
** lines and "a\nb" and "a\nb\n" both have two. Characters are Unicode
** code points.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "agent/args.h"
#include "agent/buf.h"
#include "agent/files.h"
#include "agent/fsfd.h"
#include "core/base64.h"

int ag_read_regular(const ag_fs *fs, const char *norm, const char *shown, size_t max,
                    char **data, size_t *len, char *real, ag_err *e) {
  char s[AG_SHOW_MAX];
  struct stat st;
  char *buf;
  ssize_t n;
  int fd = ag_path_open(fs, norm, shown, O_RDONLY | O_NONBLOCK | O_NOCTTY, real, e);
  if (fd < 0) return -1;
  ag_show(shown, s, sizeof s);
  if (fstat(fd, &st) < 0) { close(fd); return ag_sysfail(e, "path '%s': fstat", s); }
  if (S_ISDIR(st.st_mode)) { close(fd); return ag_fail(e, AG_INVALID, "path '%s': is a directory", s); }
  if (!S_ISREG(st.st_mode)) { close(fd); return ag_fail(e, AG_INVALID, "path '%s': is not a regular file", s); }
  if ((unsigned long long)st.st_size > max) {
    close(fd);
    return ag_fail(e, AG_INVALID, "path '%s': %lld bytes, larger than the limit of %zu bytes", s,
                   (long long)st.st_size, max);
  }
  /* one byte more than allowed tells a file that grew meanwhile */
  if (!(buf = malloc(max + 2))) { close(fd); return ag_fail(e, AG_INTERNAL, "out of memory"); }
  n = ag_read_full(fd, buf, max + 1);
  close(fd);
  if (n < 0) { free(buf); return ag_sysfail(e, "path '%s': read", s); }
  if ((size_t)n > max) { free(buf); return ag_fail(e, AG_INVALID, "path '%s': larger than the limit of %zu bytes", s, max); }
  buf[n] = '\0';
  *data = buf;
  *len = (size_t)n;
  return 0;
}

/* Where line `offset` (1-based) starts; *total gets the number of lines. */
static size_t line_start(const char *d, size_t len, long long offset, long long *total) {
  long long line = 1, lines = len ? 1 : 0;
  size_t at = 0;
  for (size_t i = 0; i < len; i++) {
    if (d[i] != '\n') continue;
    if (i + 1 < len) {
      lines++;
      if (++line == offset) at = i + 1;
    }
  }
  *total = lines;
  return at;
}

static int read_window(const char *shown, const char *d, size_t len, long long offset,
                       long long limit, json_t **out, ag_err *e) {
  char s[AG_SHOW_MAX];
  long long total, want = (limit == 0 || limit > AG_READ_LINES) ? AG_READ_LINES : limit;
  size_t at = line_start(d, len, offset, &total), end = at, chars = 0;
  long long line = offset - 1;
  json_t *r;
  if (offset > (total > 0 ? total : 1))
    return ag_fail(e, AG_INVALID, "path '%s': offset %lld is past the end of the file (%lld lines)",
                   ag_show(shown, s, sizeof s), offset, total);
  while (end < len && line - offset + 1 < want) {
    const char *nl = memchr(d + end, '\n', len - end);
    size_t stop = nl ? (size_t)(nl - d) + 1 : len;
    size_t c = ag_utf8_chars(d + end, stop - end);
    if (chars + c > AG_READ_CHARS) {
      if (line + 1 == offset) {       /* the first line alone is too long: cut it */
        size_t cut = ag_utf8_prefix(d + end, stop - end, AG_READ_CHARS);
        size_t full = ag_utf8_chars(d + end, (nl ? stop - 1 : stop) - end);
        r = json_pack("{s:s, s:s%, s:I, s:I, s:b, s:I, s:I}", "path", shown,
                      "content", d + end, cut, "start_line", (json_int_t)offset,
                      "end_line", (json_int_t)offset, "truncated", 1,
                      "clipped_line", (json_int_t)offset, "clipped_length", (json_int_t)full);
        /* truncated: the line is cut; next_offset only if a line follows */
        if (r && offset < total && json_object_set_new(r, "next_offset", json_integer(offset + 1)) < 0) {
          json_decref(r);
          r = NULL;
        }
        *out = r;
        return r ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
      }
      break;
    }
    chars += c;
    end = stop;
    line++;
  }
  int truncated = line < total;
  r = json_pack("{s:s, s:s%, s:I, s:I, s:b}", "path", shown, "content", d + at, end - at,
                "start_line", (json_int_t)offset, "end_line", (json_int_t)line, "truncated", truncated);
  if (r && truncated && json_object_set_new(r, "next_offset", json_integer(line + 1)) < 0) {
    json_decref(r);
    r = NULL;
  }
  *out = r;
  return r ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

int ag_op_file_read(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "offset", "limit", NULL };
  char norm[AG_PATH_MAX], s[AG_SHOW_MAX];
  const char *path;
  size_t plen, len;
  long long offset, limit;
  char *data;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_arg_int(req, "offset", 1, 1, 1LL << 40, &offset, e) < 0 ||
      ag_arg_int(req, "limit", 0, 0, 1LL << 40, &limit, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0 ||
      ag_read_regular(fs, norm, path, AG_READ_MAX, &data, &len, NULL, e) < 0)
    return -1;
  if (!ag_utf8_valid(data, len)) {
    free(data);
    return ag_fail(e, AG_INVALID, "path '%s': is not UTF-8 text (use file_read_binary)", ag_show(path, s, sizeof s));
  }
  int rc = read_window(path, data, len, offset, limit, result, e);
  free(data);
  return rc;
}

/* Copies at most max bytes of fd to out with their sha256; more is an
** error (the file grew after its fstat). */
static int stream_file(int fd, int out, unsigned long long max, const char *s,
                       unsigned long long *bytes, char sha[65], ag_err *e) {
  char buf[65536];
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  int rc = -1;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(ctx);
    return ag_fail(e, AG_INTERNAL, "out of memory");
  }
  *bytes = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { ag_sysfail(e, "path '%s': read", s); goto done; }
    if (n == 0) break;
    if ((unsigned long long)n > max - *bytes) {
      ag_fail(e, AG_INVALID, "path '%s': larger than the limit of %llu bytes", s, max);
      goto done;
    }
    if (ag_write_all(out, buf, (size_t)n) < 0) { ag_sysfail(e, "writing the data fd"); goto done; }
    if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1) { ag_fail(e, AG_INTERNAL, "sha256 failed"); goto done; }
    *bytes += (unsigned long long)n;
  }
  if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) { ag_fail(e, AG_INTERNAL, "sha256 failed"); goto done; }
  for (unsigned i = 0; i < 32; i++) sprintf(sha + 2 * i, "%02x", md[i]);
  rc = 0;
done:
  EVP_MD_CTX_free(ctx);
  return rc;
}

/* The regular file at norm streamed to datafd (at most max bytes), with
** the checks and messages of ag_read_regular. */
static int read_to_fd(const ag_fs *fs, const char *norm, const char *path, unsigned long long max,
                      int datafd, unsigned long long *bytes, char sha[65], ag_err *e) {
  char s[AG_SHOW_MAX];
  struct stat st;
  int fd = ag_path_open(fs, norm, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, NULL, e);
  if (fd < 0) return -1;
  ag_show(path, s, sizeof s);
  int rc = fstat(fd, &st) < 0 ? ag_sysfail(e, "path '%s': fstat", s)
         : S_ISDIR(st.st_mode) ? ag_fail(e, AG_INVALID, "path '%s': is a directory", s)
         : !S_ISREG(st.st_mode) ? ag_fail(e, AG_INVALID, "path '%s': is not a regular file", s)
         : (unsigned long long)st.st_size > max
           ? ag_fail(e, AG_INVALID, "path '%s': %lld bytes, larger than the limit of %llu bytes", s,
                     (long long)st.st_size, max)
         : stream_file(fd, datafd, max, s, bytes, sha, e);
  close(fd);
  return rc;
}

int ag_op_file_read_binary(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", NULL };
  char norm[AG_PATH_MAX], sha[65];
  const char *path;
  size_t plen, len, b64len;
  char *data, *b64;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  if (datafd >= 0) {
    unsigned long long bytes;
    if (ag_fd_mode(datafd) != O_WRONLY && ag_fd_mode(datafd) != O_RDWR)
      return ag_fail(e, AG_INVALID, "file_read_binary: the data fd is not writable");
    if (read_to_fd(fs, norm, path, AG_READ_BINARY_MAX, datafd, &bytes, sha, e) < 0) return -1;
    *result = json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)bytes, "sha256", sha);
    return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
  }
  if (ag_read_regular(fs, norm, path, AG_READ_BINARY_MAX, &data, &len, NULL, e) < 0) return -1;
  if (ag_sha256_hex(data, len, sha) < 0 || !(b64 = unsb_base64_encode((unsigned char *)data, len, &b64len))) {
    free(data);
    return ag_fail(e, AG_INTERNAL, "out of memory");
  }
  *result = json_pack("{s:s, s:I, s:s, s:s%}", "path", path, "bytes", (json_int_t)len,
                      "sha256", sha, "content_base64", b64, b64len);
  free(data);
  free(b64);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}

int ag_op_file_read_fd(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e) {
  static const char *const keys[] = { "path", "max_bytes", NULL };
  char norm[AG_PATH_MAX], sha[65];
  const char *path;
  size_t plen;
  long long max;
  unsigned long long bytes;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", NULL, 1, &path, &plen, e) < 0 ||
      ag_arg_int(req, "max_bytes", AG_FD_MAX, 0, AG_FD_MAX, &max, e) < 0 ||
      ag_path_norm(path, plen, 0, norm, e) < 0)
    return -1;
  if (ag_fd_mode(datafd) != O_WRONLY && ag_fd_mode(datafd) != O_RDWR)
    return ag_fail(e, AG_INVALID, "file_read_fd: the data fd is not writable");
  if (read_to_fd(fs, norm, path, (unsigned long long)max, datafd, &bytes, sha, e) < 0) return -1;
  *result = json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)bytes, "sha256", sha);
  return *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
}
