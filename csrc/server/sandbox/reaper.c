/*
** What is left of a finished run, released in the background: its
** cgroup, scratch volume and run directory, slot and fds (ux_run_free).
** By then every process of the run is gone (ux_run_wait_detached returns
** only after that), so nothing here can affect the program or its
** result; a caller that answers a client (a job) does so a fraction of a
** millisecond sooner. One thread, started with the first run queued,
** frees runs in order; ux_runner_reaper_flush waits until the queue is
** empty (the shutdown does, before the server's cgroups go).
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/sandbox/run_object.h"

static struct {
  pthread_mutex_t lock;
  pthread_cond_t work, idle;
  ux_run *head, *tail;
  int started, busy;
  pthread_t thread;
} q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
        NULL, NULL, 0, 0, 0 };

static void *reaper(void *arg) {
  (void)arg;
  /* cleaning up can wait for the runs going on (Linux: the nice value of
  ** this thread alone); it starts no process */
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0) { /* runs at 0 */ }
  pthread_mutex_lock(&q.lock);
  for (;;) {
    while (!q.head) pthread_cond_wait(&q.work, &q.lock);
    ux_run *r = q.head;
    q.head = r->next;
    if (!q.head) q.tail = NULL;
    q.busy = 1;
    pthread_mutex_unlock(&q.lock);
    ux_run_free(r);
    pthread_mutex_lock(&q.lock);
    q.busy = 0;
    if (!q.head) pthread_cond_broadcast(&q.idle);
  }
  return NULL;
}

void ux_reaper_free(ux_run *r) {
  pthread_mutex_lock(&q.lock);
  if (!q.started) {
    pthread_attr_t a;
    int ok = pthread_attr_init(&a) == 0 &&
             pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
             pthread_create(&q.thread, &a, reaper, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!ok) {                   /* no thread: free it here, as ux_run_wait does */
      pthread_mutex_unlock(&q.lock);
      ux_run_free(r);
      return;
    }
    q.started = 1;
  }
  r->next = NULL;                /* unregistered: the link is free */
  if (q.tail) q.tail->next = r; else q.head = r;
  q.tail = r;
  pthread_cond_signal(&q.work);
  pthread_mutex_unlock(&q.lock);
}

void ux_runner_reaper_flush(void) {
  pthread_mutex_lock(&q.lock);
  while (q.head || q.busy) pthread_cond_wait(&q.idle, &q.lock);
  pthread_mutex_unlock(&q.lock);
}
