/*
** Fault injection. A small fixed table of armed faults behind a mutex;
** the first armed fault whose path prefix and mode fit the request is
** used and its count decremented. Requests to /_faults and its test
** routes (/_faults/...) are never faulted unless a fault names that prefix
** explicitly. The table also keeps the counters of the streaming test
** routes (faults_stream.c).
*/
#include "server/http/faults.h"

#include "core/sign.h"
#include "server/fsutil.h"
#include "server/ids.h"
#include "server/mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FAULTS 16

typedef enum { F_LATENCY, F_STATUS, F_MALFORMED, F_POLL404, F_DROP, F_DEFER, F_SUDO } fmode;
static const char *const MODES[] = {
  "latency", "status", "malformed", "poll404", "drop", "defer", "sudo", NULL
};

typedef struct fault {
  fmode mode;
  long count, ms;
  int status;
  char path[256];         /* "" = any path but /_faults */
  char otp[64];           /* sudo: the one-time password that answers */
  char challenge[64];     /* sudo: the challenge last issued, "" = none */
} fault;

struct ux_faults {
  pthread_mutex_t mu;
  fault armed[MAX_FAULTS];
  int n;
  long streams[UX_FAULTS_NSTATS];  /* started, completed, gone */
  long gone_at_ms;                 /* when a writer last saw -1 (ux_now_ms) */
  long delaying;                   /* requests asleep in a latency fault now: a
                                      test's readiness signal ("it is held") */
};

ux_faults *ux_faults_new(void) {
  ux_faults *f = ux_xcalloc(1, sizeof *f);
  if (pthread_mutex_init(&f->mu, NULL) != 0) {
    free(f);
    return NULL;
  }
  return f;
}

void ux_faults_count(ux_faults *f, int stat) {
  if (stat < 0 || stat >= UX_FAULTS_NSTATS) return;
  pthread_mutex_lock(&f->mu);
  f->streams[stat]++;
  if (stat == UX_FAULTS_GONE) f->gone_at_ms = ux_now_ms();
  pthread_mutex_unlock(&f->mu);
}

json_t *ux_faults_stats_json(ux_faults *f) {
  json_t *j = json_object();
  if (!j) return NULL;
  pthread_mutex_lock(&f->mu);
  json_object_set_new(j, "streams_started", json_integer(f->streams[UX_FAULTS_STARTED]));
  json_object_set_new(j, "streams_completed", json_integer(f->streams[UX_FAULTS_COMPLETED]));
  json_object_set_new(j, "streams_gone", json_integer(f->streams[UX_FAULTS_GONE]));
  json_object_set_new(j, "gone_at_ms", json_integer(f->gone_at_ms));
  json_object_set_new(j, "delaying", json_integer(f->delaying));
  pthread_mutex_unlock(&f->mu);
  json_object_set_new(j, "now_ms", json_integer(ux_now_ms()));
  return j;
}

void ux_faults_free(ux_faults *f) {
  if (!f) return;
  pthread_mutex_destroy(&f->mu);
  free(f);
}

int ux_faults_route(ux_req *r, ux_faults *f) {
  const char *mode, *path, *otp;
  long count, ms, status;
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  if (ux_get_str(r, body, "mode", 1, NULL, &mode) < 0 ||
      ux_get_int(r, body, "count", 1, 1000000, 1, &count) < 0 ||
      ux_get_int(r, body, "ms", 0, 600000, 1000, &ms) < 0 ||
      ux_get_int(r, body, "status", 100, 599, 503, &status) < 0 ||
      ux_get_str(r, body, "path", 0, "", &path) < 0 ||
      ux_get_str(r, body, "otp", 0, "123456", &otp) < 0) {
    json_decref(body);
    return -1;
  }
  int m = -1;
  for (int i = 0; MODES[i]; i++) if (!strcmp(mode, MODES[i])) m = i;
  if (strcmp(mode, "off") != 0 && m < 0) {
    json_decref(body);
    return ux_reply_error(r, 400, "bad_request", "unknown fault mode");
  }
  if (strlen(path) >= sizeof f->armed[0].path || strlen(otp) >= sizeof f->armed[0].otp) {
    json_decref(body);
    return ux_reply_error(r, 400, "bad_request", "path or otp too long");
  }
  pthread_mutex_lock(&f->mu);
  if (m < 0) f->n = 0;
  else if (f->n < MAX_FAULTS) {
    fault *a = &f->armed[f->n++];
    a->mode = (fmode)m;
    a->count = count;
    a->ms = ms;
    a->status = (int)status;
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->otp, sizeof a->otp, "%s", otp);
    a->challenge[0] = '\0';
  } else {
    pthread_mutex_unlock(&f->mu);
    json_decref(body);
    return ux_reply_error(r, 409, "too_many_faults", "at most %d faults may be armed", MAX_FAULTS);
  }
  pthread_mutex_unlock(&f->mu);
  json_t *j = json_object();
  json_object_set_new(j, "armed", json_string(mode));
  json_object_set_new(j, "count", json_integer(m < 0 ? 0 : count));
  json_decref(body);
  return ux_reply_json(r, 200, j);
}

