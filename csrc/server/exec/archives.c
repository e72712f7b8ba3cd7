/*
** Archives in the data directory and restores from them, within the
** ledger (archives.h). Root only ever handles the archive file: the
** agent makes and unpacks it inside a sandbox (sandbox/archive.h). The
** archive is bounded by the kernel (the agent's RLIMIT_FSIZE is what was
** reserved), so no archive grows past its reservation whatever the tree
** holds.
*/
#include "server/exec/archives.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/exec/routes.h"
#include "server/ids.h"
#include "server/sandbox/archive.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"
#include "server/server.h"

/* A tar entry's header, a long name's extra header and the padding of
** its content come to at most this much beyond the content itself. */
#define ENTRY_BYTES 2048
#define SLACK (1ull << 20)

void ux_hold_init(ux_hold *h, ux_req *r, ux_ledger_kind kind, const char *table, const char *id) {
  memset(h, 0, sizeof *h);
  h->st = r->srv->store;
  h->kind = kind;
  ux_ledger_key(h->party, sizeof h->party, r->owner);
  ux_ledger_item(h->item, sizeof h->item, table, id);
}

int ux_reply_hold(ux_req *r, const ux_hold *h) {
  return ux_reply_storage(r, h->refusal, h->wanted);
}

/* Reserves (first) or adds to (later) h's item up to `total` bytes:
** 0, or -3 refused. */
static int hold_to(ux_hold *h, unsigned long long *have, unsigned long long total) {
  int rc = *have ? ux_ledger_grow(h->st, h->item, total - *have)
                 : ux_ledger_reserve(h->st, h->party, h->kind, h->item, total);
  if (rc == UX_LEDGER_OK) { *have = total; return 0; }
  h->refusal = rc == UX_LEDGER_ERROR || rc == UX_LEDGER_EXISTS ? UX_LEDGER_ERROR : rc;
  h->wanted = total;
  return -3;
}

/* The archive of the frozen volume root: a likely size (its used blocks
** and inodes: gzip of a tar holds no more than the files' blocks and a
** header each) and the most it can be (everything the volume can hold). */
static void archive_bounds(int root, unsigned long long *likely, unsigned long long *most) {
  struct statvfs fs;
  unsigned long long disk = ux_volume_disk_bytes() ? ux_volume_disk_bytes() : 1ull << 32;
  *most = disk + disk / 8 + SLACK;
  *likely = *most;
  if (!ux_volume_charge() || fstatvfs(root, &fs) != 0) return;   /* plain: no volume to ask */
  unsigned long long used = (unsigned long long)(fs.f_blocks - fs.f_bfree) * fs.f_frsize;
  *likely = used + (unsigned long long)(fs.f_files - fs.f_ffree) * ENTRY_BYTES + disk / 256 + SLACK;
  *most = disk + (unsigned long long)fs.f_files * ENTRY_BYTES + SLACK;
  if (*likely > *most) *likely = *most;
}

/* One try at the archive into the open file out, at most limit bytes:
** 0; -1 with err; 1 when it outgrew limit. */
static int archive_once(int root, int out, unsigned long long limit, char *err, size_t errlen) {
  if (ftruncate(out, 0) != 0 || lseek(out, 0, SEEK_SET) != 0) {
    snprintf(err, errlen, "cannot reset the archive: %s", strerror(errno));
    return -1;
  }
  int rc = ux_archive_tree(root, out, NULL, limit, err, errlen);
  struct stat st;
  if (rc != 0 && fstat(out, &st) == 0 && (unsigned long long)st.st_size >= limit) return 1;
  return rc;
}

/* The archive of the frozen volume root into out, within h: 0, -1, -3. */
static int archive_held(int root, int out, ux_hold *h, char *err, size_t errlen) {
  unsigned long long likely, most, have = 0;
  archive_bounds(root, &likely, &most);
  if (hold_to(h, &have, likely) != 0) return -3;
  int rc = archive_once(root, out, likely, err, errlen);
  if (rc == 1 && likely < most) {
    if (hold_to(h, &have, most) != 0) rc = -3;
    else rc = archive_once(root, out, most, err, errlen);
  }
  if (rc == 1) snprintf(err, errlen, "the archive is larger than the volume can hold");
  if (rc != 0) ux_ledger_cancel(h->st, h->item);
  return rc == 1 ? -1 : rc;
}

