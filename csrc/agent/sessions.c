/*
** The session table and its calls.
**
** A call attaches to its session until it can answer: session_exec until
** the command's marker (sync) or 0.2 s (async) or its timeout; session_wait
** until the marker or its timeout (wait_timed_out); session_input until the
** marker, or the output has been quiet for 0.5 s after the input was
** written (an interactive program answered), or its timeout. A timeout
** never kills: the command keeps running (running true) and session_wait
** collects it. A sync session_exec or a session_wait that runs out says
** wait_timed_out (the platform's own session tests read it so), a
** session_input that runs out says timed_out. session_kill kills the shell's
** process group, answers exit_code -9 and starts a fresh shell. One call at
** a time per session; session_kill preempts the attached call (which then
** answers with exit_code -9).
**
** A call whose client goes away (EOF on its socket) is dropped; for
** session_exec the shell is killed too (spec §5.5), and the next
** session_exec starts a new one with session_restarted true.
*/
#include "agent/sessions.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/exec.h"
#include "agent/session.h"
#include "agent/walk.h"

#define ASYNC_SECONDS 0.2
#define SETTLE_SECONDS 0.5
#define DYING_SECONDS 0.1
#define INPUT_MAX 8192
#define DRAIN_SECONDS 10.0

static const char *const act_names[] = { "session_exec", "session_wait", "session_input", "session_kill" };

static struct {
  const ag_fs *fs;
  ag_session *s[AG_SESSIONS_MAX];
  size_t n;
  double idle, wall;
  ag_conn *drain[AG_SESSIONS_DRAINING];
  double drain_until[AG_SESSIONS_DRAINING];
  size_t ndrain;
  /* what each pollfd of the last fill was: session index or drain index */
  struct { char kind; size_t i; } map[AG_SESSIONS_POLLFDS];
} S;

static double env_seconds(const char *name, double def) {
  const char *v = getenv(name);
  char *end;
  double d;
  if (!v || !*v) return def;
  d = strtod(v, &end);
  return (*end || d <= 0 || d > 1e7) ? def : d;
}

int ag_sessions_init(const ag_fs *fs) {
  S.fs = fs;
  S.idle = env_seconds("UNSANDBOXD_AGENT_SESSION_IDLE_SECONDS", 1800);
  S.wall = env_seconds("UNSANDBOXD_AGENT_SESSION_WALL_SECONDS", 3600);
  return 0;
}

int ag_sessions_is_op(const char *op) {
  for (size_t i = 0; i < 4; i++) if (!strcmp(op, act_names[i])) return 1;
  return 0;
}

/* A finished call's connection flushes on its own, for a bounded time. */
static void retire(ag_conn *c, double now) {
  if (ag_conn_flush(c) != 0 || S.ndrain >= AG_SESSIONS_DRAINING) {
    ag_conn_close(c);
    free(c);
    return;
  }
  S.drain[S.ndrain] = c;
  S.drain_until[S.ndrain++] = now + DRAIN_SECONDS;
}

static void answer_error(ag_conn *c, const ag_err *e) {
  ag_conn_final_err(c, e);
  retire(c, ag_now());
}

/* The result of the attached call; it is detached and retired. */
static void finish(ag_session *s, int running, int timed_out, int wait_timed_out, double now) {
  ag_conn *c = s->conn;
  ag_session_stream(s);
  json_t *res = json_pack("{s:s, s:s, s:o, s:s%, s:s, s:b, s:b, s:b, s:b, s:b}",
                          "action", act_names[s->action], "session_id", s->id,
                          "exit_code", (!running && s->has_exit) ? json_integer(s->exit_code) : json_null(),
                          "stdout", s->out.p ? s->out.p : "", s->out.len, "stderr", "",
                          "running", running, "timed_out", timed_out, "wait_timed_out", wait_timed_out,
                          "output_truncated", s->truncated, "session_restarted", s->restarted);
  if (res && s->streaming) json_object_set_new(res, "stream_chunks", json_integer((json_int_t)c->chunks));
  ag_conn_final_ok(c, res);
  s->conn = NULL;
  ag_buf_reset(&s->out);
  s->out_raw = 0;
  s->truncated = 0;
  s->streamed = 0;
  s->last_used = now;
  retire(c, now);
}

static void reap_now(ag_session *s) {
  int st;
  if (s->alive && waitpid(s->sh.pid, &st, 0) == s->sh.pid) s->shell_status = st;
  s->alive = 0;
}

/* Kills the shell; what it wrote last is kept as output. */
static void kill_shell(ag_session *s) {
  if (s->alive) ag_exec_kill_leader(s->sh.pid);
  reap_now(s);
  ag_session_read(s, ag_now());
  ag_shell_kill(&s->sh);
  s->dead = 1;
  s->dying_until = 0;
  ag_buf_reset(&s->pend);
  ag_buf_reset(&s->input);
  s->input_off = 0;
}

