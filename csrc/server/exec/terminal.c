/*
** GET /sessions/{id}/shell: the WebSocket terminal of spec §5.4, the
** session's half. Authentication is the router's, as for every session
** route; then, all answered as plain HTTP before any upgrade: 404 for a
** session that is not the key's, 409 while it is frozen, 400/426 for a
** bad handshake, 429/503 over the terminal caps. The shell is one run of
** the session's own shape (ux_resource_spec: its volume as the work
** directory, its network mode, vcpu, cgroup), so a freeze or a delete of
** the session acts on it like on any command; its stdin and stdout are
** the slave of a fresh PTY (80x24). The run is started and waited on a
** shell thread (the runner kills a run whose starting thread ends, and
** its waiter enforces the limits; the threads are kept, parked, for the
** next terminals), while the request's thread relays the socket
** (http/ws_relay.c, which knows frames but not sessions). When the relay
** ends for any reason the run is cancelled and waited for, and the
** socket given back: nothing of a terminal outlives it.
*/
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "server/exec/exec_spec.h"
#include "server/fsutil.h"
#include "server/exec/routes.h"
#include "server/http/upgrade.h"
#include "core/ws/ws.h"
#include "server/http/ws_relay.h"
#include "server/store/store.h"

/* Terminals open at once, in all and per key. */
#define TERM_MAX 32
#define TERM_PER_KEY 4
/* The shell's hard limit; the idle timeout (the session's ttl) ends it sooner. */
#define TERM_TTL_S 86400

static const char SHELL[] = "exec setsid -w -c bash --norc --noprofile -i 2>&1";

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
  ux_exec_spec *spec;
  int master, slave, done_fd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started;                /* 0 starting, 1 running, -1 failed */
  int finished;               /* its shell thread is done with it */
  char err[256];
  unsigned long long run_id;
  ux_run_result res;
} term;

static void shell_main(term *t) {
  ux_run *run = ux_run_start(&t->spec->run, t->err, sizeof t->err);
  close(t->slave);                             /* the sandbox holds its own copies */
  t->slave = -1;
  pthread_mutex_lock(&t->mu);
  t->started = run ? 1 : -1;
  t->run_id = run ? ux_run_id(run) : 0;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  if (run) ux_run_wait_detached(run, &t->res);
  uint64_t one = 1;
  if (write(t->done_fd, &one, sizeof one) < 0)
    fprintf(stderr, "unsandboxd: terminal: cannot signal the shell's end: %s\n", strerror(errno));
  pthread_mutex_lock(&t->mu);
  t->finished = 1;                             /* t is term_end's from here */
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* The shell threads: started on demand, at most TERM_MAX, never ending.
** The runner kills a run when the thread that started it ends, so each
** terminal needs a thread for as long as its shell runs; keeping them
** (parked) rather than making one per terminal spares a thread start per
** attach and never gives back the stack a sandbox's start used (the
** runner's vfork child runs on a per-thread buffer). */
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
  const term *t = ctx;
  return t->res.cancelled || t->res.error[0] ? -1 : t->res.exit_code;
}

/* A PTY of 80x24 for t (master kept, slave for the run). */
static int open_pty(term *t) {
  char name[128];
  struct winsize ws = { 24, 80, 0, 0 };
  t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (t->master < 0 || grantpt(t->master) != 0 || unlockpt(t->master) != 0 ||
      ptsname_r(t->master, name, sizeof name) != 0)
    return -1;
  t->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (t->slave < 0 || ioctl(t->master, TIOCSWINSZ, &ws) < 0) return -1;
  return 0;
}

static void term_free(term *t) {
  if (t->master >= 0) close(t->master);
  if (t->slave >= 0) close(t->slave);
  if (t->done_fd >= 0) close(t->done_fd);
  ux_exec_spec_free(t->spec);                  /* gives the volume back */
  ux_run_result_free(&t->res);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* TERM for the shell, so full-screen programs know what they draw on. */
static int give_term_env(ux_exec_spec *s) {
  char **env = malloc(sizeof *env);
  char *v = strdup("TERM=xterm-256color");
  if (!env || !v) {
    free(env);
    free(v);
    return -1;
  }
  env[0] = v;
  return ux_exec_spec_take_env(s, env, 1);    /* frees both when refused */
}

/* Takes the volume, opens the PTY and starts the shell's thread; waits
** until the run started. NULL after setting the reply. */
static term *term_start(ux_req *r, const char *id, json_t *doc) {
  char err[256] = "";
  term *t = calloc(1, sizeof *t);
  if (!t) {
    ux_reply_error(r, 500, "internal_error", "out of memory");
    return NULL;
  }
  t->master = t->slave = t->done_fd = -1;
  if (pthread_mutex_init(&t->mu, NULL) != 0 || pthread_cond_init(&t->cv, NULL) != 0) {
    free(t);
    ux_reply_error(r, 500, "internal_error", "cannot initialise a lock");
    return NULL;
  }
  t->spec = ux_resource_spec(r, "session", id, doc, SHELL, TERM_TTL_S);
  if (!t->spec) { term_free(t); return NULL; }
  if (ux_exec_spec_claim(t->spec, err, sizeof err) != 0) {   /* its memory, while it runs */
    term_free(t);
    ux_reply_no_memory(r, err);
    return NULL;
  }
  if (give_term_env(t->spec) < 0 || ux_exec_spec_open_volume(t->spec, err, sizeof err) < 0) {
    int gone = errno == ENOENT;
    term_free(t);
    if (gone) ux_reply_error(r, 404, "not_found", "no such session");
    else ux_reply_error(r, 500, "internal_error", "cannot open the session's volume");
    return NULL;
  }
  if (open_pty(t) < 0 || (t->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    term_free(t);
    ux_reply_error(r, 500, "internal_error", "cannot open a pseudo-terminal");
    return NULL;
  }
  t->spec->run.in_fd = t->slave;
  t->spec->run.out_fd = t->slave;
  if (pool_submit(t) != 0) {
    term_free(t);
    ux_reply_error(r, 503, "server_busy", "cannot start a thread for the terminal");
    r->reply.retry_after = 1;
    return NULL;
  }
  pthread_mutex_lock(&t->mu);
  while (!t->started) pthread_cond_wait(&t->cv, &t->mu);  /* ux_run_start is bounded */
  pthread_mutex_unlock(&t->mu);
  if (t->started > 0) return t;
  pthread_mutex_lock(&t->mu);
  while (!t->finished) pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
  ux_reply_error(r, 500, "internal_error", "the shell did not start: %s", t->err);
  term_free(t);
  return NULL;
}

/* Ends the shell (a detach, a closed socket or any other end), waits for
** its thread and frees everything. */
static void term_end(term *t) {
  ux_run_cancel_id(t->run_id);                 /* 0 when it already ended */
  pthread_mutex_lock(&t->mu);
  while (!t->finished) pthread_cond_wait(&t->cv, &t->mu);   /* the runner's waits are bounded */
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
  term_end(t);
  ux_req_upgrade_close(r);
  unclaim(r->owner);
  return 0;
}
