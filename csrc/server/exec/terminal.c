/*
** GET /sessions/{id}/shell: the WebSocket terminal of spec §5.4, the
** session's half. Authentication is the router's, as for every session
** route (with --lenient an unsigned handshake is taken for a session id
** that exists: the reference CLI sends no auth headers, the id is then
** the capability); then, all answered as plain HTTP before any upgrade:
** 404 for a session that is not the key's, 409 while it is frozen,
** 400/426 for a bad handshake, 429/503 over the terminal caps.
**
** The terminal attaches to the living session (living.h): the agent runs
** the session's shell (its REPL, inside its multiplexer when it has one)
** on a pseudo-terminal of the sandbox's own devpts and hands the master
** back over a socket (agent op `terminal`), so the shell and whatever it
** starts live in the session's sandbox, its cgroup and its namespaces;
** this side relays master and WebSocket (http/ws_relay.c). The agent call
** is made and waited on a shell thread (kept, parked, for the next
** terminals) that signals its end on an eventfd, while the request's
** thread relays. When the relay ends for any reason the call is
** cancelled (the agent hangs the terminal up: its program ends, what left
** its process group lives on in the session) and the socket is given
** back. A multiplexer's client that leaves a session that lives on is
** reported "detached"; re-attaching finds it.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "core/ws/ws.h"
#include "server/exec/living.h"
#include "server/exec/routes.h"
#include "server/exec/shells.h"
#include "server/fsutil.h"
#include "server/http/upgrade.h"
#include "server/http/ws_relay.h"
#include "server/store/store.h"

/* Terminals open at once, in all and per key. */
#define TERM_MAX 32
#define TERM_PER_KEY 4
/* The shell's hard limit; the idle timeout (the session's ttl) ends it sooner. */
#define TERM_CALL_MS (86400 * 1000)
/* How long the agent may take to hand the terminal over. */
#define HANDOVER_MS 20000

/* ------------------------------------------------------------- the caps */

static pthread_mutex_t caps_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { char owner[128]; int n; } caps[TERM_MAX];
static int caps_total;

/* 0 claimed; else the status to answer (429 this key, 503 everyone). */
static int claim(const char *owner) {
  int rc = 0, free_i = -1, mine = -1;
  pthread_mutex_lock(&caps_mu);
  for (int i = 0; i < TERM_MAX; i++) {
    if (caps[i].n && !strcmp(caps[i].owner, owner)) mine = i;
    else if (!caps[i].n && free_i < 0) free_i = i;
  }
  if (caps_total >= TERM_MAX) rc = 503;
  else if (mine >= 0 && caps[mine].n >= TERM_PER_KEY) rc = 429;
  else {
    if (mine < 0) {
      mine = free_i;                           /* there is one: total < TERM_MAX */
      snprintf(caps[mine].owner, sizeof caps[mine].owner, "%s", owner);
    }
    caps[mine].n++;
    caps_total++;
  }
  pthread_mutex_unlock(&caps_mu);
  return rc;
}

static void unclaim(const char *owner) {
  pthread_mutex_lock(&caps_mu);
  for (int i = 0; i < TERM_MAX; i++)
    if (caps[i].n && !strcmp(caps[i].owner, owner)) {
      caps[i].n--;
      caps_total--;
      break;
    }
  pthread_mutex_unlock(&caps_mu);
}

/* ------------------------------------------------------------ the shell */

typedef struct term {
  ux_rt *rt;                  /* the session's runtime, held */
  json_t *req;                /* the agent's terminal request */
  const char *mux;            /* the session's multiplexer, or NULL */
  int data[2];                /* [0] ours: the master arrives there */
  int master, done_fd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int cancel;                 /* the relay is over: end the call */
  int finished;               /* its shell thread is done with it */
  int code;                   /* for the relay's exit_code */
} term;

static int call_stop(void *ctx, const json_t *ev) {
  term *t = ctx;
  (void)ev;
  pthread_mutex_lock(&t->mu);
  int stop = t->cancel;
  pthread_mutex_unlock(&t->mu);
  return stop;
}

