/*
** unsandboxd-agent runtime: framing, ping, the file ops and checkpoint /
** restore, through a socketpair + SCM_RIGHTS client like the server's.
** Each op with good input, each rule of spec §5.6 with bad input, and a
** tree full of traps: symlinks out of the root and into .sandbox, a FIFO,
** a non-UTF-8 file, an oversized sparse file.
*/
#include "tests/tap.h"
#include "tests/agent_util.h"

static char *root;
static agent_rt A;

static char *at(const char *rel) {
  char *p;
  if (asprintf(&p, "%s/%s", root, rel) < 0) exit(1);
  return p;
}

static void put(const char *rel, const char *data) {
  char *p = at(rel);
  write_file(p, data, strlen(data), 0644);
  free(p);
}

static void build(void) {
  char *p;
  mkdir((p = at("src")), 0755); free(p);
  mkdir((p = at("src/deep")), 0755); free(p);
  mkdir((p = at(".sandbox")), 0700); free(p);
  mkdir((p = at("many")), 0755); free(p);
  put("src/main.py", "print('hi')\nprint('bye')\n");
  put("src/deep/util.py", "def f():\n    return 'Needle'\n");
  put("src/deep/notes.txt", "one\ntwo needle\nthree\nfour\nfive\nsix NEEDLE\n");
  put("lines.txt", "1\n2\n3\n4\n5");
  put("empty.txt", "");
  put(".sandbox/secret", "reserved");
  put("latin1.txt", "caf\xe9 needle\n");
  symlink("/etc/passwd", (p = at("link-out"))); free(p);
  symlink("../../../../../../../etc", (p = at("src/link-up"))); free(p);
  symlink("src/main.py", (p = at("link-in"))); free(p);
  symlink(".sandbox/secret", (p = at("link-sb"))); free(p);
  symlink(".sandbox", (p = at("link-sbdir"))); free(p);
  mkfifo((p = at("fifo")), 0644); free(p);
  for (int i = 0; i < 510; i++) {
    char name[32];
    snprintf(name, sizeof name, "many/f%03d", i);
    put(name, "x");
  }
  int fd = open((p = at("huge.txt")), O_WRONLY | O_CREAT, 0644); free(p);
  if (fd < 0 || ftruncate(fd, (17 << 20)) < 0) exit(1);
  close(fd);
}

/* The reply of a request that must fail with kind and a message part. */
static void fails(const char *req, const char *kind, const char *part) {
  rt_reply r = rt_call(&A, req);
  const char *err = rt_error(&r);
  ok(r.final && strncmp(err, kind, strlen(kind)) == 0 && strstr(err, part), "%.100s -> %.300s", req, err);
  rt_free(&r);
}

static json_t *good(const char *req, rt_reply *r) {
  *r = rt_call(&A, req);
  json_t *res = rt_result(r);
  if (!res) printf("# %.100s -> %s\n", req, rt_error(r));
  return res;
}

