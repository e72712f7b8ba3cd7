/*
** The background file hasher of filehash.h. One mutex guards the three
** counters; the thread hashes outside it, a piece at a time, so the
** writer never waits for the hash except in unsb_filehash_finish.
*/
#include "core/filehash.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

/* Big enough that a piece costs one pread and one wake-up per 256 KiB,
** small enough to stay in the cache between the read and the hash. */
enum { PIECE = 256 << 10 };

struct unsb_filehash {
  pthread_mutex_t mu;
  pthread_cond_t more;    /* written grew, or stop was set */
  pthread_cond_t caught;  /* hashed reached written, or failed */
  uint64_t written;       /* bytes the writer reported */
  uint64_t hashed;        /* bytes hashed (only the hashing side writes it) */
  int stop, failed;
  int fd;
  pthread_t thread;
  unsb_sha256 *sha;
  char *buf;
};

/* Hashes [from, upto) of the file, unlocked; stops early when asked to.
** 0, or -1. */
static int hash_range(unsb_filehash *h, uint64_t from, uint64_t upto) {
  while (from < upto) {
    size_t want = upto - from < PIECE ? (size_t)(upto - from) : PIECE;
    ssize_t n = pread(h->fd, h->buf, want, (off_t)from);
    if (n < 0 && errno == EINTR) continue;
    /* 0: the file is shorter than reported (truncated under us) */
    if (n <= 0 || unsb_sha256_update(h->sha, h->buf, (size_t)n) != 0) return -1;
    from += (uint64_t)n;
    pthread_mutex_lock(&h->mu);
    h->hashed = from;
    int stop = h->stop;
    pthread_mutex_unlock(&h->mu);
    if (stop) return 0;
  }
  return 0;
}

static void *run(void *arg) {
  unsb_filehash *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->stop && h->hashed == h->written) {
      pthread_cond_broadcast(&h->caught);
      pthread_cond_wait(&h->more, &h->mu);
    }
    if (h->stop) break;
    uint64_t from = h->hashed, upto = h->written;
    pthread_mutex_unlock(&h->mu);
    int rc = hash_range(h, from, upto);
    pthread_mutex_lock(&h->mu);
    if (rc != 0) {
      h->failed = 1;
      break;
    }
  }
  pthread_cond_broadcast(&h->caught);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static void release(unsb_filehash *h) {
  pthread_cond_destroy(&h->more);
  pthread_cond_destroy(&h->caught);
  pthread_mutex_destroy(&h->mu);
  unsb_sha256_free(h->sha);
  free(h->buf);
  free(h);
}

unsb_filehash *unsb_filehash_start(int fd) {
  unsb_filehash *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->fd = fd;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->more, NULL);
  pthread_cond_init(&h->caught, NULL);
  int started = 0;
  if ((h->buf = malloc(PIECE)) && (h->sha = unsb_sha256_new())) {
    /* the thread takes no signal: the host's handlers run on its threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    started = pthread_create(&h->thread, NULL, run, h) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (!started) {
    release(h);
    return NULL;
  }
  return h;
}

void unsb_filehash_wrote(unsb_filehash *h, uint64_t total) {
  pthread_mutex_lock(&h->mu);
  h->written = total;
  pthread_cond_signal(&h->more);
  pthread_mutex_unlock(&h->mu);
}

int unsb_filehash_finish(unsb_filehash *h, char out[UNSB_SHA256_HEX_LEN + 1]) {
  pthread_mutex_lock(&h->mu);
  while (!h->failed && h->hashed < h->written) pthread_cond_wait(&h->caught, &h->mu);
  int failed = h->failed;
  pthread_mutex_unlock(&h->mu);
  return failed ? -1 : unsb_sha256_final(h->sha, out);
}

void unsb_filehash_free(unsb_filehash *h) {
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_signal(&h->more);
  pthread_mutex_unlock(&h->mu);
  pthread_join(h->thread, NULL);
  release(h);
}
