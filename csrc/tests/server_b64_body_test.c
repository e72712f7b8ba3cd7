/*
** read-binary's streamed body (cp/b64_body.h): head, base64 of
** a file's bytes, tail, read at every kind of piece size (1 byte, inside
** quads, the transport's block, all at once) is exactly the text; a file
** shrunk while the body is read cuts it (a failed read), never a longer
** or different body.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/base64.h"
#include "server/cp/b64_body.h"
#include "server/mem.h"
#include "tests/tap.h"

static int file_of(const unsigned char *d, size_t n) {
  int fd = memfd_create("b64-body-test", MFD_CLOEXEC);
  if (fd < 0 || write(fd, d, n) != (ssize_t)n) exit(1);
  return fd;
}

static ux_b64_body *body_of(const unsigned char *d, size_t n) {
  return ux_b64_body_new(file_of(d, n), n, strdup("{\"c\":\""), 6, strdup("\",\"w\":1}"), 8);
}

/* The whole body read max bytes at a time; NULL when a read failed. */
static char *read_all(ux_b64_body *b, size_t max, size_t *len) {
  unsigned long long total = ux_b64_body_length(b);
  char *out = ux_xmalloc(total + 1);
  size_t at = 0;
  while (at < total) {
    ssize_t n = ux_b64_body_read(b, at, out + at, max < total - at ? max : total - at);
    if (n <= 0) { free(out); return NULL; }
    at += (size_t)n;
  }
  *len = at;
  return out;
}

int main(void) {
  ux_mem_init();
  size_t sizes[] = { 0, 1, 2, 3, 4, 100003 }, maxes[] = { 1, 2, 3, 5, 7, 4099, 16384, 1u << 20 };
  unsigned char *d = ux_xmalloc(100003);
  for (size_t i = 0; i < 100003; i++) d[i] = (unsigned char)((i * 151) ^ (i >> 5));
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s], blen;
    char *b64 = unsb_base64_encode(d, n, &blen), *want;
    if (asprintf(&want, "{\"c\":\"%s\",\"w\":1}", b64) < 0) exit(1);
    int all = 1;
    for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
      ux_b64_body *b = body_of(d, n);
      size_t len = 0;
      char *got = read_all(b, maxes[m], &len);
      all = all && ux_b64_body_length(b) == strlen(want) && got && len == strlen(want) && !memcmp(got, want, len);
      free(got);
      ux_b64_body_free(b);
    }
    ok(all, "%zu bytes: the body is head, base64, tail at every piece size", n);
    free(b64);
    free(want);
  }
  /* the file's other holder (here: a dup) shrinks it: the body is cut */
  int fd = file_of(d, 100003), other = dup(fd);
  ux_b64_body *b = ux_b64_body_new(fd, 100003, strdup("{"), 1, strdup("}"), 1);
  char buf[16384];
  ssize_t first = ux_b64_body_read(b, 0, buf, sizeof buf), r = 0;
  unsigned long long pos = first > 0 ? (unsigned long long)first : 0;
  int cut = other >= 0 && ftruncate(other, 1000) == 0;
  while (cut && (r = ux_b64_body_read(b, pos, buf, sizeof buf)) > 0) pos += (unsigned long long)r;
  ok(first == (ssize_t)sizeof buf && cut && r == -1 && pos < ux_b64_body_length(b),
     "a file shrunk meanwhile cuts the body (at %llu of %llu)", pos, ux_b64_body_length(b));
  close(other);
  ux_b64_body_free(b);
  free(d);
  printf("1..%d\n", tap_count);
  return tap_failed ? 1 : 0;
}
