/*
** The watcher: one thread does everything timed for all runtimes, so a
** runtime costs no thread of its own beyond the one the runner needs.
**
**   readiness  once a sandbox has started, the watcher pings its agent;
**              the answer makes the runtime RUNNING; no answer within
**              start_timeout_s, or a wrong one, makes it FAILED;
**   health     a running runtime's agent is pinged every
**              health_interval_s: an agent that broke the protocol is
**              stopped as FAILED at once, and one that stopped (SIGSTOP
**              from the code in the sandbox, which shares its uid) once
**              its ping has gone unanswered through UX_RT_HEALTH_MISSES
**              deadlines of health_timeout_s in a row. A merely slow agent
**              (a loaded machine, a sandbox using its whole CPU share)
**              answers late, not never: its late answer still counts, so
**              it is not killed for the machine's load (a runtime whose
**              sandbox simply died is noticed at once by its own thread);
**   TTLs       idle and hard TTLs release runtimes;
**   cleanup    threads of ended runtimes are joined, and the runtimes
**              forgotten, forget_after_s after they were reported
**              (at once after ux_runtimes_release).
**
** Pings never block: they are sent with MSG_DONTWAIT under the lock and
** their answers collected by one poll() over every ping in flight plus an
** eventfd that wakes the watcher when something changes.
*/
#include "server/runtime/runtime_int.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/runner.h"

#define MAX_ROUND_MS   1000     /* the longest sleep between two rounds */
#define UX_RT_HEALTH_MISSES 3   /* health deadlines in a row before FAILED */
#define PING_REPLY_MAX 4096     /* a ping's answer is a few dozen bytes */

void ux_rt_ping_close(ux_rt *rt) {
  if (rt->ping_fd >= 0) close(rt->ping_fd);
  rt->ping_fd = -1;
  ux_agent_frames_free(&rt->ping_in);
}

/* Stops rt for the reason given (mu held). */
static void __attribute__((format(printf, 4, 5)))
stop_rt(ux_rt *rt, int status, int soft, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  ux_rt_kill_locked(rt, status, why, soft);
  ux_rt_ping_close(rt);
}

/* Sends a ping on the runtime's control channel, never waiting. */
static void ping_send(ux_rt *rt, long deadline) {
  char err[200];
  int fd = ux_agent_open(rt->control, -1, 0, err, sizeof err);
  if (fd < 0) { stop_rt(rt, UX_RT_FAILED, 1, "its agent cannot be reached: %s", err); return; }
  json_t *req = json_pack("{s:s}", "op", "ping");
  int s = req ? ux_agent_send(fd, req, 0, err, sizeof err) : -3;
  json_decref(req);
  if (s < 0 && s != -2) {
    close(fd);
    stop_rt(rt, UX_RT_FAILED, 1, "cannot ping its agent: %s", s == -3 ? "out of memory" : err);
    return;
  }
  /* -2 (the frame did not fit at once) cannot happen for a ping on a
  ** fresh socket; if it did, no answer comes and the deadline decides */
  rt->ping_fd = fd;
  rt->ping_deadline = deadline;
  rt->ping_misses = 0;
  ux_agent_frames_init(&rt->ping_in);
}

/* A ping's final frame: 0 when it shows a live agent, else -1 with err. */
static int ping_answer(ux_rt *rt, const json_t *frame, char *err, size_t errlen) {
  json_t *res = NULL;
  int rc = ux_agent_frame_is_event(frame, err, errlen) != 0 ? UX_RTC_GONE
         : ux_agent_final(frame, &res, err, errlen);
  int good = rc == UX_RTC_OK && json_is_integer(json_object_get(res, "pid")) &&
             json_is_integer(json_object_get(res, "uid"));
  json_t *procs = json_object_get(res, "procs");
  if (good && json_is_integer(procs) && json_integer_value(procs) >= 0)
    rt->procs = (long)json_integer_value(procs);
  json_decref(res);
  if (good) return 0;
  /* a running agent that answers with an error is alive: every handler
  ** busy, or no fork left because the code filled its process limit */
  if ((rc == UX_RTC_BUSY || rc == UX_RTC_INTERNAL || rc == UX_RTC_INVALID) &&
      rt->status == UX_RT_RUNNING) return 0;
  if (rc == UX_RTC_OK) snprintf(err, errlen, "a ping result without pid and uid");
  else if (rc != UX_RTC_GONE) snprintf(err, errlen, "an error answer to a ping");
  return -1;
}