static void test_protocol(void) {
  rt_reply r;
  json_t *res = good("{\"op\":\"ping\"}", &r);
  ok(res && ri(res, "pid") == A.pid && ri(res, "uid") == (long long)getuid(), "ping answers the agent's pid and uid");
  rt_free(&r);
  fails("{\"op\":\"ping\",\"x\":1}", "invalid", "unknown argument 'x'");
  fails("{\"op\":\"frobnicate\"}", "invalid", "unknown op 'frobnicate'");
  fails("{\"path\":\"a\"}", "invalid", "missing argument 'op'");
  fails("{\"op\":7}", "invalid", "argument 'op' must be a string");
  fails("not json", "invalid", "malformed request frame");
  fails("[1,2]", "invalid", "not a JSON object");
  fails("{\"op\":\"ping\",\"op\":\"ping\"}", "invalid", "malformed request frame");
  /* no newline, then EOF */
  int fd = rt_open(&A, -1);
  char buf[4096];
  size_t n = 0;
  ok(write(fd, "{\"op\":\"ping\"}", 13) == 13 && shutdown(fd, SHUT_WR) == 0, "a frame without newline is sent");
  json_t *f = rt_frame(fd, 10, buf, sizeof buf, &n);
  ok(f && strstr(json_string_value(json_object_get(json_object_get(f, "error"), "message")), "no newline"), "it gets an error final frame");
  json_decref(f); close(fd);
  /* over 8 MiB without a newline */
  size_t big = (8u << 20) + 70000;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  huge[0] = '{';
  rt_reply b = rt_call_raw(&A, huge, big, -1, 30);
  ok(b.final && strstr(rt_error(&b), "larger than 8388608"), "a frame over 8 MiB is refused (%s)", rt_error(&b));
  rt_free(&b); free(huge);
  /* a data fd where none is taken */
  int dfd = open("/dev/null", O_RDONLY);
  rt_reply d = rt_call_raw(&A, "{\"op\":\"ping\"}", strlen("{\"op\":\"ping\"}"), dfd, 10);
  ok(strstr(rt_error(&d), "takes no data fd") != NULL, "a data fd with ping is refused");
  rt_free(&d); close(dfd);
  /* three fds in one message: dropped, and the fds are closed */
  int sv[2], three[3];
  char cbuf[CMSG_SPACE(3 * sizeof(int))];
  struct iovec iov = { "r", 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  three[0] = three[1] = three[2] = sv[1];
  memset(cbuf, 0, sizeof cbuf);
  struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
  cm->cmsg_level = SOL_SOCKET; cm->cmsg_type = SCM_RIGHTS; cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
  memcpy(CMSG_DATA(cm), three, sizeof three);
  ok(sendmsg(A.control, &m, 0) == 1, "a control message with three fds is sent");
  close(sv[1]);
  char one;
  struct pollfd pw = { sv[0], POLLIN, 0 };
  ok(poll(&pw, 1, 5000) == 1 && read(sv[0], &one, 1) == 0, "it is dropped: the agent closed every fd it got");
  close(sv[0]);
  /* a control message without fds is dropped, the agent stays up */
  ok(send(A.control, "x", 1, 0) == 1, "a control message without fds is sent");
  res = good("{\"op\":\"ping\"}", &r);
  ok(res != NULL, "the agent still answers");
  rt_free(&r);
}

static void test_read(void) {
  rt_reply r;
  json_t *res = good("{\"op\":\"file_read\",\"path\":\"src/main.py\"}", &r);
  ok(res && !strcmp(rs(res, "content"), "print('hi')\nprint('bye')\n") && ri(res, "start_line") == 1 &&
     ri(res, "end_line") == 2 && json_is_false(json_object_get(res, "truncated")) &&
     !json_object_get(res, "next_offset") && !strcmp(rs(res, "path"), "src/main.py"), "file_read of a small file");
  rt_free(&r);
  res = good("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"offset\":2,\"limit\":2}", &r);
  ok(res && !strcmp(rs(res, "content"), "2\n3\n") && ri(res, "start_line") == 2 && ri(res, "end_line") == 3 &&
     json_is_true(json_object_get(res, "truncated")) && ri(res, "next_offset") == 4, "offset and limit give a window with next_offset");
  rt_free(&r);
  res = good("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"offset\":5}", &r);
  ok(res && !strcmp(rs(res, "content"), "5") && ri(res, "end_line") == 5 && !json_object_get(res, "next_offset"), "the last line without newline");
  rt_free(&r);
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"offset\":6}", "invalid", "offset 6 is past the end of the file (5 lines)");
  res = good("{\"op\":\"file_read\",\"path\":\"empty.txt\"}", &r);
  ok(res && !strcmp(rs(res, "content"), "") && ri(res, "end_line") == 0, "an empty file reads as no lines");
  rt_free(&r);
  res = good("{\"op\":\"file_read\",\"path\":\"link-in\"}", &r);
  ok(res && strstr(rs(res, "content"), "print('hi')"), "a symlink inside the tree is followed");
  rt_free(&r);

  /* windows: 2000 lines, 8000 characters, an over-long first line */
  char *p = at("long.txt"), *data = malloc(30000);
  size_t o = 0;
  for (int i = 0; i < 2500; i++) o += (size_t)sprintf(data + o, "%d\n", i % 10);
  write_file(p, data, o, 0644);
  res = good("{\"op\":\"file_read\",\"path\":\"long.txt\"}", &r);
  ok(res && ri(res, "end_line") == 2000 && ri(res, "next_offset") == 2001, "at most 2000 lines");
  rt_free(&r);
  o = 0;
  for (int i = 0; i < 100; i++) { memset(data + o, 'a', 99); o += 99; data[o++] = '\n'; }
  write_file(p, data, o, 0644);
  res = good("{\"op\":\"file_read\",\"path\":\"long.txt\"}", &r);
  ok(res && ri(res, "end_line") == 80 && strlen(rs(res, "content")) == 8000 && ri(res, "next_offset") == 81, "at most 8000 characters (%lld lines)", res ? ri(res, "end_line") : -1);
  rt_free(&r);
  /* 9000 two-byte characters on line 1 */
  o = 0;
  for (int i = 0; i < 9000; i++) { data[o++] = (char)0xc3; data[o++] = (char)0xa9; }
  memcpy(data + o, "\nnext\n", 6); o += 6;
  write_file(p, data, o, 0644);
  res = good("{\"op\":\"file_read\",\"path\":\"long.txt\"}", &r);
  ok(res && ri(res, "clipped_line") == 1 && ri(res, "clipped_length") == 9000 && strlen(rs(res, "content")) == 16000 &&
     ri(res, "next_offset") == 2 && json_is_true(json_object_get(res, "truncated")), "an over-long first line is cut at 8000 characters");
  rt_free(&r);
  free(data); free(p);
}

