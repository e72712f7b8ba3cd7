/*
** unsandboxd-agent runtime: the data-fd ops of object import/export
** (file_read_fd, file_write_fd), the binary file ops' content beside the
** frame (file_write_binary's base64 text, file_read_binary's bytes) and
** checkpoint's `only` (an export's
** archive of exactly `artifacts`). Content larger than the JSON ops allow
** goes through, hashes are right, limits and sha256 mismatches write
** nothing and leave no temporary file, the path rules hold (symlinks out,
** .sandbox, FIFOs), a reader that goes away fails the op without killing
** the agent.
*/
#include "tests/tap.h"
#include "tests/agent_util.h"

static char *root, *work;
static agent_rt A;

static char *at(const char *base, const char *rel) {
  char *p;
  if (asprintf(&p, "%s/%s", base, rel) < 0) exit(1);
  return p;
}

static void put(const char *rel, const char *data, size_t len) {
  char *p = at(root, rel);
  write_file(p, data, len, 0644);
  free(p);
}

static void sha_hex(const void *d, size_t n, char out[65]) {
  unsigned char md[32];
  EVP_Q_digest(NULL, "SHA256", NULL, d, n, md, NULL);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
}

static char *pattern(size_t n) {
  char *b = malloc(n);
  for (size_t i = 0; i < n; i++) b[i] = (char)((i * 31) ^ (i >> 9));
  return b;
}

/* A data file in work/, opened with flags; its content is data. */
static int data_fd(const char *name, const char *data, size_t len, int flags) {
  char *p = at(work, name);
  if (data) write_file(p, data, len, 0600);
  int fd = open(p, flags | O_CREAT | O_CLOEXEC, 0600);
  free(p);
  return fd;
}

static rt_reply call_fd(const char *req, int fd) {
  rt_reply r = rt_call_raw(&A, req, strlen(req), fd, 60);
  if (fd >= 0) close(fd);
  return r;
}

static int dir_has_tmp(const char *rel) {
  char *p = at(root, rel);
  DIR *d = opendir(p);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) n += strstr(e->d_name, ".agent-") != NULL;
  if (d) closedir(d);
  free(p);
  return n;
}

static void expect_fail(const char *req, int fd, const char *part) {
  rt_reply r = call_fd(req, fd);
  ok(r.final && strstr(rt_error(&r), part), "%.120s -> %.200s", req, rt_error(&r));
  rt_free(&r);
}

static void test_write_fd(void) {
  size_t big = 3u << 20;          /* beyond file_write_binary's 1 000 000 bytes */
  char *b = pattern(big), sha[65], req[512];
  sha_hex(b, big, sha);
  snprintf(req, sizeof req, "{\"op\":\"file_write_fd\",\"path\":\"data/uploads/sub/x.bin\",\"sha256\":\"%s\"}", sha);
  rt_reply r = call_fd(req, data_fd("in", b, big, O_RDONLY));
  json_t *res = rt_result(&r);
  size_t len;
  char *p = at(root, "data/uploads/sub/x.bin"), *got = read_file(p, &len);
  struct stat st;
  ok(res && ri(res, "bytes") == (long long)big && !strcmp(rs(res, "sha256"), sha) && !strcmp(rs(res, "path"),
     "data/uploads/sub/x.bin"), "3 MiB written from a data fd, with its sha256 (%s)", rt_error(&r));
  ok(got && len == big && !memcmp(got, b, big) && stat(p, &st) == 0 && (st.st_mode & 0777) == 0644,
     "the file holds exactly the bytes, mode 0644, parents created");
  free(got); rt_free(&r);
  /* a mismatch, an overflow: the old file stays, no temporary is left */
  snprintf(req, sizeof req, "{\"op\":\"file_write_fd\",\"path\":\"data/uploads/sub/x.bin\",\"sha256\":\"%064d\"}", 0);
  expect_fail(req, data_fd("in", "other", 5, O_RDONLY), "does not match the content");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/sub/x.bin\",\"max_bytes\":4}",
              data_fd("in", "other", 5, O_RDONLY), "more than 4 bytes; nothing was written");
  got = read_file(p, &len);
  ok(got && len == big && !memcmp(got, b, big), "refused writes leave the file as it was");
  ok(dir_has_tmp("data/uploads/sub") == 0, "and no temporary file");
  free(got); free(p); free(b);
  /* a pipe works too, and an empty one writes an empty file */
  int pp[2];
  if (pipe(pp) < 0) exit(1);
  if (write(pp[1], "piped", 5) != 5) exit(1);
  close(pp[1]);
  r = call_fd("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/p.txt\"}", pp[0]);
  ok(rt_result(&r) && ri(rt_result(&r), "bytes") == 5, "content from a pipe (%s)", rt_error(&r));
  rt_free(&r);
  r = call_fd("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/e.txt\"}", data_fd("empty", "", 0, O_RDONLY));
  ok(rt_result(&r) && ri(rt_result(&r), "bytes") == 0, "an empty file");
  rt_free(&r);
}

