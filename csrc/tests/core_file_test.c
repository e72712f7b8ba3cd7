/*
** The whole-file writer (core/file.h): content and mode, atomic
** replacement, a symlink at the name replaced and never followed, a
** directory at the name refused, no temporary left on any failure.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "tests/tap.h"

static int temporaries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, ".unsb-", 6)) n++;
  if (d) closedir(d);
  return d ? n : -1;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  static char buf[256];
  if (!f) return NULL;
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

static void check_failures(const char *root);
static void check_mkdirs(const char *root);

int main(void) {
  char root[] = "/tmp/unsb-file-XXXXXX", path[300], other[300], sub[300];
  const char *step = NULL;
  size_t len;
  struct stat st;
  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  snprintf(path, sizeof path, "%s/out.bin", root);

  umask(022);
  ok(unsb_file_write(path, "a\0b", 3, 0640, UNSB_FILE_FSYNC, &step) == 0, "writes a new file");
  char *got = slurp(path, &len);
  ok(got && len == 3 && !memcmp(got, "a\0b", 3), "binary content kept");
  ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640, "mode as asked");
  ok(unsb_file_write(path, "new", 3, 0600, 0, &step) == 0, "replaces an existing file");
  got = slurp(path, &len);
  ok(got && len == 3 && !memcmp(got, "new", 3), "the new content");
  ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the new file's mode (not patched in place)");
  ok(unsb_file_write(path, "", 0, 0600, 0, &step) == 0 && stat(path, &st) == 0 && st.st_size == 0,
     "an empty file");

  /* a symlink at the name is replaced as an entry, its target untouched */
  snprintf(other, sizeof other, "%s/target", root);
  ok(unsb_file_write(other, "keep", 4, 0600, 0, &step) == 0, "a target file");
  unlink(path);
  ok(symlink(other, path) == 0, "the name is a symlink to it");
  ok(unsb_file_write(path, "over", 4, 0600, 0, &step) == 0, "writing the name succeeds");
  ok(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "... the symlink became a file");
  got = slurp(other, &len);
  ok(got && len == 4 && !memcmp(got, "keep", 4), "... and its old target is unchanged");

  /* a directory at the name: rename fails, nothing is left behind */
  snprintf(sub, sizeof sub, "%s/adir", root);
  mkdir(sub, 0700);
  step = NULL;
  errno = 0;
  ok(unsb_file_write(sub, "x", 1, 0600, 0, &step) == -1 && step && !strcmp(step, "rename"),
     "a directory at the name: fails at rename (%s)", step ? step : "?");
  ok(errno == EISDIR || errno == EEXIST || errno == ENOTEMPTY, "... with errno %d", errno);
  ok(temporaries(root) == 0, "... and no temporary is left");
  rmdir(sub);

  check_failures(root);
  check_mkdirs(root);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  return tap_done();
}

/* Bad places and names, and the owner of a file written as root. */
static void check_failures(const char *root) {
  const char *step = NULL;
  struct stat st;
  step = NULL;
  ok(unsb_file_write("/nonexistent-dir-unsb/x", "x", 1, 0600, 0, &step) == -1 && step &&
     !strcmp(step, "open directory"), "a missing directory: fails (%s)", step ? step : "?");
  ok(unsb_file_write("", "x", 1, 0600, 0, &step) == -1, "an empty path fails");
  int dfd = open(root, O_RDONLY | O_DIRECTORY);
  ok(unsb_file_write_at(dfd, "a/b", "x", 1, 0600, (uid_t)-1, (gid_t)-1, 0, &step) == -1 && errno == EINVAL,
     "write_at refuses a name with '/'");
  ok(unsb_file_write_at(dfd, "", "x", 1, 0600, (uid_t)-1, (gid_t)-1, 0, &step) == -1, "... and an empty one");
  ok(unsb_file_write_at(dfd, "rel", "xy", 2, 0644, (uid_t)-1, (gid_t)-1, 0, &step) == 0,
     "write_at in a directory fd");
  if (geteuid() == 0) {
    ok(unsb_file_write_at(dfd, "owned", "x", 1, 0644, 12345, 23456, 0, &step) == 0, "write_at with an owner");
    ok(fstatat(dfd, "owned", &st, 0) == 0 && st.st_uid == 12345 && st.st_gid == 23456, "... owned by it");
  } else {
    ok(unsb_file_write_at(dfd, "owned", "x", 1, 0644, 12345, 23456, 0, &step) == -1 &&
       !strcmp(step, "chown"), "not root: chown fails");
    ok(temporaries(root) == 0, "... and no temporary is left");
  }
  close(dfd);
  ok(temporaries(root) == 0, "no temporaries at the end");
}

/* mkdir -p: parents made, existing directories fine, a file in the way or
** an overlong path refused with the errno the caller reports. */
static void check_mkdirs(const char *root) {
  char deep[400], file[400], under[420], trail[400];
  struct stat st;
  snprintf(deep, sizeof deep, "%s/m/a/b//c", root);
  ok(unsb_mkdirs(deep, 0755) == 0 && stat(deep, &st) == 0 && S_ISDIR(st.st_mode),
     "mkdirs makes missing parents (a doubled '/' too)");
  ok(unsb_mkdirs(deep, 0755) == 0, "... and an existing directory is fine");
  snprintf(trail, sizeof trail, "%s/m/t/", root);
  ok(unsb_mkdirs(trail, 0755) == 0 && stat(trail, &st) == 0 && S_ISDIR(st.st_mode),
     "a trailing '/' is fine");
  snprintf(file, sizeof file, "%s/m/file", root);
  ok(unsb_file_write(file, "x", 1, 0600, 0, NULL) == 0, "a file");
  errno = 0;
  ok(unsb_mkdirs(file, 0755) == -1 && errno == ENOTDIR, "a file at the name: ENOTDIR (%d)", errno);
  snprintf(under, sizeof under, "%s/sub", file);
  errno = 0;
  ok(unsb_mkdirs(under, 0755) == -1 && errno == ENOTDIR, "a file as a parent: ENOTDIR (%d)", errno);
  errno = 0;
  ok(unsb_mkdirs("", 0755) == -1 && errno == EINVAL, "an empty path: EINVAL");
  ok(unsb_mkdirs(NULL, 0755) == -1 && errno == EINVAL, "no path: EINVAL");
  char *huge = malloc(PATH_MAX + 10);
  if (!huge) { ok(0, "malloc"); return; }
  memset(huge, 'a', PATH_MAX + 9);
  huge[PATH_MAX + 9] = '\0';
  errno = 0;
  ok(unsb_mkdirs(huge, 0755) == -1 && errno == ENAMETOOLONG, "an overlong path: ENAMETOOLONG");
  free(huge);
}
