/*
** The environment and files of a background exec (exec_prep.h).
*/
#include "agent/exec_prep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base64.h"

static int good_name(const char *k) {
  if (!*k || (*k >= '0' && *k <= '9')) return 0;
  for (; *k; k++)
    if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_'))
      return 0;
  return 1;
}

static int check_env(json_t *env, ag_err *e) {
  const char *k;
  json_t *v;
  char shown[AG_SHOW_MAX];
  if (!json_is_object(env)) return ag_fail(e, AG_INVALID, "argument 'env' must be an object");
  if (json_object_size(env) > AG_EXEC_ENV_MAX)
    return ag_fail(e, AG_INVALID, "argument 'env' has more than %d variables", AG_EXEC_ENV_MAX);
  json_object_foreach(env, k, v) {
    if (!good_name(k))
      return ag_fail(e, AG_INVALID, "argument 'env': bad variable name '%s'", ag_show(k, shown, sizeof shown));
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
      return ag_fail(e, AG_INVALID, "argument 'env': the value of '%s' must be a string without NUL",
                     ag_show(k, shown, sizeof shown));
  }
  return 0;
}

static int check_files(json_t *files, ag_err *e) {
  size_t i;
  json_t *f;
  if (!json_is_array(files)) return ag_fail(e, AG_INVALID, "argument 'files' must be an array");
  if (json_array_size(files) > AG_EXEC_FILES_MAX)
    return ag_fail(e, AG_INVALID, "argument 'files' has more than %d files", AG_EXEC_FILES_MAX);
  json_array_foreach(files, i, f) {
    json_t *p = json_object_get(f, "path"), *c = json_object_get(f, "content_base64");
    json_t *m = json_object_get(f, "mode");
    if (!json_is_object(f) || !json_is_string(p) || !json_is_string(c) || json_object_size(f) != 2u + (m != NULL))
      return ag_fail(e, AG_INVALID, "argument 'files' item %zu must be {path, content_base64, mode?}", i);
    const char *path = json_string_value(p);
    if (!*path || strlen(path) != json_string_length(p) || json_string_length(p) >= AG_PATH_MAX ||
        strstr(path, "/../") || !strncmp(path, "../", 3) || !strcmp(path, ".."))
      return ag_fail(e, AG_INVALID, "argument 'files' item %zu: bad path", i);
    if (m && (!json_is_integer(m) || json_integer_value(m) < 0 || json_integer_value(m) > 0777))
      return ag_fail(e, AG_INVALID, "argument 'files' item %zu: mode must be 0..0777", i);
  }
  return 0;
}

int ag_exec_prep_check(json_t *req, ag_err *e) {
  json_t *env = json_object_get(req, "env"), *files = json_object_get(req, "files");
  if (env && check_env(env, e) < 0) return -1;
  if (files && check_files(files, e) < 0) return -1;
  return 0;
}

/* mkdir -p of path's parents, relative to dirfd. */
static void make_parents(int dirfd, const char *path) {
  char buf[AG_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    mkdirat(dirfd, buf, 0755);
    *s = '/';
  }
}

static int write_one(const ag_fs *fs, const char *path, const unsigned char *data, size_t len,
                     mode_t mode, ag_err *e) {
  char shown[AG_SHOW_MAX];
  int dirfd = path[0] == '/' ? AT_FDCWD : fs->root;
  make_parents(dirfd, path);
  unlinkat(dirfd, path, 0);                    /* a new file, not whatever was there */
  int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ag_sysfail(e, "file '%s'", ag_show(path, shown, sizeof shown));
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { close(fd); return ag_sysfail(e, "writing '%s'", ag_show(path, shown, sizeof shown)); }
    done += (size_t)n;
  }
  int rc = fchmod(fd, mode) == 0 ? 0 : ag_sysfail(e, "chmod '%s'", ag_show(path, shown, sizeof shown));
  close(fd);
  return rc;
}

int ag_exec_prep_files(const ag_fs *fs, json_t *req, ag_err *e) {
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(req, "files"), i, f) {
    json_t *c = json_object_get(f, "content_base64"), *m = json_object_get(f, "mode");
    size_t len;
    unsigned char *data = unsb_base64_decode(json_string_value(c), json_string_length(c), &len);
    if (!data) return ag_fail(e, AG_INVALID, "argument 'files' item %zu: content is not base64", i);
    int rc = write_one(fs, json_string_value(json_object_get(f, "path")), data, len,
                       m ? (mode_t)json_integer_value(m) : 0644, e);
    free(data);
    if (rc < 0) return -1;
  }
  return 0;
}

void ag_exec_prep_env(json_t *req) {
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(req, "env"), k, v) setenv(k, json_string_value(v), 1);
}
