/*
** The SHA-256 of a file behind its writer (core/hashfollow.h): the digest
** of everything written, in pieces of any size and none, equals the
** one-shot digest; a second final gives the same; a file that cannot be
** read back fails; freeing without asking for the digest ends the thread.
*/
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hashfollow.h"
#include "tests/tap.h"

/* A fresh temporary file open read-write, already unlinked. */
static int temp_fd(void) {
  char path[] = "/tmp/unsb-hashfollow-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) unlink(path);
  return fd;
}

/* The threads of this process, from /proc. */
static int threads(void) {
  char line[256];
  int n = -1;
  FILE *st = fopen("/proc/self/status", "r");
  while (st && fgets(line, sizeof line, st))
    if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
  if (st) fclose(st);
  return n;
}

/* Writes data in pieces of `piece` bytes, telling f after each. */
static int write_pieces(int fd, unsb_hashfollow *f, const char *data, size_t len, size_t piece) {
  for (size_t at = 0; at < len; at += piece) {
    size_t n = len - at < piece ? len - at : piece;
    if (write(fd, data + at, n) != (ssize_t)n) return -1;
    unsb_hashfollow_wrote(f, n);
  }
  return 0;
}

static void digest_matches(size_t len, size_t piece) {
  char *data = malloc(len ? len : 1), want[UNSB_SHA256_HEX_LEN + 1], got[UNSB_SHA256_HEX_LEN + 1];
  for (size_t i = 0; i < len; i++) data[i] = (char)(i * 31 + i / 977);
  int fd = temp_fd();
  unsb_hashfollow *f = fd >= 0 ? unsb_hashfollow_new(fd) : NULL;
  int wrote = f ? write_pieces(fd, f, data, len, piece) : -1;
  int rc = f ? unsb_hashfollow_final(f, got) : -1;
  unsb_sha256_hex(data, len, want);
  ok(wrote == 0 && rc == 0 && !strcmp(got, want), "%zu bytes in pieces of %zu: the one-shot digest", len, piece);
  char again[UNSB_SHA256_HEX_LEN + 1];
  ok(f && unsb_hashfollow_final(f, again) == 0 && !strcmp(again, want), "a second final gives the same digest");
  unsb_hashfollow_free(f);
  if (fd >= 0) close(fd);
  free(data);
}

int main(void) {
  digest_matches(0, 1);
  digest_matches(1, 1);
  digest_matches(5 << 20, 512 * 1024);     /* more than one read-back piece */
  digest_matches(3 << 20, 7);              /* many tiny writes */
  digest_matches((1 << 20) + 1, 1 << 20);  /* a piece and one byte */

  /* written bytes that the file does not hold (a write-only fd cannot
  ** be read back): the digest fails, it is never a digest of less */
  char path[] = "/tmp/unsb-hashfollow-XXXXXX";
  int fd = mkstemp(path), wo = open(path, O_WRONLY);
  unlink(path);
  unsb_hashfollow *f = unsb_hashfollow_new(wo);
  char got[UNSB_SHA256_HEX_LEN + 1];
  ok(f && write(fd, "abc", 3) == 3, "a follower of a write-only fd");
  if (f) unsb_hashfollow_wrote(f, 3);
  ok(f && unsb_hashfollow_final(f, got) == -1, "cannot read back: final fails");
  unsb_hashfollow_free(f);
  /* more announced than written: the thread meets the end of the file */
  f = unsb_hashfollow_new(fd);
  if (f) unsb_hashfollow_wrote(f, 100);
  ok(f && unsb_hashfollow_final(f, got) == -1, "bytes announced but not in the file: final fails");
  unsb_hashfollow_free(f);

  /* freed while it has work and no digest was asked for: it stops */
  int before = threads();
  f = unsb_hashfollow_new(fd);
  int during = threads();
  if (f) unsb_hashfollow_wrote(f, 3);
  unsb_hashfollow_free(f);
  ok(f && during == before + 1 && threads() == before, "freed without a final: its thread is gone (%d, %d, %d)",
     before, during, threads());
  unsb_hashfollow_free(NULL);
  close(fd);
  close(wo);
  return tap_done();
}