static void test_write_fd_rules(void) {
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\".sandbox/x\"}", data_fd("in", "x", 1, O_RDONLY), ".sandbox");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"../x\"}", data_fd("in", "x", 1, O_RDONLY), "..");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"/etc/x\"}", data_fd("in", "x", 1, O_RDONLY), "absolute");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"out/x\"}", data_fd("in", "x", 1, O_RDONLY), "outside");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data\"}", data_fd("in", "x", 1, O_RDONLY), "is a directory");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/y\"}", data_fd("out", NULL, 0, O_WRONLY),
              "not readable");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/y\"}", -1, "needs a data fd");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/y\",\"sha256\":\"xyz\"}",
              data_fd("in", "x", 1, O_RDONLY), "64 hexadecimal digits");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/y\",\"max_bytes\":67108865}",
              data_fd("in", "x", 1, O_RDONLY), "max_bytes");
  expect_fail("{\"op\":\"file_write_fd\",\"path\":\"data/uploads/y\",\"extra\":1}",
              data_fd("in", "x", 1, O_RDONLY), "extra");
  struct stat st;
  char *out = at(work, "outside/x");
  ok(stat(out, &st) < 0, "nothing was written through the symlink out of the tree");
  free(out);
}

static void test_read_fd(void) {
  size_t big = 5u << 20;          /* beyond file_read_binary's 4 MiB */
  char *b = pattern(big), sha[65];
  sha_hex(b, big, sha);
  put("artifacts/big.bin", b, big);
  rt_reply r = call_fd("{\"op\":\"file_read_fd\",\"path\":\"artifacts/big.bin\"}", data_fd("dl", NULL, 0, O_WRONLY | O_TRUNC));
  json_t *res = rt_result(&r);
  size_t len;
  char *p = at(work, "dl"), *got = read_file(p, &len);
  ok(res && ri(res, "bytes") == (long long)big && !strcmp(rs(res, "sha256"), sha),
     "5 MiB streamed to a data fd with its sha256 (%s)", rt_error(&r));
  ok(got && len == big && !memcmp(got, b, big), "the data fd holds exactly the file");
  free(got); free(p); free(b); rt_free(&r);
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/big.bin\",\"max_bytes\":1000}",
              data_fd("dl", NULL, 0, O_WRONLY | O_TRUNC), "larger than the limit of 1000 bytes");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts\"}", data_fd("dl", NULL, 0, O_WRONLY), "is a directory");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/fifo\"}", data_fd("dl", NULL, 0, O_WRONLY),
              "not a regular file");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/passwd\"}", data_fd("dl", NULL, 0, O_WRONLY), "outside");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/secret\"}", data_fd("dl", NULL, 0, O_WRONLY), ".sandbox");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/none\"}", data_fd("dl", NULL, 0, O_WRONLY), "none");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/big.bin\"}", data_fd("dl", NULL, 0, O_RDONLY),
              "not writable");
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/big.bin\"}", -1, "needs a data fd");
  expect_fail("{\"op\":\"file_read\",\"path\":\"artifacts/big.bin\"}", data_fd("dl", NULL, 0, O_WRONLY),
              "takes no data fd");
  /* the reader goes away: the op fails, the agent lives on */
  int pp[2];
  if (pipe(pp) < 0) exit(1);
  close(pp[0]);
  expect_fail("{\"op\":\"file_read_fd\",\"path\":\"artifacts/big.bin\"}", pp[1], "writing the data fd");
  r = rt_call(&A, "{\"op\":\"ping\"}");
  ok(rt_result(&r) != NULL, "the agent still answers");
  rt_free(&r);
}

