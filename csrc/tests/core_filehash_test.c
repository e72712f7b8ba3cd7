/*
** The background file hasher (core/filehash.h): the digest of a file
** written in pieces of every size equals the one-shot SHA-256 of its
** bytes; an empty file; a file cut shorter than reported fails instead of
** hashing fewer bytes; freeing mid-way stops the thread.
*/
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/file.h"
#include "core/filehash.h"
#include "tests/tap.h"

enum { SIZE = 3 << 20 };

/* A fresh file in root, opened with access (O_RDWR, O_WRONLY). */
static int fresh(const char *root, const char *name, int access) {
  char path[300];
  snprintf(path, sizeof path, "%s/%s", root, name);
  return open(path, access | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* Writes n bytes of data to a fresh file, reports `reported` written to a
** hasher of it, and says whether finishing fails (1) or gives a digest. */
static int finish_fails(int fd, const unsigned char *data, size_t n, uint64_t reported) {
  char got[UNSB_SHA256_HEX_LEN + 1];
  unsb_filehash *h = unsb_filehash_start(fd);
  int fails = h && unsb_write_all(fd, data, n) == 0;
  if (h) unsb_filehash_wrote(h, reported);
  fails = fails && unsb_filehash_finish(h, got) == -1;
  unsb_filehash_free(h);
  close(fd);
  return fails;
}

int main(void) {
  char root[] = "/tmp/unsb-filehash-XXXXXX", want[UNSB_SHA256_HEX_LEN + 1],
       got[UNSB_SHA256_HEX_LEN + 1];
  if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
  unsigned char *data = malloc(SIZE);
  if (!data) return 2;
  for (size_t i = 0; i < SIZE; i++) data[i] = (unsigned char)(i * 2654435761u >> 13);
  unsb_sha256_hex(data, SIZE, want);

  /* pieces of 1 byte up to 1 MiB + 3, reported after each write */
  int fd = fresh(root, "pieces", O_RDWR);
  unsb_filehash *h = unsb_filehash_start(fd);
  ok(h != NULL, "starts");
  size_t off = 0, piece = 1;
  while (off < SIZE) {
    size_t n = piece < SIZE - off ? piece : SIZE - off;
    if (unsb_write_all(fd, data + off, n) != 0) break;
    off += n;
    unsb_filehash_wrote(h, off);
    piece = piece * 3 + 1 > (1u << 20) + 3 ? 7 : piece * 3 + 1;
  }
  ok(off == SIZE, "wrote %d bytes in pieces", SIZE);
  ok(h && unsb_filehash_finish(h, got) == 0, "finishes");
  is_str(got, want, "the digest of the pieces is the file's");
  ok(unsb_filehash_finish(h, got) == 0 && !strcmp(got, want), "a second finish gives the same digest");
  unsb_filehash_free(h);
  close(fd);

  /* nothing written: the digest of no bytes */
  fd = fresh(root, "empty", O_RDWR);
  h = unsb_filehash_start(fd);
  unsb_sha256_hex("", 0, want);
  ok(h && unsb_filehash_finish(h, got) == 0, "an empty file finishes");
  is_str(got, want, "... with the digest of no bytes");
  unsb_filehash_free(h);
  close(fd);

  /* reported longer than the file (cut short under the hasher) */
  ok(finish_fails(fresh(root, "short", O_RDWR), data, 1000, 5000),
     "1000 bytes written, 5000 reported: fails, never a digest of fewer bytes");

  /* a descriptor it cannot read back */
  ok(finish_fails(fresh(root, "writeonly", O_WRONLY), data, 10, 10),
     "10 bytes to a write-only descriptor: the hash cannot read them back, fails");

  /* freed while it has megabytes left: the thread stops and is joined
  ** (the sanitizer build checks that nothing leaks) */
  int before = t_threads();
  fd = fresh(root, "freed", O_RDWR);
  h = unsb_filehash_start(fd);
  ok(h && t_threads() == before + 1, "a hasher is one thread (%d, %d before)", t_threads(), before);
  ok(unsb_write_all(fd, data, SIZE) == 0, "a whole file written");
  unsb_filehash_wrote(h, SIZE);
  unsb_filehash_free(h);
  ok(t_threads() == before, "freed before its end: its thread is gone (%d threads)", t_threads());
  close(fd);

  char path[300];
  const char *names[] = { "pieces", "empty", "short", "freed", "writeonly" };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(path, sizeof path, "%s/%s", root, names[i]);
    unlink(path);
  }
  rmdir(root);
  free(data);
  return tap_done();
}
