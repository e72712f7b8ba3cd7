/*
** The handler threads (workers.c): a thread that finished a piece runs the
** next one instead of a new thread being made; pieces that block run all
** at once, each on its own thread; after a burst, no more than
** UX_HTTP_IDLE_THREADS threads stay waiting.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_int.h"
#include "tests/tap.h"

#define BURST 40

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, done, release;
static pthread_t seen;

static void *note_self(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  seen = pthread_self();
  done++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* Waits until all BURST pieces have started (each holds its thread). */
static void *hold(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  started++;
  pthread_cond_broadcast(&cv);
  while (!release) pthread_cond_wait(&cv, &mu);
  done++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* Waits (bounded: 10 s) until *counter reaches n. */
static int wait_for(int *counter, int n) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < 1000 && *counter < n; i++) {
    pthread_mutex_unlock(&mu);
    t_sleep_ms(10);
    pthread_mutex_lock(&mu);
  }
  int ok = *counter >= n;
  pthread_mutex_unlock(&mu);
  return ok;
}

int main(void) {
  ok(ux_http_thread_run(note_self, NULL) == 0 && wait_for(&done, 1), "a piece runs");
  pthread_t first = seen;
  /* the thread needs a moment to start waiting for the next piece */
  int reused = 0;
  for (int i = 0; i < 20 && !reused; i++) {
    t_sleep_ms(20);
    int want = done + 1;
    ok(ux_http_thread_run(note_self, NULL) == 0 && wait_for(&done, want), "piece %d runs", want);
    reused = pthread_equal(seen, first);
    first = seen;
  }
  ok(reused, "a thread done with its piece runs the next one");

  int base = t_threads();
  done = 0;
  for (int i = 0; i < BURST; i++) ok(ux_http_thread_run(hold, NULL) == 0, "blocking piece %d handed out", i);
  ok(wait_for(&started, BURST), "all %d blocking pieces run at once (%d started)", BURST, started);
  pthread_mutex_lock(&mu);
  release = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  ok(wait_for(&done, BURST), "and all end");
  int left = -1;
  for (int i = 0; i < 200; i++) {
    left = t_threads();
    if (left <= base + (int)UX_HTTP_IDLE_THREADS) break;
    t_sleep_ms(10);
  }
  ok(left >= 0 && left <= base + (int)UX_HTTP_IDLE_THREADS,
     "after the burst at most %u threads wait (%d threads, %d before)", UX_HTTP_IDLE_THREADS, left, base);
  return tap_done();
}