static int start_shell(ag_session *s, ag_err *e) {
  if (ag_shell_start(S.fs, &s->sh, e) < 0) return -1;
  s->alive = 1;
  s->dead = s->master_eof = 0;
  s->running = 0;
  memset(&s->u, 0, sizeof s->u);
  return 0;
}

static void drop(size_t i) {
  ag_session *s = S.s[i];
  if (s->conn) { ag_conn_close(s->conn); free(s->conn); }
  kill_shell(s);
  ag_buf_free(&s->pend);
  ag_buf_free(&s->out);
  ag_buf_free(&s->input);
  free(s);
  S.s[i] = S.s[--S.n];
}

static ag_session *find(const char *id) {
  for (size_t i = 0; i < S.n; i++) if (!strcmp(S.s[i]->id, id)) return S.s[i];
  return NULL;
}

static int valid_id(const char *id) {
  size_t n = strlen(id);
  if (n < 1 || n > 64) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    int alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return 0;
  }
  return 1;
}

static ag_session *create(const char *id, ag_err *e) {
  ag_session *s;
  if (S.n >= AG_SESSIONS_MAX) return ag_fail(e, AG_BUSY, "all PTY sessions are busy"), NULL;
  if (!(s = calloc(1, sizeof *s))) return ag_fail(e, AG_INTERNAL, "out of memory"), NULL;
  snprintf(s->id, sizeof s->id, "%s", id);
  if (start_shell(s, e) < 0) { free(s); return NULL; }
  s->created = s->last_used = ag_now();
  S.s[S.n++] = s;
  return s;
}

typedef struct {
  const char *id, *command, *input;
  size_t clen, ilen;
  long long timeout;
  int async, streaming, newline;
} call_args;

static int parse(json_t *req, int action, call_args *a, ag_err *e) {
  static const char *const keys[4][6] = {
    { "session_id", "command", "timeout_seconds", "async", "stream", NULL },
    { "session_id", "timeout_seconds", "stream", NULL },
    { "session_id", "input", "append_newline", "timeout_seconds", "stream", NULL },
    { "session_id", "stream", NULL },
  };
  memset(a, 0, sizeof *a);
  if (ag_args_only(req, keys[action], e) < 0 || ag_arg_str(req, "session_id", NULL, 0, &a->id, NULL, e) < 0 ||
      ag_arg_bool(req, "stream", 0, &a->streaming, e) < 0)
    return -1;
  if (!valid_id(a->id))
    return ag_fail(e, AG_INVALID, "argument 'session_id' must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  if (action == ACT_EXEC &&
      (ag_arg_str(req, "command", NULL, 0, &a->command, &a->clen, e) < 0 ||
       ag_arg_bool(req, "async", 0, &a->async, e) < 0))
    return -1;
  if (action == ACT_EXEC && a->clen > 8192)
    return ag_fail(e, AG_INVALID, "argument 'command' is %zu bytes, more than 8192", a->clen);
  if (action == ACT_INPUT &&
      (ag_arg_str(req, "input", NULL, 1, &a->input, &a->ilen, e) < 0 ||
       ag_arg_bool(req, "append_newline", 1, &a->newline, e) < 0))
    return -1;
  if (action == ACT_INPUT && a->ilen > INPUT_MAX)
    return ag_fail(e, AG_INVALID, "argument 'input' is %zu bytes, more than %d", a->ilen, INPUT_MAX);
  if (action != ACT_KILL &&
      ag_arg_int(req, "timeout_seconds", 30, 1, action == ACT_WAIT ? 120 : 30, &a->timeout, e) < 0)
    return -1;
  return 0;
}

static void attach(ag_session *s, ag_conn *c, int action, const call_args *a, double deadline) {
  s->conn = c;
  s->action = action;
  s->streaming = a->streaming;
  s->streamed = 0;
  s->deadline = deadline;
  ag_session_stream(s);            /* output from between calls goes first */
}

static int start_command(ag_session *s, const call_args *a, ag_err *e) {
  if (s->dead || !s->alive) {
    kill_shell(s);
    if (start_shell(s, e) < 0) return -1;
    s->restarted = 1;
  }
  if (ag_shell_marker(s->marker, e) < 0) return -1;
  s->has_exit = 0;
  s->running = 1;
  if (ag_shell_send(&s->sh, a->command, a->clen, s->marker, e) < 0) { s->running = 0; return -1; }
  return 0;
}

static int do_kill(ag_session *s, ag_err *e, double now) {
  if (s->conn) {                   /* the attached call learns it was killed */
    s->running = 0;
    s->has_exit = 1;
    s->exit_code = -9;
    finish(s, 0, 0, 0, now);
  }
  kill_shell(s);
  ag_buf_reset(&s->out);           /* the killed command's last words went unheard */
  s->out_raw = 0;
  s->truncated = 0;
  s->running = 0;
  s->has_exit = 1;
  s->exit_code = -9;
  s->restarted = 1;
  return start_shell(s, e);
}

