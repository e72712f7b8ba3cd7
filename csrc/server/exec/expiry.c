/*
** The expiry sweep (expiry.h): one thread that sleeps on a condition
** (so a stop wakes it at once) and removes expired jobs in one statement
** per round.
*/
#include "server/exec/expiry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "server/fsutil.h"
#include "server/mem.h"

struct ux_expiry {
  ux_store *st;
  long retention_s;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  int stopping;
};

int ux_job_expired(const json_t *doc, long retention_s, long now) {
  json_t *done = json_object_get(doc, "completed_at");
  return retention_s > 0 && json_is_integer(done) && now - json_integer_value(done) >= retention_s;
}

long ux_expiry_interval(long retention_s) {
  long s = retention_s / 4;
  return s < 1 ? 1 : s > 60 ? 60 : s;
}

static void *sweep(void *arg) {
  ux_expiry *x = arg;
  pthread_mutex_lock(&x->mu);
  while (!x->stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ux_expiry_interval(x->retention_s);
    pthread_cond_timedwait(&x->wake, &x->mu, &until);
    if (x->stopping) break;
    pthread_mutex_unlock(&x->mu);
    if (ux_store_expire_jobs(x->st, ux_now() - x->retention_s) < 0)
      fprintf(stderr, "unsandboxd: expired jobs could not be removed (next try in %ld s)\n",
              ux_expiry_interval(x->retention_s));
    pthread_mutex_lock(&x->mu);
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

ux_expiry *ux_expiry_start(ux_store *st, long retention_s) {
  ux_expiry *x = ux_xcalloc(1, sizeof *x);
  x->st = st;
  x->retention_s = retention_s;
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->wake, NULL);
  if (retention_s <= 0 || pthread_create(&x->thread, NULL, sweep, x) != 0) {
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->wake);
    free(x);
    return NULL;
  }
  return x;
}

void ux_expiry_stop(ux_expiry *x) {
  if (!x) return;
  pthread_mutex_lock(&x->mu);
  x->stopping = 1;
  pthread_cond_signal(&x->wake);
  pthread_mutex_unlock(&x->mu);
  pthread_join(x->thread, NULL);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->wake);
  free(x);
}