/* After a multiplexer's client exited by itself: whether its session
** still lives (it was detached), asked through the agent. */
static int still_there(term *t) {
  char err[200], cmd[64];
  snprintf(cmd, sizeof cmd, "%s has-session -t main", t->mux);
  if (!strcmp(t->mux, "screen")) snprintf(cmd, sizeof cmd, "screen -ls main");
  json_t *req = json_pack("{s:s, s:s, s:i}", "op", "exec", "command", cmd, "timeout_seconds", 10), *res = NULL;
  int rc = ux_rt_call(t->rt, req, 0, 20000, NULL, NULL, &res, err, sizeof err);
  int there = rc == UX_RTC_OK && json_integer_value(json_object_get(res, "exit_code")) == 0;
  json_decref(req);
  json_decref(res);
  return there;
}

static void shell_main(term *t) {
  char err[300];
  json_t *res = NULL;
  int rc = ux_rt_call(t->rt, t->req, t->data[1], TERM_CALL_MS, call_stop, t, &res, err, sizeof err);
  long long code = json_integer_value(json_object_get(res, "exit_code"));
  json_decref(res);
  int cancelled = call_stop(t, NULL);
  /* a shell that ended by a signal reports 128+N as shells do; a call
  ** that ended otherwise was the session's end (deleted, restored) */
  int c = rc != UX_RTC_OK ? -1 : code < 0 ? (int)(128 - code) : (int)code;
  if (rc == UX_RTC_OK && t->mux && !cancelled && still_there(t)) c = UX_WS_RELAY_DETACHED;
  uint64_t one = 1;
  pthread_mutex_lock(&t->mu);
  t->code = c;
  pthread_mutex_unlock(&t->mu);
  if (write(t->done_fd, &one, sizeof one) < 0)
    fprintf(stderr, "unsandboxd: terminal: cannot signal the shell's end: %s\n", strerror(errno));
  pthread_mutex_lock(&t->mu);
  t->finished = 1;                             /* t is term_end's from here */
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* The shell threads: started on demand, at most TERM_MAX, never ending:
** a thread per terminal for as long as its call lasts, kept (parked)
** rather than made anew, which spares a thread start per attach. */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static term *pool_queue[TERM_MAX];
static int pool_head, pool_len, pool_threads, pool_idle;

static void *pool_main(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&pool_mu);
    pool_idle++;
    while (!pool_len) pthread_cond_wait(&pool_cv, &pool_mu);
    pool_idle--;
    term *t = pool_queue[pool_head];
    pool_head = (pool_head + 1) % TERM_MAX;
    pool_len--;
    pthread_mutex_unlock(&pool_mu);
    shell_main(t);
  }
  return NULL;
}

/* Hands t to a shell thread (a parked one, else a new one); -1 when none
** can be had. Callers hold a terminal claim, so at most TERM_MAX wait. */
static int pool_submit(term *t) {
  int rc = 0;
  pthread_mutex_lock(&pool_mu);
  if (pool_idle <= pool_len) {                  /* every parked one is spoken for */
    pthread_attr_t a;
    pthread_t th;
    rc = -1;
    if (pool_threads < TERM_MAX && pthread_attr_init(&a) == 0) {
      if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
          pthread_create(&th, &a, pool_main, NULL) == 0) {
        pool_threads++;
        rc = 0;
      }
      pthread_attr_destroy(&a);
    }
  }
  if (rc == 0) {
    pool_queue[(pool_head + pool_len) % TERM_MAX] = t;
    pool_len++;
    pthread_cond_signal(&pool_cv);
  }
  pthread_mutex_unlock(&pool_mu);
  return rc;
}

static int exit_code(void *ctx) {
  term *t = ctx;
  pthread_mutex_lock(&t->mu);
  int c = t->code;
  pthread_mutex_unlock(&t->mu);
  return c;
}

