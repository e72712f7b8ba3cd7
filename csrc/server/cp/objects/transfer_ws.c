/*
** Workspace imports and exports (cp/objects/transfer.h) through the runtime's agent.
**
** The agent gets one end of a pipe, never a descriptor of the data
** directory; a pump thread moves the bytes between the pipe and the
** object store while ux_rt_call waits for the agent's answer. Sandboxed
** code runs as the agent's uid and could, in the worst case, get hold of
** its end of the pipe and keep it open or silent, so the pump never waits
** for an EOF that may not come: both ends it uses are non-blocking and
** polled, and once the agent has answered, the pump stops as soon as the
** bytes the agent reported have passed, or after a short grace period.
** An export therefore stores exactly what arrived (hashed by the server,
** bounded by max_bytes), never more than the agent claims.
*/
#include "server/cp/objects/transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/runtime/runtime.h"
#include "server/fsutil.h"

#define AGENT_MS 120000       /* one import or export call (an archive of 64 MiB) */
#define GRACE_MS 5000         /* for the pipe to drain once the agent answered */
#define POLL_MS 100

typedef struct {
  int from, to;               /* export: pipe -> put (to -1); import: content fd -> pipe */
  ux_objput *put;
  pthread_mutex_t mu;
  long long expect;           /* bytes the agent reported; -1 while unknown */
  long deadline;              /* ux_now_ms; 0 while the agent works */
  unsigned long long copied;
  int rc;                     /* UX_OBJ_* */
} pump;

static void pump_limits(pump *p, long long *expect, long *deadline) {
  pthread_mutex_lock(&p->mu);
  *expect = p->expect;
  *deadline = p->deadline;
  pthread_mutex_unlock(&p->mu);
}

/* Waits until fd is ready for ev; 1 ready, 0 not yet, -1 give up. */
static int ready(pump *p, int fd, short ev) {
  long long expect;
  long deadline;
  pump_limits(p, &expect, &deadline);
  if (expect >= 0 && p->copied >= (unsigned long long)expect) return -1;
  if (deadline && ux_now_ms() > deadline) return -1;
  struct pollfd pf = { fd, ev, 0 };
  int n = poll(&pf, 1, POLL_MS);
  if (n < 0 && errno != EINTR) return -1;
  return n > 0 && (pf.revents & (ev | POLLHUP | POLLERR)) ? 1 : 0;
}

/* Export: the pipe's read end into the version being written. */
static void *pump_out(void *arg) {
  pump *p = arg;
  char buf[65536];
  for (;;) {
    int st = ready(p, p->from, POLLIN);
    if (st < 0) break;
    if (st == 0) continue;
    ssize_t n = read(p->from, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    if ((p->rc = ux_objput_write(p->put, buf, (size_t)n)) != UX_OBJ_OK) break;
    p->copied += (unsigned long long)n;
  }
  close(p->from);             /* a writer still at it gets EPIPE */
  return NULL;
}

/* Import: the content fd into the pipe's write end. */
static void *pump_in(void *arg) {
  pump *p = arg;
  char buf[65536];
  size_t have = 0, off = 0;
  for (;;) {
    if (off == have) {
      ssize_t n = read(p->from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) p->rc = UX_OBJ_EIO;
      if (n <= 0) break;
      have = (size_t)n;
      off = 0;
    }
    int st = ready(p, p->to, POLLOUT);
    if (st < 0) break;
    if (st == 0) continue;
    ssize_t w = write(p->to, buf + off, have - off);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) break;        /* EPIPE: the agent stopped reading */
    off += (size_t)w;
    p->copied += (unsigned long long)w;
  }
  close(p->from);
  close(p->to);               /* EOF for the agent */
  return NULL;
}

/* The agent has answered (rc, result): tell the pump what to expect and
** how long it may still take, then wait for it. */
static void pump_finish(pump *p, pthread_t th, int rc, const json_t *result) {
  json_t *b = rc == UX_RTC_OK ? json_object_get(result, "bytes") : NULL;
  pthread_mutex_lock(&p->mu);
  p->expect = json_is_integer(b) && json_integer_value(b) >= 0 ? json_integer_value(b) : -1;
  p->deadline = ux_now_ms() + GRACE_MS;
  pthread_mutex_unlock(&p->mu);
  pthread_join(th, NULL);
}

/* The status of an agent call that did not succeed; op names it. */
static int agent_status(int rc, const char *op, char *err, size_t errlen) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", err);
  switch (rc) {
  case UX_RTC_INVALID: case UX_RTC_INTERNAL: return 400;    /* the agent's own text */
  case UX_RTC_BUSY: snprintf(err, errlen, "%s: the runtime is busy: %s", op, msg); return 503;
  case UX_RTC_TIMEOUT: snprintf(err, errlen, "%s: the runtime did not answer in time", op); return 504;
  default: snprintf(err, errlen, "%s: the runtime went away during the transfer", op); return 400;
  }
}

