/*
** The shared event loop (see loop.h). Three small tables: the watched
** sockets (a flat array: an engine holds at most max_concurrency
** connections, so a linear search beats anything cleverer), the timers
** (a binary min-heap: thousands of tasks may each wait for a poll), and
** the queue of tokens. A step copies the ready sockets out before acting
** on them, because acting (libcurl) changes the socket table under it.
*/
#include "core/loop.h"
#include "core/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int fd;
  short events;
  unsb_loop_source *src;
} watch;

typedef struct {
  int64_t due;
  unsb_token tok;
} timer;

struct unsb_loop {
  int refs;
  int busy;
  int oom;                        /* a callback could not record something */
  int signalled;                  /* a signal cut a poll short */
  unsigned round;                 /* steps taken, to kick each source once per step */
  unsb_loop_source *sources;
  watch *w;
  size_t nw, cw;
  struct pollfd *pfd;             /* scratch for poll(2), cw entries */
  timer *t;
  size_t nt, ct;
  unsb_token *ev;
  size_t nev, cev;
};

unsb_loop *unsb_loop_new(unsb_error *err) {
  unsb_loop *l = calloc(1, sizeof *l);
  if (!l) {
    unsb_fail(err, UNSB_ENOMEM, "out of memory");
    return NULL;
  }
  l->refs = 1;
  return l;
}

unsb_loop *unsb_loop_ref(unsb_loop *l) {
  l->refs++;
  return l;
}

void unsb_loop_unref(unsb_loop *l) {
  if (!l || --l->refs > 0) return;
  free(l->w);
  free(l->pfd);
  free(l->t);
  free(l->ev);
  free(l);
}

/* Grows an array of n used elements to hold one more; 0 or -1. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 16;
  void *p = realloc(*arr, c * elem);
  if (!p) return -1;
  *arr = p;
  *cap = c;
  return 0;
}

/* ---------------------------------------------------------------------
** sources and sockets
** ------------------------------------------------------------------- */

void unsb_loop_add(unsb_loop *l, unsb_loop_source *s) {
  unsb_loop_ref(l);
  s->prev = NULL;
  s->next = l->sources;
  if (l->sources) l->sources->prev = s;
  l->sources = s;
}

void unsb_loop_remove(unsb_loop *l, unsb_loop_source *s) {
  for (size_t i = 0; i < l->nw;) {
    if (l->w[i].src == s) l->w[i] = l->w[--l->nw];
    else i++;
  }
  if (s->prev) s->prev->next = s->next;
  else if (l->sources == s) l->sources = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = NULL;
  unsb_loop_unref(l);
}

static watch *find(const unsb_loop *l, int fd) {
  for (size_t i = 0; i < l->nw; i++)
    if (l->w[i].fd == fd) return &l->w[i];
  return NULL;
}

int unsb_loop_watch(unsb_loop *l, unsb_loop_source *s, int fd, short events) {
  watch *w = find(l, fd);
  if (events == 0) {
    if (w && w->src == s) *w = l->w[--l->nw];
    return 0;
  }
  if (w) {                       /* a descriptor number reused by another engine */
    w->events = events;
    w->src = s;
    return 0;
  }
  if (grow((void **)&l->w, &l->cw, l->nw, sizeof *l->w) != 0) {
    l->oom = 1;
    return -1;
  }
  struct pollfd *p = realloc(l->pfd, l->cw * sizeof *p);
  if (!p) {
    l->oom = 1;
    return -1;
  }
  l->pfd = p;
  l->w[l->nw++] = (watch){ fd, events, s };
  return 0;
}

void unsb_loop_enter(unsb_loop *l) { l->busy++; }
void unsb_loop_leave(unsb_loop *l) { l->busy--; }
int unsb_loop_busy(const unsb_loop *l) { return l->busy > 0; }

/* ---------------------------------------------------------------------
** timers: a binary min-heap on due
** ------------------------------------------------------------------- */

static void sift_up(timer *t, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (t[p].due <= t[i].due) break;
    timer x = t[p];
    t[p] = t[i];
    t[i] = x;
    i = p;
  }
}

static void sift_down(timer *t, size_t n, size_t i) {
  for (;;) {
    size_t a = 2 * i + 1, b = a + 1, m = i;
    if (a < n && t[a].due < t[m].due) m = a;
    if (b < n && t[b].due < t[m].due) m = b;
    if (m == i) return;
    timer x = t[m];
    t[m] = t[i];
    t[i] = x;
    i = m;
  }
}

int unsb_loop_timer(unsb_loop *l, int64_t due_ms, unsb_token tok, unsb_error *err) {
  if (grow((void **)&l->t, &l->ct, l->nt, sizeof *l->t) != 0)
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  l->t[l->nt] = (timer){ due_ms, tok };
  sift_up(l->t, l->nt++);
  return 0;
}

void unsb_loop_timer_cancel(unsb_loop *l, unsb_token tok) {
  for (size_t i = 0; i < l->nt;) {
    if (l->t[i].tok != tok) {
      i++;
      continue;
    }
    l->t[i] = l->t[--l->nt];
    if (i < l->nt) {             /* the moved one may belong above or below */
      sift_down(l->t, l->nt, i);
      sift_up(l->t, i);
    }
    i = 0;                       /* positions changed: look again from the top */
  }
}

