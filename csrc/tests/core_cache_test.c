/*
** Cache files: freshness by mtime, the size cap, atomic writes, failures.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "core/cache.h"
#include "tests/tap.h"

static void set_age(const char *path, time_t age) {
  struct utimbuf t;
  t.actime = t.modtime = time(NULL) - age;
  utime(path, &t);
}

/* Entries of dir that are the writer's temporaries (".unsb-*.tmp"). */
static int temporaries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, ".unsb-", 6)) n++;
  if (d) closedir(d);
  return d ? n : -1;
}

int main(void) {
  char root[] = "/tmp/unsb-cache-XXXXXX";
  char path[512], dir[256], msg[512];
  char *data;
  size_t len;
  struct stat st;

  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  snprintf(dir, sizeof dir, "%s/sub", root);
  snprintf(path, sizeof path, "%s/languages.json", dir);

  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_MISSING && !data, "absent file: missing");

  /* write creates the directory (0700) and the file (0600) */
  msg[0] = '\0';
  ok(unsb_cache_write(path, "{\"languages\":[]}", 16, msg, sizeof msg) == 0, "write succeeds %s", msg);
  ok(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "directory created 0700");
  ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "file is 0600");
  ok(temporaries(dir) == 0, "no temporary file left behind");

  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_FRESH, "just written: fresh");
  ok(data && len == 16 && memcmp(data, "{\"languages\":[]}", 16) == 0, "content read back");
  free(data);

  set_age(path, 4000);
  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_STALE, "older than the ttl: stale");
  ok(data && len == 16, "stale content still returned");
  free(data);
  set_age(path, 3000);
  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_FRESH, "younger than the ttl: fresh");
  free(data);
  ok(unsb_cache_read(path, 0, &data, &len) == UNSB_CACHE_STALE, "ttl 0: stale");
  free(data);
  set_age(path, -600);
  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_FRESH, "mtime in the future: fresh");
  free(data);

  /* binary content with NUL bytes survives */
  ok(unsb_cache_write(path, "a\0b", 3, msg, sizeof msg) == 0, "overwrite with binary content");
  ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_FRESH && len == 3 &&
     memcmp(data, "a\0b", 3) == 0, "binary content read back");
  free(data);

  /* the size cap: exactly 1 MiB is fine, one byte more is missing */
  {
    size_t big = UNSB_CACHE_MAX + 1;
    char *buf = malloc(big);
    memset(buf, 'x', big);
    ok(unsb_cache_write(path, buf, UNSB_CACHE_MAX, msg, sizeof msg) == 0, "write 1 MiB");
    ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_FRESH && len == UNSB_CACHE_MAX,
       "1 MiB is read");
    free(data);
    ok(unsb_cache_write(path, buf, big, msg, sizeof msg) == 0, "write 1 MiB + 1");
    ok(unsb_cache_read(path, 3600, &data, &len) == UNSB_CACHE_MISSING && !data,
       "over 1 MiB counts as missing");
    free(buf);
  }

  /* a directory is not a cache file */
  ok(unsb_cache_read(dir, 3600, &data, &len) == UNSB_CACHE_MISSING, "a directory is missing");

  /* failures: message, no exception, no temp file */
  {
    char deep[300], blocker[300];
    snprintf(deep, sizeof deep, "%s/a/b/c.json", root);
    msg[0] = '\0';
    ok(unsb_cache_write(deep, "x", 1, msg, sizeof msg) == -1, "two missing levels: fails");
    ok(strstr(msg, "/a/b") != NULL, "... naming the directory (%s)", msg);
    snprintf(blocker, sizeof blocker, "%s/file", root);
    FILE *f = fopen(blocker, "w");
    fclose(f);
    snprintf(deep, sizeof deep, "%s/file/c.json", root);
    msg[0] = '\0';
    ok(unsb_cache_write(deep, "x", 1, msg, sizeof msg) == -1 && strstr(msg, "not a directory"),
       "parent is a file: fails (%s)", msg);
    unlink(blocker);
    /* the target is a directory: rename fails, the temp file is removed */
    char target[400];
    snprintf(target, sizeof target, "%s/adir", root);
    mkdir(target, 0700);
    msg[0] = '\0';
    ok(unsb_cache_write(target, "x", 1, msg, sizeof msg) == -1 && strstr(msg, "rename"),
       "rename over a directory fails (%s)", msg);
    ok(temporaries(root) == 0, "... and the temporary file is removed");
    rmdir(target);
    if (geteuid() != 0) {
      chmod(dir, 0500);
      ok(unsb_cache_write(path, "x", 1, msg, sizeof msg) == -1, "unwritable directory: fails (%s)", msg);
      chmod(dir, 0700);
    } else {
      /* root writes anywhere; an unwritable place for root is a /proc file's directory */
      ok(unsb_cache_write("/proc/self/unsb-cache.json", "x", 1, msg, sizeof msg) == -1,
         "unwritable directory: fails (%s)", msg);
    }
    ok(unsb_cache_write("", "x", 1, msg, sizeof msg) == -1, "empty path: fails");
  }

  unlink(path);
  rmdir(dir);
  rmdir(root);
  return tap_done();
}