static void test_read_rules(void) {
  rt_reply r;
  json_t *res;
  fails("{\"op\":\"file_read\",\"path\":\"latin1.txt\"}", "invalid", "is not UTF-8 text");
  fails("{\"op\":\"file_read\",\"path\":\"huge.txt\"}", "invalid", "larger than the limit of 16777216 bytes");
  fails("{\"op\":\"file_read\",\"path\":\"src\"}", "invalid", "is a directory");
  double t0 = now_s();
  fails("{\"op\":\"file_read\",\"path\":\"fifo\"}", "invalid", "path 'fifo': is not a regular file");
  ok(now_s() - t0 < 5, "a FIFO does not block file_read");
  fails("{\"op\":\"file_read\",\"path\":\"nope\"}", "invalid", "path 'nope': does not exist");
  fails("{\"op\":\"file_read\"}", "invalid", "missing argument 'path'");
  fails("{\"op\":\"file_read\",\"path\":5}", "invalid", "argument 'path' must be a string");
  fails("{\"op\":\"file_read\",\"path\":\"\"}", "invalid", "must name a file");
  fails("{\"op\":\"file_read\",\"path\":\"/etc/passwd\"}", "invalid", "not absolute");
  fails("{\"op\":\"file_read\",\"path\":\"../etc/passwd\"}", "invalid", "'..' components are not allowed");
  fails("{\"op\":\"file_read\",\"path\":\"src/../lines.txt\"}", "invalid", "'..' components are not allowed");
  fails("{\"op\":\"file_read\",\"path\":\"a\\u0000b\"}", "invalid", "NUL");
  fails("{\"op\":\"file_read\",\"path\":\".sandbox/secret\"}", "invalid", ".sandbox is reserved");
  fails("{\"op\":\"file_read\",\"path\":\"./.sandbox//secret\"}", "invalid", ".sandbox is reserved");
  fails("{\"op\":\"file_read\",\"path\":\"link-sb\"}", "invalid", "resolves into .sandbox");
  fails("{\"op\":\"file_read\",\"path\":\"link-out\"}", "invalid", "resolves outside the workspace");
  fails("{\"op\":\"file_read\",\"path\":\"src/link-up/passwd\"}", "invalid", "resolves outside the workspace");
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"offset\":0}", "invalid", "argument 'offset' must be between 1");
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"offset\":\"2\"}", "invalid", "argument 'offset' must be an integer");
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"limit\":-1}", "invalid", "argument 'limit' must be between 0");
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"limit\":1.5}", "invalid", "argument 'limit' must be an integer");
  fails("{\"op\":\"file_read\",\"path\":\"lines.txt\",\"mode\":\"x\"}", "invalid", "unknown argument 'mode'");

  res = good("{\"op\":\"file_read_binary\",\"path\":\"latin1.txt\"}", &r);
  ok(res && ri(res, "bytes") == 12 && !strcmp(rs(res, "content_base64"), "Y2Fm6SBuZWVkbGUK") &&
     !strcmp(rs(res, "sha256"), "ae8d82d27fedd6732dc4270bf7ad7ce0a2689c7fd44dc848aa83220b82917f52"),
     "file_read_binary gives bytes, base64 and sha256");
  rt_free(&r);
  fails("{\"op\":\"file_read_binary\",\"path\":\"huge.txt\"}", "invalid", "larger than the limit of 4194304 bytes");
  fails("{\"op\":\"file_read_binary\",\"path\":\"link-out\"}", "invalid", "resolves outside");
  fails("{\"op\":\"file_read_binary\",\"path\":\"fifo\"}", "invalid", "not a regular file");
}

