/*
** openat2 and friends. Kept tiny: these few lines are what every safety
** claim of the agent rests on, so they are easy to audit in one place.
*/
#include "agent/fsfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
  do fd = syscall(SYS_openat2, dirfd, name, &how, sizeof how);
  while (fd < 0 && errno == EINTR);
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