/* GET /jobs/<id>: the only requests poll404 applies to. */
static int is_job_poll(const ux_req *r) {
  return !strcmp(r->method, "GET") && !strncmp(r->path, "/jobs/", 6) &&
         r->path[6] && !strchr(r->path + 6, '/');
}

/* What the real service guards with a sudo challenge: deletions and
** unlocks (spec §5.3). */
static int is_destructive(const ux_req *r) {
  size_t n = strlen(r->path);
  return !strcmp(r->method, "DELETE") ||
         (!strcmp(r->method, "POST") && n > 7 && !strcmp(r->path + n - 7, "/unlock"));
}

static int fits(const fault *a, const ux_req *r) {
  if (a->path[0] ? strncmp(r->path, a->path, strlen(a->path)) != 0
                 : !strncmp(r->path, "/_faults", 8)) return 0;
  if (a->mode == F_POLL404) return is_job_poll(r);
  if (a->mode == F_DEFER) return !strcmp(r->method, "POST") && !strcmp(r->path, "/execute");
  if (a->mode == F_SUDO) return is_destructive(r);
  return 1;
}

/*
** The sudo challenge, decided under the lock: a request that answers the
** challenge last issued with the right OTP goes on (and uses up one
** count); a wrong OTP is 403; anything else gets a new challenge (428).
** Returns 1 when the reply is set, 0 to route the request.
*/
static int sudo(ux_faults *f, int i, ux_req *r) {
  fault *a = &f->armed[i];
  if (a->challenge[0] && r->sudo_challenge && !strcmp(r->sudo_challenge, a->challenge)) {
    if (!r->sudo_otp || !unsb_signature_equal(r->sudo_otp, a->otp)) {
      ux_reply_error(r, 403, "invalid_otp", "the one-time password is wrong");
      return 1;
    }
    if (--a->count <= 0) {
      memmove(a, a + 1, (size_t)(f->n - i - 1) * sizeof *a);
      f->n--;
    } else {
      a->challenge[0] = '\0';
    }
    return 0;
  }
  ux_random_id(a->challenge, sizeof a->challenge, "chal_", 8);
  json_t *j = json_object();
  json_object_set_new(j, "error", json_string("sudo_required"));
  json_object_set_new(j, "message", json_string("confirm with the one-time password sent to you"));
  json_object_set_new(j, "challenge_id", json_string(a->challenge));
  ux_reply_json(r, 428, j);
  return 1;
}

int ux_faults_apply(ux_faults *f, ux_req *r) {
  fault hit;
  int found = 0;
  pthread_mutex_lock(&f->mu);
  for (int i = 0; i < f->n && !found; i++) {
    if (!fits(&f->armed[i], r)) continue;
    if (f->armed[i].mode == F_SUDO) {
      int replied = sudo(f, i, r);
      pthread_mutex_unlock(&f->mu);
      return replied;
    }
    hit = f->armed[i];
    found = 1;
    if (--f->armed[i].count <= 0) {
      memmove(&f->armed[i], &f->armed[i + 1], (size_t)(f->n - i - 1) * sizeof f->armed[0]);
      f->n--;
    }
  }
  pthread_mutex_unlock(&f->mu);
  if (!found) return 0;

  json_t *j;
  switch (hit.mode) {
  case F_LATENCY: {
    struct timespec ts = { hit.ms / 1000, (hit.ms % 1000) * 1000000L };
    pthread_mutex_lock(&f->mu);
    f->delaying++;
    pthread_mutex_unlock(&f->mu);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    pthread_mutex_lock(&f->mu);
    f->delaying--;
    pthread_mutex_unlock(&f->mu);
    return 0;
  }
  case F_DEFER:
    r->defer = 1;
    return 0;
  case F_STATUS:
    j = json_object();
    json_object_set_new(j, "error", json_string("injected"));
    ux_reply_json(r, hit.status, j);
    if (hit.status == 429 || hit.status == 503) r->reply.retry_after = 1;
    return 1;
  case F_POLL404:
    ux_reply_error(r, 404, "not_found", "job not found (injected)");
    return 1;
  case F_MALFORMED:
    r->reply.status = 200;
    r->reply.raw = ux_xstrdup("<html>this is not JSON {\"job_id\":");
    r->reply.raw_len = strlen(r->reply.raw);
    return 1;
  case F_SUDO:             /* decided under the lock above */
    return 0;
  case F_DROP:
    j = json_object();
    json_object_set_new(j, "error", json_string("injected"));
    json_object_set_new(j, "message", json_string("this reply is cut short on purpose, "
                                                  "the connection closes before its end"));
    ux_reply_json(r, 200, j);
    r->reply.drop = 1;
    return 1;
  }
  return 0;
}
