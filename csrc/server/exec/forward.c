/*
** Forwarded ports (forward.h). Only the forwarder's thread closes a
** listener or a connection: ux_fwd_close marks the service and waits until
** the thread has let go of its sockets, so no fd is ever closed while
** the thread polls it. The thread makes each upstream socket inside the
** service's network namespace (setns on itself, then back): a socket
** stays in the namespace it was made in.
*/
#include "server/exec/forward.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/mem.h"

#define BUF (64 * 1024)

typedef struct fsvc {
  char id[64];
  int netns;
  int lfd[UX_FWD_PORTS], port[UX_FWD_PORTS];
  size_t n;
  int conns;                  /* open connections */
  int closing, closed;        /* asked to close; the thread let go */
  struct fsvc *next;
} fsvc;

typedef struct half {         /* bytes read from one side, for the other */
  char data[BUF];
  size_t len, off;
  int eof;                    /* its source said EOF */
  int shut;                   /* and that was passed on */
} half;

typedef struct conn {
  fsvc *svc;
  int c, u;                   /* the client's socket, the upstream one */
  int connecting;
  half cu, uc;                /* client to upstream, upstream to client */
} conn;

struct ux_fwd {
  pthread_mutex_t mu;
  pthread_cond_t closed;
  fsvc *svcs;
  conn *conns[UX_FWD_ALL];
  size_t nconns;
  int wake, stop, self_ns;
  ux_fwd_admit admit;
  void *ctx;
  pthread_t thread;
};

static void wake(ux_fwd *f) {
  uint64_t one = 1;
  if (write(f->wake, &one, sizeof one) < 0) { /* already pending */ }
}

/* ------------------------------------------------------ connections */

