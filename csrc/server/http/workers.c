/*
** The threads that header checks and handlers run on (ux_http_thread_run).
** A thread made per request cost about a fifth of a millisecond of every
** request here: the clone, and on exit the stack's pages given back, to
** be faulted in again by the next thread. So a thread whose work is done
** waits for the next piece instead, up to UX_HTTP_IDLE_THREADS of them for
** UX_HTTP_IDLE_MS each; past that it ends. How many run at once is still
** threads.c's rule; this only decides which thread a piece runs on.
**
** A piece is handed to a waiting thread only when there are more waiting
** threads than pieces handed out and not yet taken, so every piece
** handed out is taken: a waiting thread leaves only when it finds none,
** under the same lock. The state is the process's (no listener owns a
** thread), and a thread never touches a listener after its piece.
*/
#include "server/http/http_int.h"

#include <errno.h>
#include <time.h>

#include "server/mem.h"

typedef struct piece {
  void *(*fn)(void *);
  void *arg;
  struct piece *next;
} piece;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;   /* a piece was handed out */
static piece *head, *tail;
static unsigned waiting, handed;   /* threads waiting; pieces not yet taken */

/* The next piece for a thread that has finished one, or NULL when it
** should end (enough threads wait already, or none came in time). */
static piece *next_piece(void) {
  pthread_mutex_lock(&mu);
  if (waiting >= UX_HTTP_IDLE_THREADS) {
    pthread_mutex_unlock(&mu);
    return NULL;
  }
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += UX_HTTP_IDLE_MS / 1000;
  until.tv_nsec += (UX_HTTP_IDLE_MS % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  waiting++;
  int rc = 0;
  while (!head && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&more, &mu, &until);
  waiting--;
  piece *p = head;
  if (p) {
    head = p->next;
    if (!head) tail = NULL;
    handed--;
  }
  pthread_mutex_unlock(&mu);
  return p;
}

static void *worker(void *arg) {
  for (piece *p = arg; p; p = next_piece()) {
    void *(*fn)(void *) = p->fn;
    void *fn_arg = p->arg;
    free(p);
    fn(fn_arg);
  }
  return NULL;
}

int ux_http_thread_run(void *(*fn)(void *), void *arg) {
  piece *p = ux_xmalloc(sizeof *p);
  p->fn = fn;
  p->arg = arg;
  p->next = NULL;
  pthread_mutex_lock(&mu);
  if (waiting > handed) {
    if (tail) tail->next = p; else head = p;
    tail = p;
    handed++;
    pthread_cond_signal(&more);
    pthread_mutex_unlock(&mu);
    return 0;
  }
  pthread_mutex_unlock(&mu);
  pthread_attr_t a;
  pthread_t t;
  int ok = pthread_attr_init(&a) == 0;
  if (ok) {
    ok = pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
         pthread_attr_setstacksize(&a, UX_HTTP_HANDLER_STACK) == 0 &&
         pthread_create(&t, &a, worker, p) == 0;
    pthread_attr_destroy(&a);
  }
  if (!ok) free(p);
  return ok ? 0 : -1;
}