size_t unsb_loop_timers(const unsb_loop *l) { return l->nt; }

static void fire_timers(unsb_loop *l, int64_t now) {
  while (l->nt > 0 && l->t[0].due <= now) {
    unsb_token tok = l->t[0].tok;
    l->t[0] = l->t[--l->nt];
    sift_down(l->t, l->nt, 0);
    unsb_loop_notify(l, tok);
  }
}

/* ---------------------------------------------------------------------
** tokens
** ------------------------------------------------------------------- */

int unsb_loop_notify(unsb_loop *l, unsb_token tok) {
  if (tok == 0 || (l->nev > 0 && l->ev[l->nev - 1] == tok)) return 0;
  if (grow((void **)&l->ev, &l->cev, l->nev, sizeof *l->ev) != 0) {
    l->oom = 1;
    return -1;
  }
  l->ev[l->nev++] = tok;
  return 0;
}

size_t unsb_loop_take(unsb_loop *l, unsb_token *out, size_t max) {
  size_t n = l->nev < max ? l->nev : max;
  if (n == 0) return 0;                  /* l->ev may still be NULL: no memcpy from it */
  memcpy(out, l->ev, n * sizeof *out);
  memmove(l->ev, l->ev + n, (l->nev - n) * sizeof *l->ev);
  l->nev -= n;
  return n;
}

size_t unsb_loop_pending(const unsb_loop *l) { return l->nev; }

/* ---------------------------------------------------------------------
** driving
** ------------------------------------------------------------------- */

long unsb_loop_timeout(const unsb_loop *l) {
  int64_t due = -1, now = unsb_monotonic_ms();
  for (const unsb_loop_source *s = l->sources; s; s = s->next)
    if (s->due_ms >= 0 && (due < 0 || s->due_ms < due)) due = s->due_ms;
  if (l->nt > 0 && (due < 0 || l->t[0].due < due)) due = l->t[0].due;
  if (due < 0) return -1;
  return due <= now ? 0 : (long)(due - now);
}

int unsb_loop_signalled(unsb_loop *l) {
  int s = l->signalled;
  l->signalled = 0;
  return s;
}

int unsb_loop_watching(const unsb_loop *l, int fd) { return find(l, fd) != NULL; }

size_t unsb_loop_fds(const unsb_loop *l, unsb_loop_fd *out, size_t max) {
  for (size_t i = 0; i < l->nw && i < max; i++) {
    out[i].fd = l->w[i].fd;
    out[i].events = l->w[i].events;
  }
  return l->nw;
}

/* Lets the source of each ready socket act. The table may change while
** they do, so the ready ones are copied out first (into the front of
** pfd, which poll no longer needs) and each is looked up again. */
static void dispatch(unsb_loop *l, size_t n) {
  size_t ready = 0;
  for (size_t i = 0; i < n; i++)
    if (l->pfd[i].revents) l->pfd[ready++] = l->pfd[i];
  for (size_t i = 0; i < ready; i++) {
    watch *w = find(l, l->pfd[i].fd);
    if (w) w->src->on_fd(w->src, w->fd, l->pfd[i].revents);
  }
}

/* Each due source is kicked once per round (libcurl may ask for another
** kick "now" from inside one); the walk restarts after each kick, since a
** kick could change the list. */
static void kick_due(unsb_loop *l, int64_t now) {
  int again = 1;
  l->round++;
  while (again) {
    again = 0;
    for (unsb_loop_source *s = l->sources; s; s = s->next) {
      if (s->due_ms < 0 || s->due_ms > now || s->round == l->round) continue;
      s->round = l->round;
      s->due_ms = -1;
      s->on_due(s);
      again = 1;
      break;
    }
  }
}

int unsb_loop_step(unsb_loop *l, long wait_ms, unsb_error *err) {
  if (l->busy)
    return unsb_fail(err, UNSB_EVALIDATION,
                     "the HTTP engine is busy: a request from inside a transfer's callback");
  long t = unsb_loop_timeout(l);
  if (t < 0 || t > wait_ms) t = wait_ms < 0 ? 0 : wait_ms;
  size_t n = l->nw;
  for (size_t i = 0; i < n; i++) {
    l->pfd[i].fd = l->w[i].fd;
    l->pfd[i].events = l->w[i].events;
    l->pfd[i].revents = 0;
  }
  int rc = poll(n ? l->pfd : NULL, (nfds_t)n, (int)t);
  if (rc > 0) dispatch(l, n);
  else if (rc < 0 && errno == EINTR) l->signalled = 1;
  int64_t now = unsb_monotonic_ms();
  kick_due(l, now);
  fire_timers(l, now);
  if (l->oom) {
    l->oom = 0;
    return unsb_fail(err, UNSB_ENOMEM, "out of memory in the event loop");
  }
  return 0;                      /* rc < 0 is EINTR: a round without activity */
}