/* Collects what the ping in flight has answered so far. */
static void ping_read(ux_runtimes *rts, ux_rt *rt, long now) {
  char err[200];
  json_t *frame = NULL;
  if (ux_agent_frames_read(&rt->ping_in, rt->ping_fd, err, sizeof err) != 0) {
    stop_rt(rt, UX_RT_FAILED, 1, "%s", err);
    return;
  }
  int r = ux_agent_frames_next(&rt->ping_in, &frame, err, sizeof err);
  if (r == 0 && rt->ping_in.len - rt->ping_in.off > PING_REPLY_MAX) {
    snprintf(err, sizeof err, "a ping answer of more than %d bytes", PING_REPLY_MAX);
    r = -1;
  }
  if (r < 0 || (r == 1 && ping_answer(rt, frame, err, sizeof err) != 0)) {
    json_decref(frame);
    stop_rt(rt, UX_RT_FAILED, 0, "its agent broke the protocol: %s", err);
    return;
  }
  json_decref(frame);
  if (r == 0) {
    if (rt->ping_in.eof) stop_rt(rt, UX_RT_FAILED, 1, "its agent closed a ping without answering");
    return;
  }
  ux_rt_ping_close(rt);
  rt->ping_next = now + (long)rts->cfg.health_interval_s * 1000;
  if (rt->status == UX_RT_RUNNING) rt->health_checks++;
  if (rt->status == UX_RT_PENDING) {
    rt->status = UX_RT_RUNNING;
    rt->used_ms = now;                   /* the idle clock starts now */
    pthread_cond_broadcast(&rts->changed);
  }
}

static void soonest(long *next, long t) { if (t < *next) *next = t; }

/* A running runtime's health ping passed its deadline (mu held). An
** answer that has arrived is read first (the watcher may itself be late
** on a loaded machine); without one, the same ping is waited for through
** another deadline, and only UX_RT_HEALTH_MISSES of them in a row stop the
** runtime. */
static void health_overdue(ux_runtimes *rts, ux_rt *rt, long now) {
  const ux_rt_config *c = &rts->cfg;
  ping_read(rts, rt, now);
  if (rt->ping_fd < 0 || rt->kill) return;
  if (++rt->ping_misses < UX_RT_HEALTH_MISSES) {
    rt->ping_deadline = now + (long)c->health_timeout_s * 1000;
    return;
  }
  stop_rt(rt, UX_RT_FAILED, 0, "its agent did not answer a health check within %d s",
          UX_RT_HEALTH_MISSES * c->health_timeout_s);
}

/* The timers of one runtime (mu held). */
static void step(ux_runtimes *rts, ux_rt *rt, long now, long *next) {
  const ux_rt_config *c = &rts->cfg;
  if (rt->kill && !rt->done && rt->cancel_at) {
    if (now >= rt->cancel_at && rt->run_id) {   /* else its thread cancels */
      rt->cancel_at = 0;
      ux_run_cancel_id(rt->run_id);
    } else if (now < rt->cancel_at) {
      soonest(next, rt->cancel_at);
    }
  }
  if (rt->done || rt->kill) { ux_rt_ping_close(rt); return; }
  if (rt->status == UX_RT_PENDING) {
    long limit = rt->created_ms + (long)c->start_timeout_s * 1000;
    if (now >= limit) {
      stop_rt(rt, UX_RT_FAILED, 0, "the runtime did not become ready within %d s", c->start_timeout_s);
      return;
    }
    if (rt->control >= 0 && rt->ping_fd < 0) ping_send(rt, limit);
    soonest(next, limit);
    return;
  }
  if (rt->status != UX_RT_RUNNING) return;
  /* a paused runtime (its caller froze it) is not health-checked */
  if (!rt->paused && rt->ping_fd >= 0 && now >= rt->ping_deadline) {
    health_overdue(rts, rt, now);
    if (rt->kill) return;
  }
  long hard = rt->created_ms + (long)rt->hard_ttl_s * 1000;
  /* never idle: no idle TTL, or paused (its caller froze it) */
  int idles = rt->idle_ttl_s > 0 && !rt->paused && rt->calls == 0;
  long idle = rt->used_ms + (long)rt->idle_ttl_s * 1000;
  if (now >= hard) {
    stop_rt(rt, UX_RT_RELEASED, 0, "the runtime reached its hard TTL of %d s", rt->hard_ttl_s);
  } else if (idles && now >= idle) {
    stop_rt(rt, UX_RT_RELEASED, 0, "the runtime was idle for %d s", rt->idle_ttl_s);
  } else if (rt->paused) {
    soonest(next, hard);
  } else {
    if (rt->ping_fd < 0 && now >= rt->ping_next)
      ping_send(rt, now + (long)c->health_timeout_s * 1000);
    soonest(next, hard);
    if (idles) soonest(next, idle);
    soonest(next, rt->ping_fd >= 0 ? rt->ping_deadline : rt->ping_next);
  }
}

