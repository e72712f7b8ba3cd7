/*
** Snapshots with libarchive.
**
** Restore is hostile-archive safe: every entry name is checked here
** (relative, no "..", no empty component), hard links are refused, and
** libarchive is told ARCHIVE_EXTRACT_SECURE_NODOTDOT | SECURE_SYMLINKS |
** SECURE_NOABSOLUTEPATHS as a second line of defence. Because
** NOABSOLUTEPATHS forbids absolute destinations, the extraction directory
** is named relative to "/", which main() makes the working directory at
** start-up; no thread ever changes it afterwards.
**
** The swap uses renameat2(RENAME_EXCHANGE): the old and the new tree
** trade places atomically, then the old one (now at the temporary name)
** is removed. A crash in between leaves the target complete, old or new.
*/
#include "server/sandbox/snapshot.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"

static int fail(char *err, size_t errlen, const char *what, const char *detail) {
  snprintf(err, errlen, "%s: %s", what, detail ? detail : strerror(errno));
  return -1;
}

/* Copies one regular file's bytes into the archive. */
static int copy_file(struct archive *w, const char *src) {
  char buf[65536];
  int fd = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (archive_write_data(w, buf, (size_t)n) < 0) { n = -1; break; }
  close(fd);
  return n < 0 ? -1 : 0;
}

int ux_snapshot_create(const char *srcdir, const char *archive, long *size,
                       char *err, size_t errlen) {
  char tmp[4200];
  size_t slen = strlen(srcdir);
  if (ux_path(tmp, sizeof tmp, "%s.tmp", archive) < 0) return fail(err, errlen, "archive path", NULL);
  struct archive *w = archive_write_new();
  struct archive *d = archive_read_disk_new();
  struct archive_entry *e = NULL;
  int rc = -1;
  archive_write_add_filter_gzip(w);
  archive_write_set_format_pax_restricted(w);
  archive_read_disk_set_symlink_physical(d);         /* store links, never follow */
  archive_read_disk_set_standard_lookup(d);
  if (archive_write_open_filename(w, tmp) != ARCHIVE_OK) {
    fail(err, errlen, "cannot create archive", archive_error_string(w));
    goto out;
  }
  if (archive_read_disk_open(d, srcdir) != ARCHIVE_OK) {
    fail(err, errlen, "cannot read source", archive_error_string(d));
    goto out;
  }
  for (;;) {
    e = archive_entry_new();
    int r = archive_read_next_header2(d, e);
    if (r == ARCHIVE_EOF) { rc = 0; break; }
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      fail(err, errlen, "cannot read source", archive_error_string(d));
      break;
    }
    archive_read_disk_descend(d);
    const char *p = archive_entry_pathname(e);
    mode_t type = archive_entry_filetype(e);
    /* names relative to srcdir; the root itself and special files skipped */
    if (strncmp(p, srcdir, slen) != 0 || p[slen] != '/' || !p[slen + 1] ||
        !(type == AE_IFREG || type == AE_IFDIR || type == AE_IFLNK)) {
      archive_entry_free(e);
      continue;
    }
    char rel[4096];
    snprintf(rel, sizeof rel, "%s", p + slen + 1);
    archive_entry_set_pathname(e, rel);
    archive_entry_set_hardlink(e, NULL);
    if (archive_write_header(w, e) != ARCHIVE_OK ||
        (type == AE_IFREG && archive_entry_size(e) > 0 &&
         copy_file(w, archive_entry_sourcepath(e)) < 0)) {
      fail(err, errlen, "cannot write archive", archive_error_string(w));
      break;
    }
    archive_entry_free(e);
    e = NULL;
  }
out:
  archive_entry_free(e);
  archive_read_close(d);
  archive_read_free(d);
  if (archive_write_close(w) != ARCHIVE_OK && rc == 0)
    rc = fail(err, errlen, "cannot finish archive", archive_error_string(w));
  archive_write_free(w);
  struct stat st;
  if (rc == 0 && (rename(tmp, archive) < 0 || stat(archive, &st) < 0))
    rc = fail(err, errlen, "cannot store archive", NULL);
  if (rc == 0) *size = (long)st.st_size;
  else unlink(tmp);
  return rc;
}