static void test_list_glob(void) {
  rt_reply r;
  json_t *res = good("{\"op\":\"file_list\",\"path\":\"\"}", &r);
  json_t *ents = res ? json_object_get(res, "entries") : NULL;
  int hidden = 1, sorted = 1, types = 0;
  for (size_t i = 0; ents && i < json_array_size(ents); i++) {
    json_t *e = json_array_get(ents, i);
    if (!strcmp(rs(e, "name"), ".sandbox")) hidden = 0;
    if (i && strcmp(rs(json_array_get(ents, i - 1), "name"), rs(e, "name")) >= 0) sorted = 0;
    if (!strcmp(rs(e, "name"), "src") && !strcmp(rs(e, "type"), "directory")) types++;
    if (!strcmp(rs(e, "name"), "lines.txt") && !strcmp(rs(e, "type"), "file")) types++;
    if (!strcmp(rs(e, "name"), "fifo") && !strcmp(rs(e, "type"), "other")) types++;
    if (!strcmp(rs(e, "name"), "link-out") && !strcmp(rs(e, "type"), "other")) types++;
  }
  ok(ents && hidden && sorted && types == 4 && json_is_false(json_object_get(res, "truncated")),
     "file_list of the root: sorted, typed, .sandbox hidden");
  rt_free(&r);
  res = good("{\"op\":\"file_list\"}", &r);
  ok(res && !strcmp(rs(res, "path"), "."), "file_list without path lists the root");
  rt_free(&r);
  res = good("{\"op\":\"file_list\",\"path\":\"many\"}", &r);
  ok(res && json_array_size(json_object_get(res, "entries")) == 500 && json_is_true(json_object_get(res, "truncated")), "at most 500 entries");
  rt_free(&r);
  fails("{\"op\":\"file_list\",\"path\":\"lines.txt\"}", "invalid", "is not a directory");
  fails("{\"op\":\"file_list\",\"path\":\"link-sbdir\"}", "invalid", "resolves into .sandbox");
  fails("{\"op\":\"file_list\",\"path\":\"src/link-up\"}", "invalid", "resolves outside");
  fails("{\"op\":\"file_list\",\"path\":\"/\"}", "invalid", "not absolute");
}

static void test_glob(void) {
  rt_reply r;
  json_t *res;

  /* newest first: touch util.py into the future */
  char *p = at("src/deep/util.py");
  struct timespec t[2] = { { 2000000000, 0 }, { 2000000000, 0 } };
  utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW);
  free(p);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"*.py\"}", &r);
  json_t *m = res ? json_object_get(res, "matches") : NULL;
  ok(m && json_array_size(m) == 2 && !strcmp(json_string_value(json_array_get(m, 0)), "src/deep/util.py") &&
     !strcmp(json_string_value(json_array_get(m, 1)), "src/main.py") && ri(res, "total") == 2 && ri(res, "scanned") > 500,
     "a pattern without '/' matches at any depth, newest first");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"src/*.py\"}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 1, "'*' stays within a segment");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"src/**/*.txt\"}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 1, "'**' crosses segments");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"path\":\"src\",\"pattern\":\"deep/?til.py\"}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 1 &&
     !strcmp(json_string_value(json_array_get(json_object_get(res, "matches"), 0)), "src/deep/util.py"), "patterns are relative to path, results to the root");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"many/*\",\"limit\":7}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 7 && ri(res, "total") == 510 &&
     json_is_true(json_object_get(res, "truncated")) && !strcmp(rs(res, "truncated_reason"), "limit"), "limit cuts and says so");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"many/*\",\"limit\":1000}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 200, "at most 200 matches");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"secret\"}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 0 && json_is_null(json_object_get(res, "truncated_reason")), ".sandbox is not searched");
  rt_free(&r);
  res = good("{\"op\":\"file_glob\",\"pattern\":\"passwd\"}", &r);
  ok(res && json_array_size(json_object_get(res, "matches")) == 0, "symlinked directories are not descended");
  rt_free(&r);
  char longpat[260];
  memset(longpat, 'a', 201); longpat[201] = '\0';
  char req[400];
  snprintf(req, sizeof req, "{\"op\":\"file_glob\",\"pattern\":\"%s\"}", longpat);
  fails(req, "invalid", "longer than 200 characters");
  fails("{\"op\":\"file_glob\",\"pattern\":\"\"}", "invalid", "argument 'pattern' must not be empty");
  fails("{\"op\":\"file_glob\",\"pattern\":\"../*\"}", "invalid", "must not contain '..'");
  fails("{\"op\":\"file_glob\",\"pattern\":\"/etc/*\"}", "invalid", "not absolute");
  fails("{\"op\":\"file_glob\"}", "invalid", "missing argument 'pattern'");
  fails("{\"op\":\"file_glob\",\"pattern\":\"*\",\"path\":\".sandbox\"}", "invalid", ".sandbox is reserved");
  fails("{\"op\":\"file_glob\",\"pattern\":\"*\",\"limit\":-3}", "invalid", "argument 'limit'");
}