/* base64 of n bytes (malloc'd, NUL-terminated) */
static char *b64(const void *d, size_t n) {
  char *out = malloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)out, d, (int)n);
  return out;
}

static void test_binary_fd(void) {
  size_t max = 1000000, len;
  char *b = pattern(max + 1), sha[65], req[512], *text = b64(b, max), *p, *got;
  sha_hex(b, max, sha);
  snprintf(req, sizeof req, "{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\",\"sha256\":\"%s\"}", sha);
  rt_reply r = call_fd(req, data_fd("b64", text, strlen(text), O_RDONLY));
  json_t *res = rt_result(&r);
  ok(res && ri(res, "bytes") == (long long)max && !strcmp(rs(res, "sha256"), sha) && json_object_size(res) == 3,
     "file_write_binary: 1 000 000 bytes whose base64 came in a data fd (%s)", rt_error(&r));
  got = read_file((p = at(root, "data/bin/w.bin")), &len);
  ok(got && len == max && !memcmp(got, b, max), "the file holds exactly the decoded bytes");
  free(got); free(p); free(text); rt_free(&r);
  /* every check of the frame's content holds for the fd's, same messages */
  text = b64(b, max + 1);
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\"}",
              data_fd("b64", text, strlen(text), O_RDONLY), "1000001 bytes, more than 1000000");
  free(text);
  text = malloc(1333341);
  memset(text, 'A', 1333340);
  text[1333340] = '\0';
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\"}",
              data_fd("b64", text, strlen(text), O_RDONLY), "the content is more than 1000000 bytes");
  free(text);
  snprintf(req, sizeof req, "{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\",\"sha256\":\"%064d\"}", 0);
  expect_fail(req, data_fd("b64", "eHl6", 4, O_RDONLY), "does not match the content");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\"}", data_fd("b64", "!!!", 3, O_RDONLY),
              "not valid base64");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\"}", data_fd("b64", "eA==\0", 5, O_RDONLY),
              "must not contain a NUL byte");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\",\"content_base64\":\"eA==\"}",
              data_fd("b64", "eA==", 4, O_RDONLY), "unknown argument 'content_base64'");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"data/bin/w.bin\"}", data_fd("b64", NULL, 0, O_WRONLY),
              "not readable");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"out/x\"}", data_fd("b64", "eA==", 4, O_RDONLY), "outside");
  expect_fail("{\"op\":\"file_write_binary\",\"path\":\"../x\"}", data_fd("b64", "!!!", 3, O_RDONLY), "..");
  got = read_file((p = at(root, "data/bin/w.bin")), &len);
  ok(got && len == max && !memcmp(got, b, max) && dir_has_tmp("data/bin") == 0,
     "refused writes leave the file as it was, and no temporary file");
  free(got); free(p); free(b);
  /* file_read_binary: the bytes to the fd, the result without base64 */
  size_t four = 4u << 20;
  b = pattern(four + 1);
  sha_hex(b, four, sha);
  put("data/four.bin", b, four);
  put("data/over.bin", b, four + 1);
  r = call_fd("{\"op\":\"file_read_binary\",\"path\":\"data/four.bin\"}", data_fd("dl", NULL, 0, O_WRONLY | O_TRUNC));
  res = rt_result(&r);
  got = read_file((p = at(work, "dl")), &len);
  ok(res && ri(res, "bytes") == (long long)four && !strcmp(rs(res, "sha256"), sha) && json_object_size(res) == 3 &&
     got && len == four && !memcmp(got, b, four), "file_read_binary: 4 MiB to a data fd with its sha256 (%s)", rt_error(&r));
  free(got); free(p); free(b); rt_free(&r);
  expect_fail("{\"op\":\"file_read_binary\",\"path\":\"data/over.bin\"}", data_fd("dl", NULL, 0, O_WRONLY),
              "larger than the limit of 4194304 bytes");
  expect_fail("{\"op\":\"file_read_binary\",\"path\":\"artifacts/passwd\"}", data_fd("dl", NULL, 0, O_WRONLY), "outside");
  expect_fail("{\"op\":\"file_read_binary\",\"path\":\"artifacts/secret\"}", data_fd("dl", NULL, 0, O_WRONLY), ".sandbox");
  expect_fail("{\"op\":\"file_read_binary\",\"path\":\"artifacts/fifo\"}", data_fd("dl", NULL, 0, O_WRONLY),
              "not a regular file");
  expect_fail("{\"op\":\"file_read_binary\",\"path\":\"data/four.bin\"}", data_fd("dl", NULL, 0, O_RDONLY),
              "not writable");
  r = rt_call(&A, "{\"op\":\"file_read_binary\",\"path\":\"data/four.bin\"}");
  ok(rt_result(&r) && json_string_length(json_object_get(rt_result(&r), "content_base64")) == 4 * (four / 3 + 1),
     "without a data fd the base64 is in the result as before");
  rt_free(&r);
}

