/*
** The binary file routes' content beside the agent's frame (see files.h):
** a write-binary body's content_base64 text is handed to the agent in a
** memfd, and read-binary's bytes come back in one, so megabytes are never
** encoded into a JSON frame, parsed out of it, and encoded again. The
** agent still does all the file work and every check, in the same order
** and with the same messages as with the content in the frame.
**
** The agent is untrusted: it holds the memfd too and may resize or
** rewrite it at any time. So the server never maps it (a shrink would be
** a SIGBUS here); it answers only when the file's size is the byte count
** the agent reported and within the route's limit, and then streams the
** reply from it (b64_body.h), cut should the agent shrink it meanwhile.
*/
#include "server/cp/workspaces/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/jsonw.h"
#include "server/cp/b64_body.h"

/* A memfd holding len bytes of data (data NULL: empty), at offset 0; -1
** with err. */
static int body_fd(const char *data, size_t len, char *err, size_t errlen) {
  int fd = memfd_create("unsandboxd-file-body", MFD_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot make a body file: %s", strerror(errno));
    return -1;
  }
  for (size_t done = 0; done < len;) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      snprintf(err, errlen, "cannot fill a body file: %s", n < 0 ? strerror(errno) : "short write");
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    snprintf(err, errlen, "cannot rewind a body file: %s", strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

/* write-binary: content_base64 (a string without NUL: anything else goes
** in the frame, for the agent to refuse by name) moves out of req into a
** memfd. Returns the fd, -1 when the content stays in the frame, or -2
** with err. */
static int write_body_fd(json_t *req, char *err, size_t errlen) {
  json_t *b64 = json_object_get(req, "content_base64");
  const char *s = json_string_value(b64);
  if (!s || strlen(s) != json_string_length(b64)) return -1;
  int fd = body_fd(s, json_string_length(b64), err, errlen);
  if (fd < 0) return -2;
  json_object_del(req, "content_base64");
  return fd;
}

/* The reply of a read-binary call whose answer is res and whose bytes are
** in fd (taken): 0, or -1 with err when the answer does not hold together
** (its size must be the bytes the agent reported, at most the limit). */
static int read_reply(ux_cp_call *c, const json_t *res, int fd, char *err, size_t errlen) {
  json_t *path = json_object_get(res, "path"), *bytes = json_object_get(res, "bytes");
  const char *sha = json_string_value(json_object_get(res, "sha256"));
  struct stat st;
  if (!json_is_string(path) || !json_is_integer(bytes) || !sha || strlen(sha) != 64 ||
      json_object_size(res) != 3 || fstat(fd, &st) != 0 || json_integer_value(bytes) < 0 ||
      json_integer_value(bytes) > UX_FILES_BINARY_READ_MAX || st.st_size != json_integer_value(bytes)) {
    snprintf(err, errlen, "the runtime's agent gave a malformed read-binary answer");
    close(fd);
    return -1;
  }
  ux_jw w;
  ux_jw_init(&w);
  ux_jw_open(&w, '{');
  ux_jw_key(&w, "path");
  ux_jw_str(&w, json_string_value(path), json_string_length(path));
  ux_jw_key(&w, "bytes");
  ux_jw_int(&w, (long long)st.st_size);
  ux_jw_key(&w, "sha256");
  ux_jw_str(&w, sha, 64);
  ux_jw_key(&w, "content_base64");
  ux_jw_raw_value(&w, "\"", 1);            /* the string opens here; its bytes stream */
  size_t head_len, tail_len;
  char *head = ux_jw_take(&w, &head_len);
  ux_jw_init(&w);
  ux_jw_raw_value(&w, "\",\"workspace_id\":", 17);
  ux_jw_cstr(&w, c->param[0]);
  ux_jw_raw_value(&w, "}", 1);
  char *tail = ux_jw_take(&w, &tail_len);
  ux_b64_body *b = ux_b64_body_new(fd, (unsigned long long)st.st_size, head, head_len, tail, tail_len);
  if (ux_reply_source(c->r, 200, UX_CP_JSON, ux_b64_body_length(b), ux_b64_body_read, ux_b64_body_free, b) == 0)
    return 0;
  snprintf(err, errlen, "cannot stream the read-binary reply");   /* the body's freer has run */
  return -1;
}

int ux_files_binary_call(ux_cp_call *c, ux_rt *rt, const char *route, json_t *req, char *err, size_t errlen) {
  int reading = !strcmp(route, "read-binary");
  int fd = reading ? body_fd(NULL, 0, err, errlen) : write_body_fd(req, err, errlen);
  if (fd < -1 || (reading && fd < 0)) return ux_cp_fail(c, 500, "%s", err);
  json_t *res = NULL;
  int rc = ux_files_call(rt, req, fd, &res, err, errlen);
  if (rc != UX_RTC_OK || !reading) {
    if (fd >= 0) close(fd);
    return ux_files_answer(c, rc, res, err);
  }
  if (read_reply(c, res, fd, err, errlen) == 0) { json_decref(res); return 0; }
  json_decref(res);
  return ux_files_answer(c, UX_RTC_GONE, NULL, err);
}