static void test_grep(void) {
  rt_reply r;
  json_t *res = good("{\"op\":\"file_grep\",\"pattern\":\"needle\"}", &r);
  json_t *files = res ? json_object_get(res, "files") : NULL;
  ok(files && json_array_size(files) == 1 && !strcmp(json_string_value(json_array_get(files, 0)), "src/deep/notes.txt") &&
     ri(res, "file_count") == 1 && ri(res, "match_count") == 1 && !strcmp(rs(res, "mode"), "files_with_matches"),
     "literal grep; the non-UTF-8 file and .sandbox are skipped");
  rt_free(&r);
  res = good("{\"op\":\"file_grep\",\"pattern\":\"needle\",\"case_insensitive\":true,\"mode\":\"count\"}", &r);
  files = res ? json_object_get(res, "files") : NULL;
  ok(files && json_array_size(files) == 2 && ri(res, "match_count") == 3 &&
     ri(json_array_get(files, 0), "count") == 2 && !strcmp(rs(json_array_get(files, 1), "path"), "src/deep/util.py"),
     "case-insensitive count mode");
  rt_free(&r);
  res = good("{\"op\":\"file_grep\",\"pattern\":\"t[wh]\",\"regex\":true,\"mode\":\"content\",\"context\":1,\"glob\":\"*.txt\"}", &r);
  files = res ? json_object_get(res, "files") : NULL;
  json_t *lines = files ? json_object_get(json_array_get(files, 0), "lines") : NULL;
  ok(lines && json_array_size(lines) == 4 && ri(json_array_get(lines, 0), "line") == 1 &&
     json_is_false(json_object_get(json_array_get(lines, 0), "match")) &&
     !strcmp(rs(json_array_get(lines, 1), "text"), "two needle") && json_is_true(json_object_get(json_array_get(lines, 1), "match")) &&
     ri(json_array_get(lines, 3), "line") == 4, "regex content mode with context lines");
  rt_free(&r);
  res = good("{\"op\":\"file_grep\",\"pattern\":\"print\",\"glob\":\"*.txt\"}", &r);
  ok(res && ri(res, "file_count") == 0, "glob filters the files");
  rt_free(&r);
  res = good("{\"op\":\"file_grep\",\"pattern\":\"x\",\"path\":\"many\",\"limit\":3}", &r);
  ok(res && ri(res, "file_count") == 3 && !strcmp(rs(res, "truncated_reason"), "limit"), "limit on files");
  rt_free(&r);
  /* a 1.5 MB file is skipped */
  char *p = at("src/big.txt"), *big = malloc(1500000);
  memset(big, 'n', 1500000); memcpy(big + 10, "needle", 6);
  write_file(p, big, 1500000, 0644);
  res = good("{\"op\":\"file_grep\",\"pattern\":\"needle\",\"path\":\"src\"}", &r);
  ok(res && ri(res, "file_count") == 1, "files over 1 MB are skipped");
  rt_free(&r);
  unlink(p); free(p); free(big);
  fails("{\"op\":\"file_grep\",\"pattern\":\"(\",\"regex\":true}", "invalid", "not a valid POSIX extended regular expression");
  fails("{\"op\":\"file_grep\",\"pattern\":\"x\",\"mode\":\"lines\"}", "invalid", "argument 'mode' must be");
  fails("{\"op\":\"file_grep\",\"pattern\":\"x\",\"context\":6}", "invalid", "argument 'context' must be between 0 and 5");
  fails("{\"op\":\"file_grep\",\"pattern\":\"\"}", "invalid", "must not be empty");
  fails("{\"op\":\"file_grep\",\"pattern\":\"x\",\"regex\":\"yes\"}", "invalid", "argument 'regex' must be a boolean");
  fails("{\"op\":\"file_grep\",\"pattern\":\"x\",\"path\":\"link-out\"}", "invalid", "resolves outside");
}