/* Handles one call; 0 when it is attached, -1 with e set. */
static int serve(ag_conn *c, int action, const call_args *a, ag_err *e) {
  double now = ag_now();
  ag_session *s = find(a->id);
  if (!s && action != ACT_EXEC)
    return ag_fail(e, AG_INVALID, "shell session '%s' does not exist; call exec first", a->id);
  if (s && s->conn && action != ACT_KILL)
    return ag_fail(e, AG_INVALID, "shell session '%s' is already serving another call", a->id);
  switch (action) {
  case ACT_EXEC:
    if (s && s->running)
      return ag_fail(e, AG_INVALID, "shell session '%s' is still running a command; call session_wait, session_input or session_kill", a->id);
    if (!s && !(s = create(a->id, e))) return -1;
    s->restarted = 0;
    if (start_command(s, a, e) < 0) return -1;
    s->async = a->async;
    attach(s, c, action, a, now + (a->async ? ASYNC_SECONDS : (double)a->timeout));
    return 0;
  case ACT_WAIT:
    s->restarted = 0;
    attach(s, c, action, a, now + (double)a->timeout);
    if (!s->running) finish(s, 0, 0, 0, now);   /* nothing to wait for */
    return 0;
  case ACT_INPUT:
    if (!s->running)
      return ag_fail(e, AG_INVALID, "shell session '%s' has no running command to send input to", a->id);
    s->restarted = 0;
    ag_buf_add(&s->input, a->input, a->ilen);
    if (a->newline) ag_buf_add(&s->input, "\n", 1);
    if (s->input.oom) return ag_fail(e, AG_INTERNAL, "out of memory");
    s->input_done_at = 0;
    attach(s, c, action, a, now + (double)a->timeout);
    ag_session_write_input(s, now);
    return 0;
  default:
    if (do_kill(s, e, now) < 0) {
      for (size_t i = 0; i < S.n; i++) if (S.s[i] == s) { drop(i); break; }
      return -1;
    }
    attach(s, c, action, a, now);
    finish(s, 0, 0, 0, now);
    return 0;
  }
}

void ag_sessions_request(ag_conn *c, json_t *req) {
  const char *op = json_string_value(json_object_get(req, "op"));
  ag_conn *hc = malloc(sizeof *hc);
  call_args a;
  ag_err e;
  int action = 0;
  if (!hc) { ag_conn_close(c); json_decref(req); return; }
  *hc = *c;                         /* the connection is ours now */
  memset(c, 0, sizeof *c);
  c->fd = -1;
  while (action < 3 && strcmp(op, act_names[action])) action++;
  if (parse(req, action, &a, &e) < 0 || serve(hc, action, &a, &e) < 0) answer_error(hc, &e);
  json_decref(req);
}

size_t ag_sessions_fill(struct pollfd *pf, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < S.n && n + 2 <= max; i++) {
    ag_session *s = S.s[i];
    if (s->sh.master >= 0 && !s->master_eof) {
      pf[n] = (struct pollfd){ s->sh.master, (short)(POLLIN | (s->input.len ? POLLOUT : 0)), 0 };
      S.map[n].kind = 'm'; S.map[n++].i = i;
    }
    if (s->conn) {
      pf[n] = (struct pollfd){ s->conn->fd, (short)(POLLIN | (s->conn->out.len ? POLLOUT : 0)), 0 };
      S.map[n].kind = 'c'; S.map[n++].i = i;
    }
  }
  for (size_t k = 0; k < S.ndrain && n < max; k++) {
    pf[n] = (struct pollfd){ S.drain[k]->fd, POLLOUT, 0 };
    S.map[n].kind = 'd'; S.map[n++].i = k;
  }
  return n;
}

/* The client of session s's call went away. */
static void disconnect(ag_session *s, double now) {
  ag_conn_close(s->conn);
  free(s->conn);
  s->conn = NULL;
  s->streamed = 0;
  s->last_used = now;
  if (s->action == ACT_EXEC && s->running) {
    kill_shell(s);
    ag_buf_reset(&s->out);
    s->out_raw = 0;
    s->truncated = 0;
    s->running = 0;
    s->has_exit = 1;
    s->exit_code = -9;
  }
}