/* Entry names we accept: what ux_snapshot_create writes, nothing more
** (a trailing '/' on directories is tolerated). */
static int safe_name(const char *name) {
  char buf[4096];
  size_t n = strlen(name);
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, name, n + 1);
  if (buf[n - 1] == '/') buf[n - 1] = '\0';
  return ux_valid_relpath(buf);
}

static int extract(const char *archive, const char *dest_rel, char *err, size_t errlen) {
  struct archive *a = archive_read_new();
  struct archive *x = archive_write_disk_new();
  struct archive_entry *e;
  int rc = -1;
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  archive_write_disk_set_options(x, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                    ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
                                    ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM |
                                    ARCHIVE_EXTRACT_TIME);
  if (archive_read_open_filename(a, archive, 65536) != ARCHIVE_OK) {
    fail(err, errlen, "cannot open snapshot", archive_error_string(a));
    goto out;
  }
  for (;;) {
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) { rc = 0; break; }
    if (r != ARCHIVE_OK) { fail(err, errlen, "corrupt snapshot", archive_error_string(a)); break; }
    const char *name = archive_entry_pathname(e);
    mode_t type = archive_entry_filetype(e);
    if (!name || !safe_name(name) || archive_entry_hardlink(e) ||
        !(type == AE_IFREG || type == AE_IFDIR || type == AE_IFLNK)) {
      fail(err, errlen, "snapshot has an unsafe entry", name ? name : "(unnamed)");
      break;
    }
    char full[8192];
    if (ux_path(full, sizeof full, "%s/%s", dest_rel, name) < 0) {
      fail(err, errlen, "entry name too long", name);
      break;
    }
    archive_entry_set_pathname(e, full);
    /* never recreate set-id bits as root */
    archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
    if (archive_write_header(x, e) != ARCHIVE_OK) {
      fail(err, errlen, "cannot restore entry", archive_error_string(x));
      break;
    }
    const void *buf;
    size_t len;
    la_int64_t off;
    while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
      if (archive_write_data_block(x, buf, len, off) != ARCHIVE_OK) { r = ARCHIVE_FATAL; break; }
    if (r != ARCHIVE_EOF || archive_write_finish_entry(x) != ARCHIVE_OK) {
      fail(err, errlen, "cannot restore entry", archive_error_string(x));
      break;
    }
  }
out:
  archive_read_close(a);
  archive_read_free(a);
  if (archive_write_close(x) != ARCHIVE_OK && rc == 0)
    rc = fail(err, errlen, "cannot finish restore", archive_error_string(x));
  archive_write_free(x);
  return rc;
}

int ux_snapshot_restore(const char *archive, const char *target, char *err, size_t errlen) {
  char tmp[4200], suffix[40];
  struct stat st;
  if (target[0] != '/') return fail(err, errlen, "restore target", "not an absolute path");
  if (ux_random_id(suffix, sizeof suffix, ".restore-", 6) < 0 ||
      ux_path(tmp, sizeof tmp, "%s%s", target, suffix) < 0)
    return fail(err, errlen, "restore target", "path too long");
  if (mkdir(tmp, 0700) < 0) return fail(err, errlen, "cannot create restore directory", NULL);
  if (extract(archive, tmp + 1, err, errlen) < 0) {   /* tmp + 1: relative to "/" */
    ux_rm_rf(tmp);
    return -1;
  }
  int have_old = stat(target, &st) == 0;
  if (have_old) {                                    /* keep the sandbox's access */
    if (chown(tmp, st.st_uid, st.st_gid) < 0) { /* best effort as non-root */ }
    chmod(tmp, st.st_mode & 07777);
  }
  if (have_old ? renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) < 0
               : rename(tmp, target) < 0) {
    fail(err, errlen, "cannot swap in the restored tree", NULL);
    ux_rm_rf(tmp);
    return -1;
  }
  ux_rm_rf(tmp);                                     /* the old tree now */
  return 0;
}