static void test_write(void) {
  rt_reply r;
  struct stat st;
  char *p;
  json_t *res = good("{\"op\":\"file_write\",\"path\":\"new/dir/h\\u00e9llo.txt\",\"content\":\"h\\u00e9llo\"}", &r);
  ok(res && ri(res, "chars") == 5 && ri(res, "bytes") == 6, "file_write creates parents, counts chars and bytes");
  rt_free(&r);
  size_t len;
  char *c = read_file((p = at("new/dir/h\xc3\xa9llo.txt")), &len); free(p);
  ok(c && len == 6 && !memcmp(c, "h\xc3\xa9llo", 6), "the bytes are on disk");
  free(c);
  chmod((p = at("lines.txt")), 0600);
  res = good("{\"op\":\"file_write\",\"path\":\"lines.txt\",\"content\":\"new\"}", &r);
  ok(res && stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "overwriting keeps the mode");
  rt_free(&r); free(p);
  res = good("{\"op\":\"file_write\",\"path\":\"link-in\",\"content\":\"via link\"}", &r);
  c = read_file((p = at("src/main.py")), NULL); free(p);
  p = at("link-in");
  ok(res && c && !strcmp(c, "via link") && lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "a symlink inside is written through");
  free(c); free(p); rt_free(&r);
  DIR *d = opendir(root);
  struct dirent *de;
  int temps = 0;
  while (d && (de = readdir(d))) if (strstr(de->d_name, ".agent-")) temps++;
  if (d) closedir(d);
  ok(temps == 0, "no temporary files are left");
  fails("{\"op\":\"file_write\",\"path\":\"link-out\",\"content\":\"x\"}", "invalid", "resolves outside");
  fails("{\"op\":\"file_write\",\"path\":\"src/link-up/pwned\",\"content\":\"x\"}", "invalid", "resolves outside");
  fails("{\"op\":\"file_write\",\"path\":\".sandbox/x\",\"content\":\"x\"}", "invalid", ".sandbox is reserved");
  fails("{\"op\":\"file_write\",\"path\":\"link-sbdir/x\",\"content\":\"x\"}", "invalid", "resolves into .sandbox");
  fails("{\"op\":\"file_write\",\"path\":\"link-sb\",\"content\":\"x\"}", "invalid", "resolves into .sandbox");
  fails("{\"op\":\"file_write\",\"path\":\"link-sbdir/new/x\",\"content\":\"x\"}", "invalid", "resolves into .sandbox");
  p = at(".sandbox/new");
  ok(lstat(p, &st) < 0, "and nothing is created inside .sandbox on the way");
  free(p);
  fails("{\"op\":\"file_write\",\"path\":\"src\",\"content\":\"x\"}", "invalid", "is a directory");
  fails("{\"op\":\"file_write\",\"path\":\"fifo\",\"content\":\"x\"}", "invalid", "not a regular file");
  fails("{\"op\":\"file_write\",\"path\":\"lines.txt/x\",\"content\":\"x\"}", "invalid", "path 'lines.txt/x'");
  fails("{\"op\":\"file_write\",\"path\":\"x\"}", "invalid", "missing argument 'content'");
  fails("{\"op\":\"file_write\",\"path\":\"x\",\"content\":null}", "invalid", "argument 'content' must be a string");
  ok(lstat("/etc/pwned", &st) < 0, "nothing was written outside");
}