/* A socket in the service's namespace, connecting to 127.0.0.1:port. */
static int upstream(ux_fwd *f, fsvc *s, int port) {
  if (setns(s->netns, CLONE_NEWNET) != 0) return -1;
  int u = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (setns(f->self_ns, CLONE_NEWNET) != 0) {
    fprintf(stderr, "unsandboxd: forwarder: cannot return to the server's network namespace\n");
  }
  if (u < 0) return -1;
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  if (connect(u, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
    close(u);
    return -1;
  }
  return u;
}

static void accept_one(ux_fwd *f, fsvc *s, size_t i) {
  int c = accept4(s->lfd[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (c < 0) return;
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int u = -1;
  if (f->nconns < UX_FWD_ALL && s->conns < UX_FWD_CONNS && f->admit(f->ctx, s->id))
    u = upstream(f, s, s->port[i]);
  conn *k = u >= 0 ? calloc(1, sizeof *k) : NULL;
  if (!k) {                           /* refused: the client sees the close */
    if (u >= 0) close(u);
    close(c);
    return;
  }
  setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *k = (conn){ .svc = s, .c = c, .u = u, .connecting = 1 };
  s->conns++;
  f->conns[f->nconns++] = k;
}

static void drop(ux_fwd *f, size_t i) {
  conn *k = f->conns[i];
  close(k->c);
  close(k->u);
  k->svc->conns--;
  free(k);
  f->conns[i] = f->conns[--f->nconns];
}

/* Reads from `from` into h; 0, or -1 on an error. */
static int fill(int from, half *h) {
  if (h->eof || h->len == BUF) return 0;
  ssize_t n = read(from, h->data + h->len, BUF - h->len);
  if (n > 0) h->len += (size_t)n;
  else if (n == 0) h->eof = 1;
  else if (errno != EAGAIN && errno != EINTR) return -1;
  return 0;
}

/* Writes h's bytes to `to`; passes an EOF on once they are out. */
static int flush_half(int to, half *h) {
  while (h->off < h->len) {
    ssize_t n = send(to, h->data + h->off, h->len - h->off, MSG_NOSIGNAL);
    if (n > 0) { h->off += (size_t)n; continue; }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    return -1;
  }
  h->len = h->off = 0;
  if (h->eof && !h->shut) { shutdown(to, SHUT_WR); h->shut = 1; }
  return 0;
}

/* One connection after poll: 0 keeps it, -1 drops it. */
static int step(conn *k, short crev, short urev) {
  if (k->connecting) {
    if (!urev) return 0;
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(k->u, SOL_SOCKET, SO_ERROR, &e, &len) != 0 || e != 0) return -1;
    k->connecting = 0;
  }
  if ((crev & (POLLIN | POLLHUP | POLLERR)) && fill(k->c, &k->cu) < 0) return -1;
  if ((urev & (POLLIN | POLLHUP | POLLERR)) && fill(k->u, &k->uc) < 0) return -1;
  if (flush_half(k->u, &k->cu) < 0 || flush_half(k->c, &k->uc) < 0) return -1;
  return k->cu.shut && k->uc.shut ? -1 : 0;
}

/* ------------------------------------------------------------ thread */

static short wants(const half *in, const half *out) {
  return (short)((!in->eof && in->len < BUF ? POLLIN : 0) | (out->len > out->off ? POLLOUT : 0));
}

/* Lets go of the services asked to close (mu held). */
static void reap_closing(ux_fwd *f) {
  for (size_t i = f->nconns; i-- > 0;)
    if (f->conns[i]->svc->closing) drop(f, i);
  for (fsvc **p = &f->svcs; *p;) {
    fsvc *s = *p;
    if (!s->closing) { p = &s->next; continue; }
    *p = s->next;
    for (size_t i = 0; i < s->n; i++) close(s->lfd[i]);
    close(s->netns);
    s->closed = 1;
    pthread_cond_broadcast(&f->closed);
  }
}

static void *run(void *arg) {
  ux_fwd *f = arg;
  struct pollfd pf[1 + UX_FWD_ALL * 2 + 64 * UX_FWD_PORTS];
  void *who[sizeof pf / sizeof pf[0]];
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    reap_closing(f);
    size_t n = 0;
    pf[n] = (struct pollfd){ f->wake, POLLIN, 0 };
    who[n++] = NULL;
    for (fsvc *s = f->svcs; s; s = s->next)
      for (size_t i = 0; i < s->n && n + 2 < sizeof pf / sizeof pf[0]; i++) {
        pf[n] = (struct pollfd){ s->lfd[i], POLLIN, 0 };
        who[n++] = s;
      }
    size_t first = n;
    for (size_t i = 0; i < f->nconns; i++) {
      conn *k = f->conns[i];
      pf[n++] = (struct pollfd){ k->c, wants(&k->cu, &k->uc), 0 };
      pf[n++] = (struct pollfd){ k->u, k->connecting ? POLLOUT : wants(&k->uc, &k->cu), 0 };
    }
    pthread_mutex_unlock(&f->mu);
    if (poll(pf, (nfds_t)n, 1000) < 0 && errno != EINTR) usleep(10000);
    pthread_mutex_lock(&f->mu);
    uint64_t v;
    if (pf[0].revents && read(f->wake, &v, sizeof v) < 0) { /* drained */ }
    /* the lists only change on this thread or by adding: indexes hold */
    size_t nc = f->nconns;
    for (size_t i = nc; i-- > 0;)
      if (first + 2 * i + 1 < n && step(f->conns[i], pf[first + 2 * i].revents, pf[first + 2 * i + 1].revents) < 0)
        drop(f, i);
    for (size_t j = 1; j < first; j++) {
      fsvc *s = who[j];
      if (!pf[j].revents || s->closing) continue;
      for (size_t i = 0; i < s->n; i++)
        if (s->lfd[i] == pf[j].fd) accept_one(f, s, i);
    }
  }
  while (f->nconns) drop(f, f->nconns - 1);
  for (fsvc *s = f->svcs; s; s = s->next) s->closing = 1;
  reap_closing(f);
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

ux_fwd *ux_fwd_new(ux_fwd_admit admit, void *ctx) {
  ux_fwd *f = ux_xcalloc(1, sizeof *f);
  f->admit = admit;
  f->ctx = ctx;
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->closed, NULL);
  f->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  f->self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (f->wake < 0 || f->self_ns < 0 || pthread_create(&f->thread, NULL, run, f) != 0) {
    if (f->wake >= 0) close(f->wake);
    if (f->self_ns >= 0) close(f->self_ns);
    free(f);
    return NULL;
  }
  return f;
}

void ux_fwd_free(ux_fwd *f) {
  if (!f) return;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_mutex_unlock(&f->mu);
  wake(f);
  pthread_join(f->thread, NULL);
  close(f->wake);
  close(f->self_ns);
  pthread_cond_destroy(&f->closed);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* A listening socket on 127.0.0.1, any port: its fd and *port, or -1. */
static int listen_loopback(int *port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0) {
    if (s >= 0) close(s);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return s;
}

int ux_fwd_open(ux_fwd *f, const char *id, int netns, const int *ports, size_t n,
                int *host_ports, char *err, size_t errlen) {
  ux_fwd_close(f, id);
  fsvc *s = ux_xcalloc(1, sizeof *s);
  snprintf(s->id, sizeof s->id, "%s", id);
  s->netns = netns;
  for (size_t i = 0; i < n && i < UX_FWD_PORTS; i++) {
    if ((s->lfd[i] = listen_loopback(&host_ports[i])) < 0) {
      snprintf(err, errlen, "cannot listen on 127.0.0.1 for port %d: %s", ports[i], strerror(errno));
      while (i-- > 0) close(s->lfd[i]);
      close(netns);
      free(s);
      return -1;
    }
    s->port[i] = ports[i];
    s->n++;
  }
  pthread_mutex_lock(&f->mu);
  s->next = f->svcs;
  f->svcs = s;
  pthread_mutex_unlock(&f->mu);
  wake(f);
  return 0;
}

void ux_fwd_close(ux_fwd *f, const char *id) {
  pthread_mutex_lock(&f->mu);
  for (;;) {
    fsvc *s = f->svcs;
    while (s && (s->closing || strcmp(s->id, id) != 0)) s = s->next;
    if (!s) break;
    s->closing = 1;
    wake(f);
    while (!s->closed) pthread_cond_wait(&f->closed, &f->mu);
    free(s);
  }
  pthread_mutex_unlock(&f->mu);
}
