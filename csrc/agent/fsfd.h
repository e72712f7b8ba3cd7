/*
** File-descriptor primitives every walk of the agent uses. Nothing here
** takes a full path: each name is opened relative to its parent's fd with
** openat2, so a directory swapped for a symlink mid-walk is refused by the
** kernel (ELOOP / EXDEV) instead of being followed.
*/
#ifndef AG_FSFD_H
#define AG_FSFD_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <linux/openat2.h>

/* Strict: no symlink anywhere, nothing outside the starting directory. */
#define AG_RES_STRICT (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* Inside: symlinks inside the tree are followed, nothing resolves outside. */
#define AG_RES_INSIDE (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

/* openat2(2) through syscall(2) (glibc 2.36 has no wrapper); O_CLOEXEC is
** always added. Returns the fd or -1 with errno. */
int ag_openat2(int dirfd, const char *name, int flags, mode_t mode,
               unsigned long long resolve);

/* Writes all of buf, retrying short writes and EINTR. 0 or -1 (errno). */
int ag_write_all(int fd, const void *buf, size_t len);

/* Reads up to len bytes, stopping only at EOF. Returns the count or -1. */
ssize_t ag_read_full(int fd, void *buf, size_t len);

/* Opens DIR (a path given on the command line by the server) as the root
** of an operation: O_DIRECTORY | O_NOFOLLOW, so a symlink at the last
** component is refused. Returns the fd or -1 with errno. */
int ag_open_root(const char *dir);

/* The names in a directory (not . and ..), sorted with strcmp. More than
** cap names fails with E2BIG, so a huge directory cannot exhaust memory.
** 0 or -1 (errno). Free with ag_names_free. */
int ag_dir_names(int dirfd, size_t cap, char ***names, size_t *count);
void ag_names_free(char **names, size_t count);

/* O_RDONLY, O_WRONLY or O_RDWR: how fd was opened (a data fd passed in);
** -1 when fd is not open. */
int ag_fd_mode(int fd);

/* The lowercase hex SHA-256 of len bytes into out[65]. 0 or -1. */
int ag_sha256_hex(const void *buf, size_t len, char out[65]);

#endif