/* Unlinks the runtimes whose thread is ready to be joined (mu held). */
static ux_rt *take_ended(ux_runtimes *rts, long now) {
  ux_rt *ended = NULL;
  for (ux_rt **p = &rts->head; *p;) {
    ux_rt *rt = *p;
    if (rt->reported &&
        (rt->forgotten || now - rt->ended_ms >= (long)rts->cfg.forget_after_s * 1000)) {
      *p = rt->next;
      rt->next = ended;
      ended = rt;
    } else {
      p = &rt->next;
    }
  }
  return ended;
}

/* The poll set: the wake eventfd and every ping in flight (mu held). */
static size_t poll_set(ux_runtimes *rts, struct pollfd **pf, size_t *cap) {
  size_t n = 1, want = 1;
  for (ux_rt *rt = rts->head; rt; rt = rt->next) want += rt->ping_fd >= 0;
  if (want > *cap) {
    struct pollfd *p = realloc(*pf, want * sizeof *p);
    if (!p) return 1;            /* the pings wait for the next round */
    *pf = p;
    *cap = want;
  }
  (*pf)[0] = (struct pollfd){ rts->wake_fd, POLLIN, 0 };
  for (ux_rt *rt = rts->head; rt && n < *cap; rt = rt->next)
    if (rt->ping_fd >= 0) (*pf)[n++] = (struct pollfd){ rt->ping_fd, POLLIN, 0 };
  return n;
}

void *ux_rt_watch(void *arg) {
  ux_runtimes *rts = arg;
  struct pollfd *pf = malloc(sizeof *pf);
  size_t cap = pf ? 1 : 0;
  pthread_mutex_lock(&rts->mu);
  while (!rts->stopping) {
    long now = ux_now_ms(), next = now + MAX_ROUND_MS;
    ux_rt *ended = take_ended(rts, now);
    for (ux_rt *rt = rts->head; rt; rt = rt->next) step(rts, rt, now, &next);
    size_t n = pf ? poll_set(rts, &pf, &cap) : 0;
    pthread_mutex_unlock(&rts->mu);
    while (ended) {
      ux_rt *rt = ended;
      ended = rt->next;
      pthread_join(rt->thread, NULL);
      ux_rt_unref(rt);
    }
    long wait = next - ux_now_ms();
    if (n) {
      if (poll(pf, n, wait < 0 ? 0 : (int)wait) < 0 && errno != EINTR) usleep(10000);
      uint64_t v;
      if (pf[0].revents && read(rts->wake_fd, &v, sizeof v) < 0) { /* drained */ }
    } else if (wait > 0) {
      usleep((useconds_t)(wait > 100 ? 100 : wait) * 1000);
    }
    pthread_mutex_lock(&rts->mu);
    now = ux_now_ms();
    for (ux_rt *rt = rts->head; rt; rt = rt->next)
      if (rt->ping_fd >= 0 && !rt->done && !rt->kill && !rt->paused) ping_read(rts, rt, now);
  }
  for (ux_rt *rt = rts->head; rt; rt = rt->next) ux_rt_ping_close(rt);
  pthread_mutex_unlock(&rts->mu);
  free(pf);
  return NULL;
}
