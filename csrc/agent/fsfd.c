/*
** openat2 and friends. Kept tiny: these few lines are what every safety
** claim of the agent rests on, so they are easy to audit in one place.
*/
#include "agent/fsfd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <openssl/evp.h>

int ag_openat2(int dirfd, const char *name, int flags, mode_t mode,
               unsigned long long resolve) {
  struct open_how how;
  long fd;
  memset(&how, 0, sizeof how);
  how.flags = (unsigned long long)(flags | O_CLOEXEC);
  /* the kernel refuses a mode without O_CREAT/O_TMPFILE */
  how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  /* EAGAIN: with RESOLVE_BENEATH or RESOLVE_IN_ROOT the kernel gives up
  ** when any rename or mount on the machine raced the walk; try again */
  int tries = 0;
  do fd = syscall(SYS_openat2, dirfd, name, &how, sizeof how);
  while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 1000)));
  return (int)fd;
}

int ag_write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

ssize_t ag_read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

int ag_open_root(const char *dir) {
  return open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int ag_sha256_hex(const void *buf, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) return -1;
  for (unsigned i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
  out[64] = '\0';
  return 0;
}

void ag_names_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int names_fail(DIR *d, char **v, size_t n, int err) {
  ag_names_free(v, n);
  if (d) closedir(d);
  errno = err;
  return -1;
}

int ag_dir_names(int dirfd, size_t cap, char ***out, size_t *count) {
  int fd = dup(dirfd);
  DIR *d;
  struct dirent *de;
  char **v = NULL;
  size_t n = 0, alloc = 0;
  if (fd < 0) return -1;
  if (!(d = fdopendir(fd))) { close(fd); return -1; }
  rewinddir(d);   /* the dup shares the offset with dirfd */
  for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (n >= cap) return names_fail(d, v, n, E2BIG);
    if (n == alloc) {
      size_t na = alloc ? alloc * 2 : 64;
      char **nv = realloc(v, na * sizeof *nv);
      if (!nv) return names_fail(d, v, n, ENOMEM);
      v = nv; alloc = na;
    }
    if (!(v[n] = strdup(de->d_name))) return names_fail(d, v, n, ENOMEM);
    n++;
  }
  if (errno) return names_fail(d, v, n, errno);
  closedir(d);
  if (n) qsort(v, n, sizeof *v, cmp_names);
  *out = v;
  *count = n;
  return 0;
}

int ag_fd_mode(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : (fl & O_ACCMODE);
}