int ux_archive_volume(const char *dir, const char *arch, long *size, int stay_frozen,
                      ux_hold *h, char *err, size_t errlen) {
  char tmp[4300];
  int root = ux_volume_acquire(dir, err, errlen);
  if (root < 0) return -2;
  int rc = -1, out = -1;
  if (ux_path(tmp, sizeof tmp, "%s.tmp", arch) == 0 &&
      (out = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0) {
    ux_runner_freeze_workdir(root, 1);
    rc = archive_held(root, out, h, err, errlen);
    if (!stay_frozen) ux_runner_freeze_workdir(root, 0);   /* a frozen resource stays so */
    struct stat st;
    if (rc == 0 && (fsync(out) != 0 || fstat(out, &st) != 0 || rename(tmp, arch) != 0)) {
      snprintf(err, errlen, "cannot store the archive: %s", strerror(errno));
      ux_ledger_cancel(h->st, h->item);
      rc = -1;
    }
    if (rc == 0) *size = (long)st.st_size;
    else unlink(tmp);
    close(out);
  } else {
    snprintf(err, errlen, "cannot create the archive: %s", strerror(errno));
  }
  close(root);
  ux_volume_release(dir);
  return rc;
}

int ux_copy_archive(const char *from, const char *to, long *size, ux_hold *h,
                    char *err, size_t errlen) {
  char tmp[4300], buf[65536];
  unsigned long long have = 0;
  struct stat st;
  int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), out = -1, rc = -1;
  if (in >= 0 && fstat(in, &st) == 0 && hold_to(h, &have, (unsigned long long)st.st_size) != 0) {
    close(in);
    return -3;
  }
  if (in >= 0 && ux_path(tmp, sizeof tmp, "%s.tmp", to) == 0)
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (in >= 0 && out >= 0) {
    ssize_t n;
    unsigned long long total = 0;
    /* an archive never changes once made: no more than its size is copied */
    while (total < have && (n = read(in, buf, sizeof buf)) > 0 && write(out, buf, (size_t)n) == n)
      total += (unsigned long long)n;
    rc = total == have && fsync(out) == 0 && rename(tmp, to) == 0 ? 0 : -1;
    if (rc == 0) *size = (long)total;
    else unlink(tmp);
  }
  if (rc != 0) {
    snprintf(err, errlen, "cannot copy the archive: %s", strerror(errno));
    ux_ledger_cancel(h->st, h->item);
  }
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return rc;
}

int ux_restore_volume(const char *arch, const char *dir, ux_hold *h, char *err, size_t errlen) {
  char rnd[32];
  unsigned long long have = 0;
  ux_extract_report rep;
  int in = open(arch, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) {
    snprintf(err, errlen, "cannot open the archive: %s", strerror(errno));
    return -1;
  }
  ux_random_id(rnd, sizeof rnd, "", 12);
  ux_ledger_item(h->item, sizeof h->item, "restores", rnd);
  h->kind = UX_LEDGER_VOLUME;
  if (hold_to(h, &have, ux_volume_charge()) != 0) {
    close(in);
    return -3;
  }
  int rc = ux_volume_swap_begin(dir, err, errlen);
  if (rc == 0) {
    char next[4300];
    rc = ux_path(next, sizeof next, "%s/next", dir) == 0 ? ux_extract_tree(next, in, &rep, err, errlen) : -1;
    char end_err[256];
    if (ux_volume_swap_end(dir, rc == 0, end_err, sizeof end_err) != 0 && rc == 0) {
      snprintf(err, errlen, "%s", end_err);
      rc = -1;
    }
  }
  ux_ledger_cancel(h->st, h->item);               /* the second volume is gone either way */
  close(in);
  return rc;
}