/* The member names of a gzip tar file, joined with ',' (static buffer). */
static const char *members(const char *path) {
  static char out[4096];
  struct archive *a = archive_read_new();
  struct archive_entry *e;
  out[0] = '\0';
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, path, 65536) != ARCHIVE_OK) { archive_read_free(a); return "(bad)"; }
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    if (out[0]) strncat(out, ",", sizeof out - strlen(out) - 1);
    strncat(out, archive_entry_pathname(e), sizeof out - strlen(out) - 1);
  }
  archive_read_free(a);
  return out;
}

static void test_only(void) {
  char *tgz = at(work, "a.tgz");
  rt_reply r = call_fd("{\"op\":\"checkpoint\",\"only\":[\"artifacts\"],\"max_bytes\":67108864}",
                       data_fd("a.tgz", NULL, 0, O_WRONLY | O_TRUNC));
  const char *m = members(tgz);
  ok(rt_result(&r) && !strcmp(m, "artifacts/,artifacts/big.bin,artifacts/passwd,artifacts/secret"),
     "only [artifacts]: exactly artifacts and what is in it, symlinks as symlinks, no FIFO (%s) (%s)", m,
     rt_error(&r));
  rt_free(&r);
  expect_fail("{\"op\":\"checkpoint\",\"only\":[\"artifacts\"],\"max_bytes\":1000}",
              data_fd("a.tgz", NULL, 0, O_WRONLY | O_TRUNC), "max-bytes");
  expect_fail("{\"op\":\"checkpoint\",\"only\":[]}", data_fd("a.tgz", NULL, 0, O_WRONLY), "at least one");
  expect_fail("{\"op\":\"checkpoint\",\"only\":[\"a/b\"]}", data_fd("a.tgz", NULL, 0, O_WRONLY), "without '/'");
  expect_fail("{\"op\":\"checkpoint\",\"only\":\"artifacts\"}", data_fd("a.tgz", NULL, 0, O_WRONLY), "array");
  r = call_fd("{\"op\":\"checkpoint\",\"only\":[\"absent\"]}", data_fd("a.tgz", NULL, 0, O_WRONLY | O_TRUNC));
  ok(rt_result(&r) && ri(rt_result(&r), "files") == 0 && !strcmp(members(tgz), ""),
     "only a missing name: an empty archive");
  rt_free(&r);
  free(tgz);
}

int main(void) {
  agent_locate();
  root = mk_tmp("fdops");
  work = mk_tmp("fdops-work");
  char *p;
  mkdir((p = at(root, "data")), 0755); free(p);
  mkdir((p = at(root, "artifacts")), 0755); free(p);
  mkdir((p = at(root, ".sandbox")), 0700); free(p);
  put(".sandbox/secret", "reserved", 8);
  mkdir((p = at(work, "outside")), 0755); free(p);
  char *target = at(work, "outside");
  symlink(target, (p = at(root, "out"))); free(p); free(target);
  symlink("/etc/passwd", (p = at(root, "artifacts/passwd"))); free(p);
  symlink("../.sandbox/secret", (p = at(root, "artifacts/secret"))); free(p);
  mkfifo((p = at(root, "artifacts/fifo")), 0644); free(p);
  A = rt_start(root, NULL);
  test_write_fd();
  test_write_fd_rules();
  test_read_fd();
  test_binary_fd();
  test_only();
  ok(rt_stop(&A) == 0, "the agent stops cleanly");
  rm_tree(root); rm_tree(work);
  free(root); free(work);
  return tap_done();
}