static int start_pump(pump *p, pthread_t *th, void *(*fn)(void *), int nonblock_fd) {
  pthread_mutex_init(&p->mu, NULL);
  p->expect = -1;
  int fl = fcntl(nonblock_fd, F_GETFL);
  if (fl < 0 || fcntl(nonblock_fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
  return pthread_create(th, NULL, fn, p) == 0 ? 0 : -1;
}

/* Runs req on rt's agent with the read end of a pipe the pump feeds from
** fd (closed here). 0 with *result; else an HTTP status with err. */
int ux_objxfer_agent_in(ux_rt *rt, json_t *req, int fd, const char *op, json_t **result,
                        char *err, size_t errlen) {
  int pp[2];
  pthread_t th;
  *result = NULL;
  if (pipe2(pp, O_CLOEXEC) < 0) { close(fd); snprintf(err, errlen, "%s: %s", op, strerror(errno)); return 500; }
  pump p = { .from = fd, .to = pp[1] };
  if (start_pump(&p, &th, pump_in, pp[1]) < 0) {
    close(fd); close(pp[0]); close(pp[1]);
    snprintf(err, errlen, "%s: cannot start the transfer", op);
    return 500;
  }
  int rc = ux_rt_call(rt, req, pp[0], AGENT_MS, NULL, NULL, result, err, errlen);
  close(pp[0]);
  pump_finish(&p, th, UX_RTC_GONE, NULL);     /* the agent is done with the pipe either way */
  pthread_mutex_destroy(&p.mu);
  if (rc != UX_RTC_OK) return agent_status(rc, op, err, errlen);
  if (p.rc != UX_OBJ_OK) {
    json_decref(*result);
    *result = NULL;
    snprintf(err, errlen, "%s: cannot read the object", op);
    return 500;
  }
  return 0;
}

/* Runs req on rt's agent with the write end of a pipe whose bytes the
** pump puts into put, at most put's max_bytes (limit names it in err). 0
** (the caller commits put) with *result when wanted; else an HTTP status
** with err (the caller aborts put). */
int ux_objxfer_agent_out(ux_rt *rt, json_t *req, ux_objput *put, const char *op,
                         unsigned long long limit, json_t **result, char *err, size_t errlen) {
  int pp[2];
  pthread_t th;
  json_t *res = NULL;
  if (result) *result = NULL;
  if (pipe2(pp, O_CLOEXEC) < 0) { snprintf(err, errlen, "%s: %s", op, strerror(errno)); return 500; }
  pump p = { .from = pp[0], .to = -1, .put = put };
  if (start_pump(&p, &th, pump_out, pp[0]) < 0) {
    close(pp[0]); close(pp[1]);
    snprintf(err, errlen, "%s: cannot start the transfer", op);
    return 500;
  }
  int rc = ux_rt_call(rt, req, pp[1], AGENT_MS, NULL, NULL, &res, err, errlen);
  close(pp[1]);
  pump_finish(&p, th, rc, res);
  pthread_mutex_destroy(&p.mu);
  int status = 0;
  if (p.rc == UX_OBJ_ETOOBIG) {
    snprintf(err, errlen, "%s is larger than %llu bytes", op, limit);
    status = 400;
  } else if (rc != UX_RTC_OK) {
    status = agent_status(rc, op, err, errlen);
  } else if (p.rc != UX_OBJ_OK || p.expect < 0 || p.copied != (unsigned long long)p.expect) {
    snprintf(err, errlen, "%s: the runtime delivered %llu of %lld bytes", op, p.copied, p.expect);
    status = 400;
  }
  if (status == 0 && result) *result = res;
  else json_decref(res);
  return status;
}

int ux_objxfer_import(ux_rt *rt, int fd, const ux_obj_meta *m, const char *dest,
                      json_t **file, char *err, size_t errlen) {
  json_t *req = json_pack("{s:s, s:s, s:s, s:I}", "op", "file_write_fd", "path", dest,
                          "sha256", m->sha256, "max_bytes", (json_int_t)m->bytes);
  if (!req) { close(fd); snprintf(err, errlen, "out of memory"); return 500; }
  int status = ux_objxfer_agent_in(rt, req, fd, "import", file, err, errlen);
  json_decref(req);
  return status;
}

int ux_objxfer_export(ux_rt *rt, const char *wspath, int archive, ux_objput *put,
                      char *err, size_t errlen) {
  json_t *req = archive
    ? json_pack("{s:s, s:[s], s:I}", "op", "checkpoint", "only", wspath, "max_bytes", (json_int_t)UX_OBJ_MAX_BYTES)
    : json_pack("{s:s, s:s, s:I}", "op", "file_read_fd", "path", wspath, "max_bytes", (json_int_t)UX_OBJ_MAX_BYTES);
  if (!req) { snprintf(err, errlen, "out of memory"); return 500; }
  int status = ux_objxfer_agent_out(rt, req, put, "export", UX_OBJ_MAX_BYTES, NULL, err, errlen);
  json_decref(req);
  return status;
}
