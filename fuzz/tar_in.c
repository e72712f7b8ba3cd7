/*
** unsandboxd-agent's archive restore (agent/tar_in.c) on any bytes: a
** tar, gzip'd or plain, is extracted into a fresh scratch directory with
** small limits. Whatever the archive claims, nothing may appear outside
** that directory: the harness's root holds a canary sibling that must
** stay untouched, and the scratch directory is removed afterwards.
*/
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/tar.h"

static char root[64], canary[96];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st; (void)flag; (void)f;
  if (remove(path) != 0) { chmod(path, 0700); remove(path); }
  return 0;
}

static void setup(void) {
  snprintf(root, sizeof root, "/tmp/unsb-fuzz-tar-%ld", (long)getpid());
  mkdir(root, 0700);
  snprintf(canary, sizeof canary, "%s/canary", root);
  mkdir(canary, 0700);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!root[0]) setup();
  char dir[128];
  snprintf(dir, sizeof dir, "%s/x", root);
  if (mkdir(dir, 0700) != 0) return 0;
  int in = memfd_create("tar", MFD_CLOEXEC);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (in >= 0 && dfd >= 0 && (size == 0 || write(in, data, size) == (ssize_t)size) &&
      lseek(in, 0, SEEK_SET) == 0) {
    ag_tar_limits lim;
    ag_tar_stats st;
    ag_err e;
    ag_tar_limits_default(&lim);
    lim.max_bytes = 1 << 20;
    lim.max_entries = 2000;
    lim.max_file_bytes = 256 << 10;
    if (ag_tar_extract(in, dfd, &lim, &st, &e) == 0 && st.bytes > lim.max_bytes) abort();
  }
  if (in >= 0) close(in);
  if (dfd >= 0) close(dfd);
  nftw(dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
  /* the canary directory is still there, still empty */
  struct stat cs;
  if (lstat(canary, &cs) != 0 || !S_ISDIR(cs.st_mode) || rmdir(canary) != 0 || mkdir(canary, 0700) != 0)
    abort();
  return 0;
}