static void test_write_binary_edit(void) {
  rt_reply r;
  struct stat st;
  size_t len;
  char *p, *c;
  json_t *res;
  char *big = malloc(1000100), *req = malloc(1000200);
  memset(big, 'a', 1000001); big[1000001] = '\0';
  snprintf(req, 1000200, "{\"op\":\"file_write\",\"path\":\"big\",\"content\":\"%s\"}", big);
  fails(req, "invalid", "more than 1000000");
  big[1000000] = '\0';
  snprintf(req, 1000200, "{\"op\":\"file_write\",\"path\":\"big\",\"content\":\"%s\"}", big);
  res = good(req, &r);
  ok(res && ri(res, "bytes") == 1000000, "exactly 1 000 000 bytes is accepted");
  rt_free(&r); free(big); free(req);

  res = good("{\"op\":\"file_write_binary\",\"path\":\"bin/x.bin\",\"content_base64\":\"AAEC/w==\",\"sha256\":\"3D4F57E8DB8BC3B0E07D0D2C6A0C98F64BB8E1A14EF1DA6C0E9F0AE35CA0DE2B\"}", &r);
  ok(!res, "a wrong sha256 is refused");
  p = at("bin/x.bin");
  ok(strstr(rt_error(&r), "does not match") != NULL && stat(p, &st) < 0, "and nothing is written");
  free(p);
  rt_free(&r);
  res = good("{\"op\":\"file_write_binary\",\"path\":\"bin/x.bin\",\"content_base64\":\"AAEC/w==\"}", &r);
  char sha[65] = "";
  if (res) snprintf(sha, sizeof sha, "%s", rs(res, "sha256"));
  ok(res && ri(res, "bytes") == 4 && strlen(sha) == 64, "file_write_binary writes and reports sha256");
  rt_free(&r);
  c = read_file((p = at("bin/x.bin")), &len); free(p);
  ok(c && len == 4 && !memcmp(c, "\x00\x01\x02\xff", 4), "the binary bytes are on disk");
  free(c);
  char req2[300];
  snprintf(req2, sizeof req2, "{\"op\":\"file_write_binary\",\"path\":\"bin/y.bin\",\"content_base64\":\"AAEC/w==\",\"sha256\":\"%s\"}", sha);
  res = good(req2, &r);
  ok(res != NULL, "a matching sha256 is accepted");
  rt_free(&r);
  fails("{\"op\":\"file_write_binary\",\"path\":\"b\",\"content_base64\":\"@@@@\"}", "invalid", "not valid base64");
  fails("{\"op\":\"file_write_binary\",\"path\":\"b\",\"content_base64\":\"AA==\",\"sha256\":\"xyz\"}", "invalid", "64 hexadecimal digits");

  res = good("{\"op\":\"file_edit\",\"path\":\"src/deep/util.py\",\"old\":\"Needle\",\"new\":\"Pin\"}", &r);
  c = read_file((p = at("src/deep/util.py")), NULL); free(p);
  ok(res && ri(res, "replacements") == 1 && c && strstr(c, "'Pin'"), "file_edit replaces the one occurrence");
  free(c); rt_free(&r);
  fails("{\"op\":\"file_edit\",\"path\":\"src/deep/util.py\",\"old\":\"absent\",\"new\":\"x\"}", "invalid", "old string was not found");
  fails("{\"op\":\"file_edit\",\"path\":\"src/deep/notes.txt\",\"old\":\"o\",\"new\":\"x\"}", "invalid", "occurs 3 times");
  fails("{\"op\":\"file_edit\",\"path\":\"src/deep/util.py\",\"old\":\"\",\"new\":\"x\"}", "invalid", "argument 'old' must not be empty");
  fails("{\"op\":\"file_edit\",\"path\":\"latin1.txt\",\"old\":\"needle\",\"new\":\"x\"}", "invalid", "not UTF-8");
  fails("{\"op\":\"file_edit\",\"path\":\"link-sb\",\"old\":\"r\",\"new\":\"x\"}", "invalid", "resolves into .sandbox");
}

