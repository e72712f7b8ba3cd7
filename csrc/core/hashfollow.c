/*
** A file's SHA-256 behind its writer (see hashfollow.h).
*/
#include "core/hashfollow.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define PIECE (1 << 20)   /* bytes read back at a time */

struct unsb_hashfollow {
  int fd;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t more;      /* the writer added bytes, or it is the end */
  size_t written, hashed;   /* under mu */
  int ending;               /* no more bytes: hash the rest, then stop */
  int abandon;              /* stop now: the digest is not wanted */
  int waiting;              /* the thread sleeps on `more` */
  int failed;               /* a read back or OpenSSL failed */
  unsb_sha256 *hash;
  char *buf;
};

static void *follow(void *arg) {
  unsb_hashfollow *f = arg;
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (f->hashed == f->written && !f->ending && !f->abandon) {
      f->waiting = 1;
      pthread_cond_wait(&f->more, &f->mu);
      f->waiting = 0;
    }
    if (f->abandon || f->failed || f->hashed == f->written) break;
    size_t want = f->written - f->hashed, at = f->hashed;
    pthread_mutex_unlock(&f->mu);
    ssize_t n = pread(f->fd, f->buf, want < PIECE ? want : PIECE, (off_t)at);
    int bad = n <= 0 && !(n < 0 && errno == EINTR);
    if (n > 0 && unsb_sha256_update(f->hash, f->buf, (size_t)n) != 0) bad = 1;
    pthread_mutex_lock(&f->mu);
    if (bad) f->failed = 1;
    else if (n > 0) f->hashed += (size_t)n;
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

unsb_hashfollow *unsb_hashfollow_new(int fd) {
  unsb_hashfollow *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->fd = fd;
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->more, NULL);
  if (!(f->buf = malloc(PIECE)) || !(f->hash = unsb_sha256_new()) ||
      pthread_create(&f->thread, NULL, follow, f) != 0) {
    unsb_sha256_free(f->hash);
    free(f->buf);
    pthread_cond_destroy(&f->more);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return NULL;
  }
  return f;
}

void unsb_hashfollow_wrote(unsb_hashfollow *f, size_t n) {
  pthread_mutex_lock(&f->mu);
  f->written += n;
  if (f->waiting) pthread_cond_signal(&f->more);
  pthread_mutex_unlock(&f->mu);
}

/* Ends the thread: after the rest is hashed, or at once (abandon). */
static void stop(unsb_hashfollow *f, int abandon) {
  if (!f->buf) return;                      /* joined already */
  pthread_mutex_lock(&f->mu);
  f->ending = 1;
  f->abandon |= abandon;
  pthread_cond_signal(&f->more);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  free(f->buf);
  f->buf = NULL;
}

int unsb_hashfollow_final(unsb_hashfollow *f, char out[UNSB_SHA256_HEX_LEN + 1]) {
  stop(f, 0);
  if (f->failed || f->hashed != f->written) return -1;
  return unsb_sha256_final(f->hash, out);
}

void unsb_hashfollow_free(unsb_hashfollow *f) {
  if (!f) return;
  stop(f, 1);
  unsb_sha256_free(f->hash);
  pthread_cond_destroy(&f->more);
  pthread_mutex_destroy(&f->mu);
  free(f);
}