static void term_free(term *t) {
  if (t->master >= 0) close(t->master);
  for (int i = 0; i < 2; i++) if (t->data[i] >= 0) close(t->data[i]);
  if (t->done_fd >= 0) close(t->done_fd);
  if (t->rt) ux_rt_put(t->rt);
  json_decref(t->req);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* The master end the agent sends, once it runs the shell: a PTY master
** (checked: it comes from inside the sandbox) or -1 when the call ended
** first or nothing came within HANDOVER_MS. */
static int receive_master(term *t) {
  struct pollfd p[2] = { { t->data[0], POLLIN, 0 }, { t->done_fd, POLLIN, 0 } };
  if (poll(p, 2, HANDOVER_MS) <= 0 || !(p[0].revents & POLLIN)) return -1;
  char byte, cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = { &byte, 1 };
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
  if (recvmsg(t->data[0], &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) != 1 || (m.msg_flags & MSG_CTRUNC)) return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  int fd = -1, n;
  struct stat st;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || ioctl(fd, TIOCGPTN, &n) != 0)) {
    close(fd);                                 /* not a terminal's master */
    fd = -1;
  }
  if (fd >= 0 && fcntl(fd, F_SETFL, O_RDWR | O_NONBLOCK) != 0) { close(fd); fd = -1; }
  return fd;
}

/* The agent's request: the session's shell (in its multiplexer). */
static json_t *terminal_request(json_t *doc) {
  const char *shell = json_string_value(json_object_get(doc, "shell"));
  const char *mux = json_string_value(json_object_get(doc, "multiplexer"));
  json_t *argv = ux_terminal_argv(shell, mux);
  if (!argv) return NULL;
  return json_pack("{s:s, s:o, s:i, s:i, s:{s:s}}", "op", "terminal", "argv", argv, "cols", 80, "rows", 24,
                   "env", "TERM", "xterm-256color");
}

static term *term_new(void) {
  term *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->master = t->done_fd = t->data[0] = t->data[1] = -1;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  return t;
}

/* Takes the session's sandbox (starting it when it has none), asks its
** agent for the terminal and waits for the master. NULL after setting
** the reply. */
static term *term_start(ux_req *r, const char *id, json_t *doc) {
  char err[300] = "";
  int rc = 0;
  term *t = term_new();
  if (!t) return ux_reply_error(r, 500, "internal_error", "out of memory"), NULL;
  const char *mux = json_string_value(json_object_get(doc, "multiplexer"));
  t->mux = mux && !strcmp(mux, "screen") ? "screen" : mux ? "tmux" : NULL;
  if (!(t->req = terminal_request(doc))) {
    term_free(t);
    return ux_reply_error(r, 500, "internal_error", "the session's shell is not available here"), NULL;
  }
  if (!(t->rt = ux_living_session(r->srv, id, doc, &rc, err, sizeof err))) {
    term_free(t);
    if (rc == -2) return ux_reply_no_memory(r, err), NULL;
    if (rc == -3) return ux_reply_error(r, 404, "not_found", "no such session"), NULL;
    return ux_reply_error(r, 500, "internal_error", "the session's sandbox is not running: %s", err), NULL;
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, t->data) != 0 ||
      (t->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    term_free(t);
    return ux_reply_error(r, 500, "internal_error", "cannot make the terminal's sockets"), NULL;
  }
  if (pool_submit(t) != 0) {
    term_free(t);
    ux_reply_error(r, 503, "server_busy", "cannot start a thread for the terminal");
    r->reply.retry_after = 1;
    return NULL;
  }
  if ((t->master = receive_master(t)) >= 0) return t;
  pthread_mutex_lock(&t->mu);
  t->cancel = 1;
  while (!t->finished) pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
  term_free(t);
  return ux_reply_error(r, 500, "internal_error", "the session's shell did not start"), NULL;
}

/* Ends the shell (a detach, a closed socket or any other end), waits for
** its thread and frees everything. */
static void term_end(term *t) {
  /* the hangup: closing the master ends the program at once (its call
  ** then answers); cancel, for one that ignores it, within 250 ms */
  if (t->master >= 0) close(t->master);
  t->master = -1;
  pthread_mutex_lock(&t->mu);
  t->cancel = 1;
  while (!t->finished) pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
  term_free(t);
}