static void test_checkpoint(void) {
  char *work = mk_tmp("ckpt"), *tgz, *p;
  rt_reply r;
  struct stat st;
  if (asprintf(&tgz, "%s/c.tgz", work) < 0) exit(1);
  int out = open(tgz, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  r = rt_call_raw(&A, "{\"op\":\"checkpoint\",\"exclude\":[\".sandbox\",\"many\"]}", strlen("{\"op\":\"checkpoint\",\"exclude\":[\".sandbox\",\"many\"]}"), out, 60);
  close(out);
  json_t *res = rt_result(&r);
  size_t len;
  char *data = read_file(tgz, &len), sha[65];
  EVP_Q_digest(NULL, "SHA256", NULL, data, len, (unsigned char *)sha, NULL);
  char hex[65];
  for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", (unsigned char)sha[i]);
  ok(res && ri(res, "bytes") == (long long)len && !strcmp(rs(res, "sha256"), hex) && ri(res, "files") > 5,
     "checkpoint writes the archive to the data fd and reports bytes, sha256, files (%s)", rt_error(&r));
  free(data); rt_free(&r);
  /* change the tree, then restore */
  put("src/main.py", "changed");
  put("added.txt", "new");
  rm_tree((p = at("src/deep"))); free(p);
  int in = open(tgz, O_RDONLY | O_CLOEXEC);
  r = rt_call_raw(&A, "{\"op\":\"restore\"}", strlen("{\"op\":\"restore\"}"), in, 60);
  close(in);
  res = rt_result(&r);
  char *c = read_file((p = at("src/deep/util.py")), NULL); free(p);
  char *added = at("added.txt"), *secret = at(".sandbox/secret"), *many = at("many");
  ok(res && ri(res, "files") > 5 && c && strstr(c, "'Pin'") && stat(added, &st) < 0 &&
     stat(secret, &st) == 0 && stat(many, &st) < 0, "restore brings the tree back and keeps .sandbox (%s)", rt_error(&r));
  free(c); free(added); free(secret); free(many); rt_free(&r);
  /* a hostile archive leaves the tree as it was */
  member bad[] = { { "ok.txt", 'f', "fine", 0, 0 }, { "../escape", 'f', "x", 0, 0 } };
  make_tgz(tgz, bad, 2);
  in = open(tgz, O_RDONLY | O_CLOEXEC);
  r = rt_call_raw(&A, "{\"op\":\"restore\"}", strlen("{\"op\":\"restore\"}"), in, 60);
  close(in);
  p = at("ok.txt");
  char *q = at("src/main.py");
  ok(strstr(rt_error(&r), "invalid: member '../escape'") != NULL && stat(p, &st) < 0 &&
     stat(q, &st) == 0, "a hostile archive is refused and the tree is unchanged (%s)", rt_error(&r));
  free(p); free(q); rt_free(&r);
  char *sbdir = at(".sandbox");
  DIR *d = opendir(sbdir);
  free(sbdir);
  struct dirent *de;
  int leftovers = 0;
  while (d && (de = readdir(d))) if (!strncmp(de->d_name, "restore-", 8)) leftovers++;
  if (d) closedir(d);
  ok(leftovers == 0, "no restore directory is left in .sandbox");
  r = rt_call(&A, "{\"op\":\"restore\"}");
  ok(strstr(rt_error(&r), "needs a data fd") != NULL, "restore without a data fd is refused");
  rt_free(&r);
  in = open(tgz, O_RDONLY | O_CLOEXEC);
  r = rt_call_raw(&A, "{\"op\":\"checkpoint\"}", strlen("{\"op\":\"checkpoint\"}"), in, 60);
  ok(strstr(rt_error(&r), "not writable") != NULL, "checkpoint to a read-only fd is refused");
  rt_free(&r); close(in);
  in = open(tgz, O_WRONLY | O_CLOEXEC);
  r = rt_call_raw(&A, "{\"op\":\"checkpoint\",\"exclude\":\"x\"}", strlen("{\"op\":\"checkpoint\",\"exclude\":\"x\"}"), in, 60);
  ok(strstr(rt_error(&r), "argument 'exclude'") != NULL, "a bad exclude is refused");
  rt_free(&r); close(in);
  rm_tree(work); free(work); free(tgz);
}

int main(void) {
  agent_locate();
  root = mk_tmp("files");
  build();
  A = rt_start(root, NULL);
  test_protocol();
  test_read();
  test_read_rules();
  test_list_glob();
  test_glob();
  test_grep();
  test_write();
  test_write_binary_edit();
  test_checkpoint();
  ok(rt_stop(&A) == 0, "EOF on the control socket stops the agent with status 0");
  rm_tree(root);
  free(root);
  return tap_done();
}
