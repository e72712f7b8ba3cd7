/*
** The one whole-file writer, and the reader of a file's first bytes. A file is never written in place: the bytes
** go to a fresh temporary in the same directory (O_CREAT | O_EXCL |
** O_NOFOLLOW, so nothing that was there is followed or reused), which is
** then renamed over the name; a reader sees the old file or the new one,
** never half of one. The cache, the `un` tool's artifacts (through the
** binding) and unsandboxd's input files (from a directory fd it opened by
** its own rules) all write through here.
*/
#ifndef UNSB_FILE_H
#define UNSB_FILE_H

#include <stddef.h>
#include <sys/types.h>

#define UNSB_FILE_FSYNC 1   /* fsync before the rename (survives a crash) */

/* Writes name (one path component, no '/') in the directory dirfd:
** mode (before the umask), owner uid:gid unless uid is (uid_t)-1. 0, or
** -1 with errno set and *step naming what failed ("create", "write",
** "chown", "sync", "rename"); the temporary is gone either way. */
int unsb_file_write_at(int dirfd, const char *name, const void *data, size_t len,
                       mode_t mode, uid_t uid, gid_t gid, int flags, const char **step);

/* The same for a path: its directory is opened first ("open directory"). */
int unsb_file_write(const char *path, const void *data, size_t len, mode_t mode,
                    int flags, const char **step);

/* Writes all len bytes to fd, across short writes and EINTR. 0, or -1
** with errno set (EIO when the file takes no more). */
int unsb_write_all(int fd, const void *buf, size_t len);

/* Creates the directory path and any missing parents (mkdir -p), each
** with mode (before the umask); an existing directory, or a symlink to one,
** is fine. 0, or -1 with errno set: ENOTDIR when a component exists and is
** not a directory, ENAMETOOLONG past PATH_MAX, EINVAL for an empty path. */
int unsb_mkdirs(const char *path, mode_t mode);

/* The first bytes of the regular file at path, at most max: a file is
** opened O_NONBLOCK (a FIFO or a device never blocks) and must be regular
** (fstat). Returns the count read into buf, or -1 with errno set (EINVAL
** for a file that is not regular). */
ssize_t unsb_file_head(const char *path, char *buf, size_t max);

/* One entry of a directory, as lstat sees it (a symlink is a symlink). */
typedef struct {
  char *name;
  char type;              /* 'f' regular file, 'd' directory, 'l' symlink, 'o' other */
  unsigned mode;          /* permission bits (07777) */
  long long size;         /* bytes (a symlink: its target's length) */
  long long mtime;        /* seconds since the epoch */
} unsb_dirent;

/* The entries of the directory at path, without "." and "..", in the
** order readdir gives (the caller sorts); at most max_entries (more is
** E2BIG). 0 with *out (free with unsb_dirents_free) and *n, or -1 with
** errno set. An entry that vanishes between readdir and lstat is left out. */
int unsb_read_dir(const char *path, size_t max_entries, unsb_dirent **out, size_t *n);
void unsb_dirents_free(unsb_dirent *e, size_t n);

#endif