/* ------------------------------------------------------------ the route */

/* 0 when r is a valid WebSocket handshake (accept filled), else -1 with a
** 400 or 426 reply. */
static int handshake(ux_req *r, char accept[29]) {
  const char *why = "bad WebSocket handshake";
  const char *key = ux_req_header(r, "Sec-WebSocket-Key");
  int rc = unsb_ws_handshake_check(r->method, ux_req_header(r, "Upgrade"),
                                 ux_req_header(r, "Connection"),
                                 ux_req_header(r, "Sec-WebSocket-Version"), key, &why);
  if (rc == 426) {
    ux_reply_error(r, 426, "upgrade_required", "%s", why);
    ux_reply_header(r, "Sec-WebSocket-Version", "13");
    return -1;
  }
  if (rc != 0 || unsb_ws_accept_key(key, accept) < 0) {
    ux_reply_error(r, 400, "bad_request", "%s", why);
    return -1;
  }
  return 0;
}

/* The session as the key sees it: 0 with its idle timeout (its ttl), or
** -1 after a 404 or 409 reply; *doc is the caller's to release. */
static int find_session(ux_req *r, const char *id, json_t **doc, long *idle_s) {
  *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!*doc) return ux_reply_error(r, 404, "not_found", "no such session");
  const char *status = json_string_value(json_object_get(*doc, "status"));
  if (status && !strcmp(status, "frozen"))
    return ux_reply_error(r, 409, "session_frozen", "the session is frozen; unfreeze it first");
  *idle_s = (long)json_integer_value(json_object_get(*doc, "ttl"));
  if (*idle_s <= 0) *idle_s = 3600;
  return 0;
}

/* The relay on r's thread until the terminal is over. */
static void relay(const char *id, term *t, const ux_upgraded *up, long idle_s) {
  ux_ws_relay_cfg c;
  memset(&c, 0, sizeof c);
  c.sock = up->fd;
  c.extra = up->extra;
  c.extra_len = up->extra_len;
  c.stop_fd = up->stop_fd;
  c.pty = t->master;
  c.done_fd = t->done_fd;
  c.exit_code = exit_code;
  c.ctx = t;
  c.idle_ms = idle_s * 1000L;
  int why = ux_ws_relay(&c);
  fprintf(stderr, "unsandboxd: terminal of %s ended: %s\n", id, ux_ws_relay_why(why));
}

int ux_h_session_terminal(ux_req *r, const char *id) {
  json_t *doc = NULL;
  long idle_s = 3600;
  char accept[29];
  if (find_session(r, id, &doc, &idle_s) < 0 || handshake(r, accept) < 0) {
    json_decref(doc);
    return -1;
  }
  int full = claim(r->owner);
  if (full) {
    json_decref(doc);
    r->reply.retry_after = 1;
    return full == 429 ? ux_reply_error(r, 429, "concurrency_limit_reached",
                                        "at most %d terminals per key", TERM_PER_KEY)
                       : ux_reply_error(r, 503, "server_busy", "at most %d terminals", TERM_MAX);
  }
  term *t = term_start(r, id, doc);
  json_decref(doc);
  if (!t) {
    unclaim(r->owner);
    return -1;
  }
  json_t *now = json_integer(ux_now()), *touched = NULL;
  ux_store_set_field(r->srv->store, "sessions", id, r->owner, "last_activity", now, &touched);
  json_decref(now);
  json_decref(touched);
  ux_upgraded up;
  if (ux_reply_header(r, "Sec-WebSocket-Accept", accept) == 0 &&
      ux_req_upgrade(r, "websocket", &up) == 0)
    relay(id, t, &up, idle_s);
  /* the cap counts open terminals: this one is over for its client now,
  ** while its shell's hangup is still answered (bounded: the shell
  ** threads are at most TERM_MAX) */
  unclaim(r->owner);
  term_end(t);
  ux_req_upgrade_close(r);
  return 0;
}