static void on_events(struct pollfd *pf, size_t n, double now) {
  for (size_t k = 0; k < n; k++) {
    if (!pf[k].revents) continue;
    if (S.map[k].kind == 'd') {
      ag_conn *c = S.drain[S.map[k].i];
      if (c->fd >= 0 && ag_conn_flush(c) != 0) { ag_conn_close(c); }
      continue;
    }
    ag_session *s = S.s[S.map[k].i];
    if (S.map[k].kind == 'm') {
      if (pf[k].revents & POLLOUT) ag_session_write_input(s, now);
      if (ag_session_read(s, now) && s->conn) finish(s, 0, 0, 0, now);
    } else if (s->conn) {
      if (pf[k].revents & POLLOUT) ag_conn_flush(s->conn);
      if (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) ag_conn_watch(s->conn);
      if (s->conn->peer_gone) disconnect(s, now);
    }
  }
  for (size_t k = S.ndrain; k-- > 0;)      /* flushed, failed or too slow */
    if (S.drain[k]->fd < 0 || now >= S.drain_until[k]) {
      ag_conn_close(S.drain[k]);
      free(S.drain[k]);
      S.drain[k] = S.drain[--S.ndrain];
      S.drain_until[k] = S.drain_until[S.ndrain];
    }
}

/* The shell was reaped and its last output drained: the session is dead. */
static void buried(ag_session *s, double now) {
  ag_session_read(s, now);
  if (s->running) {
    ag_session_flush_text(s);
    s->running = 0;
    s->has_exit = 1;
    s->exit_code = ag_exit_code(s->shell_status);
  }
  ag_shell_kill(&s->sh);
  s->dead = 1;
  s->dying_until = 0;
  if (s->conn) finish(s, 0, 0, 0, now);
}

static void tick(ag_session *s, double now) {
  if (!s->alive && !s->dead && s->dying_until > 0 && now >= s->dying_until) buried(s, now);
  if (!s->conn) return;
  if (s->conn->out.len) ag_conn_flush(s->conn);
  if (s->action == ACT_INPUT && s->running && !s->input.len && s->input_done_at > 0 &&
      now - (s->last_output_at > s->input_done_at ? s->last_output_at : s->input_done_at) >= SETTLE_SECONDS)
    finish(s, 1, 0, 0, now);                   /* answered, now quiet */
  else if (now >= s->deadline)
    finish(s, 1, s->action == ACT_INPUT,
           s->action == ACT_WAIT || (s->action == ACT_EXEC && !s->async), now);
}

void ag_sessions_after_poll(struct pollfd *pf, size_t n, double now) {
  on_events(pf, n, now);
  for (size_t i = S.n; i-- > 0;) {
    ag_session *s = S.s[i];
    tick(s, now);
    if (now - s->created >= S.wall) {            /* wall cap: the session ends */
      if (s->conn) {
        kill_shell(s);
        s->running = 0;
        s->has_exit = 1;
        s->exit_code = -9;
        finish(s, 0, 1, 0, now);
      }
      drop(i);
    } else if (!s->conn && now - s->last_used >= S.idle) {
      drop(i);
    }
  }
}

double ag_sessions_next_deadline(double now) {
  double next = now + 3600;
#define SOONER(t) do { double t_ = (t); if (t_ < next) next = t_; } while (0)
  for (size_t i = 0; i < S.n; i++) {
    ag_session *s = S.s[i];
    SOONER(s->created + S.wall);
    if (!s->conn) SOONER(s->last_used + S.idle);
    if (!s->alive && !s->dead && s->dying_until > 0) SOONER(s->dying_until);
    if (s->conn) {
      SOONER(s->deadline);
      if (s->action == ACT_INPUT && s->input_done_at > 0)
        SOONER((s->last_output_at > s->input_done_at ? s->last_output_at : s->input_done_at) + SETTLE_SECONDS);
    }
  }
  for (size_t k = 0; k < S.ndrain; k++) SOONER(S.drain_until[k]);
#undef SOONER
  return next;
}

void ag_sessions_child(pid_t pid, int status) {
  for (size_t i = 0; i < S.n; i++) {
    ag_session *s = S.s[i];
    if (s->alive && s->sh.pid == pid) {
      s->alive = 0;
      s->shell_status = status;
      s->dying_until = ag_now() + DYING_SECONDS;   /* let its last output arrive */
      return;
    }
  }
}

void ag_sessions_close_fds(void) {
  for (size_t i = 0; i < S.n; i++) {
    if (S.s[i]->sh.master >= 0) close(S.s[i]->sh.master);
    if (S.s[i]->sh.cmd >= 0) close(S.s[i]->sh.cmd);
    if (S.s[i]->conn && S.s[i]->conn->fd >= 0) close(S.s[i]->conn->fd);
  }
  for (size_t k = 0; k < S.ndrain; k++) if (S.drain[k]->fd >= 0) close(S.drain[k]->fd);
}

void ag_sessions_shutdown(void) {
  while (S.n) drop(S.n - 1);
  while (S.ndrain) { ag_conn_close(S.drain[S.ndrain - 1]); free(S.drain[--S.ndrain]); }
}
