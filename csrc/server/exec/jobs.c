/*
** The job pool. One mutex guards the queue and the list of active jobs;
** one condition wakes workers, another wakes anyone waiting for a job to
** end (POST /execute's sync wait, session shells, cancels). A job is
** reference-counted because a waiter may still hold it after the worker
** has finished and dropped it from the active list.
**
** Fair shares (share.h): a key may have at most key_running jobs running
** and key_running + key_queued active, so one key's long jobs never hold
** every worker nor every queue place. A worker takes the oldest queued
** job of the key under its running share that runs the fewest
** (ux_share_pick), so another key's job does not wait behind a queue the
** first key filled, nor behind its burst while it runs more. The
** counts are read from the active list (at most workers + queue jobs)
** when needed.
**
** The run queue: starting a sandbox (bwrap, namespaces, mounts, arming a
** pooled one) is CPU work, and more of it at once than the host has
** cores makes every start slower, not more of them done. So at most
** start_slots jobs are starting at once (jobs.h); a job the slots have no
** room for stays queued, in its place, until one frees, and is then
** chosen by the same fair rule. A job only starts; once its program runs
** it holds a worker, not a start slot (a job that sleeps takes no CPU). A
** session's or service's command starts no sandbox and takes no slot.
*/
#include "server/exec/jobs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/http/reply.h"
#include "server/mem.h"
#include "server/share.h"
#include "server/exec/expiry.h"
#include "server/exec/inside.h"
#include "server/exec/job_docs.h"
#include "server/exec/metrics.h"
#include "server/store/db.h"
#include "server/store/jobdocs.h"
#include "server/store/ledger.h"

typedef enum { J_PENDING, J_RUNNING, J_COMPLETED, J_FAILED, J_TIMEOUT, J_CANCELLED } jstate;
static const char *const STATE[] = {
  "pending", "running", "completed", "failed", "timeout", "cancelled"
};

struct ux_job {
  char id[40];
  char owner[96];
  jstate state;
  long created_at;
  long queued_ms;         /* when it was queued (monotonic): its wait, for /metrics */
  ux_exec_spec *spec;
  unsigned long long run_id; /* set while the runner owns the sandbox */
  int cancel;             /* DELETE /jobs/{id} asked for it */
  int stored;             /* its row exists (or is being written by finish) */
  char item[UX_LEDGER_ITEM_MAX];  /* its final document's ledger item */
  unsigned long long reserved;    /* bytes reserved for that document */
  int done;               /* terminal: doc is its final document */
  ux_jobdoc *doc;         /* written once, kept for the requests waiting */
  int refs;
  ux_job *qnext;          /* the pending queue */
  ux_job *anext;          /* all active jobs, newest first */
};

struct ux_jobs {
  ux_store *st;
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  ux_job *qhead, *qtail, *active;
  int queued, running, workers, queue_limit, stopping;
  long retention_s;       /* finished jobs are unknown this long after (0: kept) */
  int key_running, key_queued;       /* one key's share (jobs.h) */
  int starting, start_slots;         /* the run queue: sandboxes starting at once */
  pthread_t *threads;
};

static const char *state_name(jstate s) { return STATE[s]; }

/* The head of j's documents in state s (job_docs.h). */
static ux_job_head head_of(const ux_job *j, jstate s, long completed_at, const char *error) {
  return (ux_job_head){ j->id, state_name(s), j->spec->language, j->created_at, completed_at, error };
}

/* {job_id, status, ...} of an unfinished job, as text. */
static char *head_text(const ux_job *j, jstate s, size_t *len) {
  ux_job_head h = head_of(j, s, 0, NULL);
  return ux_job_head_text(&h, len);
}

/* The bytes a job's final document may take, reserved when the job is
** submitted: the output its run can keep, artifacts in base64 with room
** for their names, and the fields around them. A document that comes out
** larger still (escaping: a control byte takes six bytes in JSON) grows
** the reservation when it is written (final_doc). */
#define DOC_FIELDS 8192
#define ART_NAMES  65536
unsigned long long ux_jobs_doc_bound(const ux_exec_spec *spec) {
  size_t stream, arts;
  ux_run_result_caps(&spec->run, &stream, &arts);
  unsigned long long b = 2ull * stream + DOC_FIELDS;
  if (arts) b += ((unsigned long long)arts + 2) / 3 * 4 + ART_NAMES;
  return b;
}

/* j's final document, written once from its run's result. One that
** comes out larger than its reservation grows it; when the key has no
** room for that (or the disk takes no more), the document is written
** again without its output, and says so. So no document takes more than
** the ledger counts. The head (the row of a document kept in a file)
** goes to *head. */
static ux_jobdoc *final_doc(ux_jobs *js, ux_job *j, jstate s, const char *error,
                            const ux_run_result *res, char **head) {
  ux_job_head h = head_of(j, s, ux_now(), error);
  ux_jobdoc *d = ux_jobdoc_begin(js->st, j->id);
  int arts = j->spec->run.want_artifacts;
  ux_job_write_final(ux_jobdoc_writer(d), &h, res, arts, 1);
  long long len = ux_jobdoc_end(d);
  int fits = len >= 0 && (unsigned long long)len <= j->reserved;
  if (!fits && len >= 0 &&
      ux_ledger_grow(js->st, j->item, (unsigned long long)len - j->reserved) == UX_LEDGER_OK) {
    j->reserved = (unsigned long long)len;
    fits = 1;
  }
  if (!fits) {
    h.error = len >= 0 ? "the output was not kept: the storage quota of this key has no room for it"
                       : "the output was not kept: the server could not write it to its disk";
    ux_jobdoc_restart(d);
    ux_job_write_final(ux_jobdoc_writer(d), &h, res, arts, 0);
    ux_jobdoc_end(d);
  }
  size_t hl;
  *head = ux_job_head_text(&h, &hl);
  return d;
}

static void unref_locked(ux_job *j) {
  if (--j->refs > 0) return;
  ux_exec_spec_free(j->spec);
  ux_jobdoc_free(j->doc);
  free(j);
}

static void unlink_active(ux_jobs *js, ux_job *j) {
  for (ux_job **p = &js->active; *p; p = &(*p)->anext)
    if (*p == j) { *p = j->anext; return; }
}

/* Makes j terminal with its final document: stored first, then visible,
** so a poll never sees a terminal status the store does not have yet.
** The row changes only while unfinished, so nothing overwrites a final
** document. A job whose row was deferred (ux_jobs_submit) and whose id
** was never given out gets its row here, final at once. */
static void finish(ux_jobs *js, ux_job *j, jstate s, const char *error, const ux_run_result *res) {
  ux_exec_metrics_run(j->spec->language, state_name(s), res->elapsed_ms);
  char *head = NULL;
  ux_jobdoc *doc = final_doc(js, j, s, error, res, &head);
  pthread_mutex_lock(&js->mu);
  int insert = !j->stored;
  j->stored = 1;
  pthread_mutex_unlock(&js->mu);
  /* the final row commits the job's ledger item (a trigger, ledger.h) */
  int ok = ux_jobdoc_store(doc, j->owner, state_name(s), j->created_at, head, insert) == 1;
  free(head);
  if (!ok) {
    fprintf(stderr, "unsandboxd: job %s: its final state was not stored\n", j->id);
    ux_ledger_cancel(js->st, j->item);
  }
  pthread_mutex_lock(&js->mu);
  j->state = s;
  j->doc = doc;
  j->done = 1;
  unlink_active(js, j);
  pthread_cond_broadcast(&js->done);
  unref_locked(j);                                   /* the active list's ref */
  pthread_mutex_unlock(&js->mu);
}

/* The pending row of a job whose id is about to be given out while it
** is unfinished, unless it has one. Under the lock, so finish (which then
** only updates) cannot run between the check and the write. 0, or -1
** when it could not be stored (finish then inserts the final row). Locked. */
static int store_pending_locked(ux_jobs *js, ux_job *j) {
  if (j->stored || j->done) return 0;
  size_t len;
  char *d = head_text(j, J_PENDING, &len);
  j->stored = ux_db_exec(js->st, "INSERT INTO jobs(id, owner, status, created_at, doc)"
                         " VALUES(?1, ?2, 'pending', ?3, ?4)", "ssis", j->id, j->owner,
                         (long long)j->created_at, d) == 1;
  free(d);
  return j->stored ? 0 : -1;
}

/* The id of j is given out (a pending answer, a listing): it needs a row. */
static void id_out_locked(ux_jobs *js, ux_job *j) {
  if (store_pending_locked(js, j) != 0)
    fprintf(stderr, "unsandboxd: job %s: its pending row was not stored\n", j->id);
}

typedef struct { ux_jobs *js; ux_job *j; } job_ref;

/* Whether a job inside a living sandbox is to stop (its cancel or the
** server's stop), asked by inside.c while it runs. */
static int inside_stop(void *ctx) {
  job_ref *ref = ctx;
  pthread_mutex_lock(&ref->js->mu);
  int stop = ref->j->cancel || ref->js->stopping;
  pthread_mutex_unlock(&ref->js->mu);
  return stop;
}

static void settle(ux_jobs *js, ux_job *j, ux_run_result *res);

/* A job's sandbox has started (or will not): its start slot is free, and
** a queued job the slots held back may be taken. */
static void start_done(ux_jobs *js) {
  pthread_mutex_lock(&js->mu);
  js->starting--;
  pthread_cond_broadcast(&js->work);
  pthread_mutex_unlock(&js->mu);
}

static void run_one(ux_jobs *js, ux_job *j) {
  char err[256] = "";
  ux_run_result res;
  memset(&res, 0, sizeof res);
  /* no "running" row: while the job runs every reader finds it in the
  ** active list, and a restart fails a "pending" row as it would a
  ** "running" one; a write less on every run's path */

  if (j->spec->inside) {                 /* a session's or service's command */
    job_ref ref = { js, j };
    ux_inside_run(j->spec, inside_stop, &ref, &res);
    settle(js, j, &res);
    return;
  }
  /* the volume is taken into use only now (exec_spec.h): a session
  ** deleted while this job waited makes it end here */
  if (ux_exec_spec_open_volume(j->spec, err, sizeof err) != 0) {
    start_done(js);
    finish(js, j, J_CANCELLED, "its session or service was deleted", &res);
    return;
  }
  ux_run *run = ux_run_start(&j->spec->run, err, sizeof err);
  start_done(js);
  if (!run) {
    finish(js, j, J_FAILED, err[0] ? err : "sandbox failed to start", &res);
    return;
  }
  pthread_mutex_lock(&js->mu);
  j->run_id = ux_run_id(run);
  int cancel_now = j->cancel || js->stopping;
  pthread_mutex_unlock(&js->mu);
  if (cancel_now) ux_run_cancel(run);

  /* the result is in once the run's processes are gone; its cgroup and
  ** directories are released in the background, after the answer */
  ux_run_wait_detached(run, &res);
  pthread_mutex_lock(&js->mu);
  j->run_id = 0;
  pthread_mutex_unlock(&js->mu);
  settle(js, j, &res);
}

/* The job's end from its run's result (freed here). */
static void settle(ux_jobs *js, ux_job *j, ux_run_result *resp) {
  ux_run_result res = *resp;
  pthread_mutex_lock(&js->mu);
  int user_cancel = j->cancel, stopping = js->stopping;
  pthread_mutex_unlock(&js->mu);
  jstate s = J_COMPLETED;
  const char *error = NULL;
  if (res.error[0]) { s = J_FAILED; error = res.error; }
  else if (res.cancelled || user_cancel) {
    /* a run killed by the shutdown was not cancelled by its owner, nor
    ** was one killed because its session or service went away */
    s = J_CANCELLED;
    if (user_cancel) error = NULL;
    else if (stopping) { s = J_FAILED; error = "server shutting down"; }
    else error = "its session or service was deleted or restored";
  } else if (res.timed_out) { s = J_TIMEOUT; error = "execution exceeded its ttl"; }
  /* still "completed" with the exit code of the kill (137): the program
  ** ran and ended; the error says why it ended */
  char oom[160];
  if (s == J_COMPLETED && res.oom_killed) {
    snprintf(oom, sizeof oom, "out of memory: the program exceeded its memory limit "
             "(%ld MiB) and was killed", res.memory_limit_mb);
    error = oom;
  }
  finish(js, j, s, error, &res);
  ux_run_result_free(&res);
}

/* How many jobs of owner run and wait now. Locked. */
static void owner_counts_locked(ux_jobs *js, const char *owner, int *running, int *queued) {
  *running = *queued = 0;
  for (ux_job *j = js->active; j; j = j->anext) {
    if (strcmp(j->owner, owner) != 0) continue;
    if (j->state == J_RUNNING) (*running)++;
    else if (j->state == J_PENDING) (*queued)++;
  }
}

/* The queued job to run next (ux_share_pick: of the keys under their
** running share, the oldest job of the key running the fewest; a job
** that needs a start slot only while one is free), taken off the queue
** and its start slot taken; NULL when none may run now. A worker that
** finishes a job, and one whose job has started, look again at once, so a
** job that becomes eligible then is taken. Locked. */
static ux_job *next_job_locked(ux_jobs *js) {
  if (!js->qhead) return NULL;
  unsigned small[64];
  unsigned *held = js->queued <= 64 ? small : ux_xcalloc((size_t)js->queued, sizeof *held);
  int may_start = js->starting < js->start_slots;
  size_t n = 0;
  for (ux_job *j = js->qhead; j; j = j->qnext) {
    int running, queued;
    owner_counts_locked(js, j->owner, &running, &queued);
    held[n++] = may_start || j->spec->inside ? (unsigned)running : UX_SHARE_NOT_NOW;
  }
  long pick = ux_share_pick(held, n, (unsigned)js->key_running);
  if (held != small) free(held);
  if (pick < 0) return NULL;
  ux_job *prev = NULL, *j = js->qhead;
  for (long i = 0; i < pick; i++) { prev = j; j = j->qnext; }
  if (prev) prev->qnext = j->qnext; else js->qhead = j->qnext;
  if (js->qtail == j) js->qtail = prev;
  js->queued--;
  if (!j->spec->inside) js->starting++;
  ux_exec_metrics_wait(ux_now_ms() - j->queued_ms);
  return j;
}

static void *worker(void *arg) {
  ux_jobs *js = arg;
  pthread_mutex_lock(&js->mu);
  for (;;) {
    ux_job *j;
    while (!(j = next_job_locked(js)) && !js->stopping) pthread_cond_wait(&js->work, &js->mu);
    if (!j) break;                                   /* stopping, nothing to run */
    js->running++;
    j->state = J_RUNNING;
    pthread_mutex_unlock(&js->mu);
    run_one(js, j);
    pthread_mutex_lock(&js->mu);
    js->running--;
  }
  pthread_mutex_unlock(&js->mu);
  return NULL;
}

ux_jobs *ux_jobs_new(ux_store *st, int workers, int queue, int key_running, int key_queued,
                     int start_slots) {
  ux_jobs *js = ux_xcalloc(1, sizeof *js);
  js->st = st;
  js->workers = workers;
  js->queue_limit = queue;
  js->key_running = key_running > 0 ? key_running : 1;
  js->key_queued = key_queued > 0 ? key_queued : 0;
  js->start_slots = start_slots > 0 ? start_slots : 1;
  if (pthread_mutex_init(&js->mu, NULL) != 0 || pthread_cond_init(&js->work, NULL) != 0 ||
      pthread_cond_init(&js->done, NULL) != 0) {
    free(js);                       /* glibc's init of default objects allocates nothing */
    return NULL;
  }
  js->threads = ux_xcalloc((size_t)workers, sizeof *js->threads);
  for (int i = 0; i < workers; i++)
    if (pthread_create(&js->threads[i], NULL, worker, js) != 0) {
      js->workers = i;
      break;
    }
  return js;
}

/* The room for j's final document, reserved before the job may run:
** UX_JOBS_OK, or the refusal. */
static int reserve(ux_jobs *js, ux_job *j) {
  char party[UX_LEDGER_PARTY_MAX];
  ux_ledger_key(party, sizeof party, j->owner);
  ux_ledger_item(j->item, sizeof j->item, "jobs", j->id);
  j->reserved = ux_jobs_doc_bound(j->spec);
  int held = ux_ledger_reserve(js->st, party, UX_LEDGER_JOB, j->item, j->reserved);
  return held == UX_LEDGER_OK ? UX_JOBS_OK : held == UX_LEDGER_QUOTA ? UX_JOBS_QUOTA
       : held == UX_LEDGER_BUDGET ? UX_JOBS_BUDGET : UX_JOBS_ERROR;
}

int ux_jobs_submit(ux_jobs *js, const char *owner, ux_exec_spec *spec, int defer_row,
                   ux_job **out, int *active, int *limit) {
  ux_job *j = ux_xcalloc(1, sizeof *j);
  snprintf(j->owner, sizeof j->owner, "%s", owner);
  j->created_at = ux_now();
  j->spec = spec;
  j->queued_ms = ux_now_ms();
  int held = ux_random_id(j->id, sizeof j->id, "job_", 12) == 0 ? reserve(js, j) : UX_JOBS_ERROR;
  if (held != UX_JOBS_OK) {
    if (held == UX_JOBS_ERROR) ux_ledger_cancel(js->st, j->item);
    free(j);                                         /* the spec stays the caller's */
    return held;
  }
  pthread_mutex_lock(&js->mu);
  /* capacity counts running and queued together, so two quick submits
  ** are judged the same whether or not a worker already picked one up */
  *active = js->queued + js->running;
  *limit = js->workers + js->queue_limit;
  int own_running, own_queued;
  owner_counts_locked(js, owner, &own_running, &own_queued);
  if (!js->stopping && *active < *limit &&
      own_running + own_queued >= js->key_running + js->key_queued) {
    *active = own_running + own_queued;            /* this key is at its share */
    *limit = js->key_running + js->key_queued;
  }
  int rc = js->stopping ? UX_JOBS_STOPPING : *active >= *limit ? UX_JOBS_FULL : UX_JOBS_OK;
  /* the row first, unless deferred until the id is given out or the job
  ** ends: either way, a job whose id is out is in the store (or active) */
  if (rc == UX_JOBS_OK && !defer_row && store_pending_locked(js, j) != 0) rc = UX_JOBS_ERROR;
  if (rc != UX_JOBS_OK) {
    pthread_mutex_unlock(&js->mu);
    ux_ledger_cancel(js->st, j->item);
    free(j);
    return rc;
  }
  j->refs = 2;                                       /* active list + caller */
  j->anext = js->active;
  js->active = j;
  if (js->qtail) js->qtail->qnext = j; else js->qhead = j;
  js->qtail = j;
  js->queued++;
  pthread_cond_signal(&js->work);
  pthread_mutex_unlock(&js->mu);
  *out = j;
  return UX_JOBS_OK;
}

const char *ux_job_id(const ux_job *job) { return job->id; }

int ux_jobs_wait(ux_jobs *js, ux_job *j, long timeout_ms, const char **status) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (timeout_ms > 0) {
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
  }
  pthread_mutex_lock(&js->mu);
  while (!j->done && timeout_ms != 0) {
    if (timeout_ms < 0) pthread_cond_wait(&js->done, &js->mu);
    else if (pthread_cond_timedwait(&js->done, &js->mu, &until) != 0) break;
  }
  id_out_locked(js, j);
  int terminal = j->done;
  if (status) *status = state_name(j->state);
  pthread_mutex_unlock(&js->mu);
  return terminal;
}

int ux_jobs_final(ux_jobs *js, ux_job *j, ux_spool **out, unsigned long long *len) {
  pthread_mutex_lock(&js->mu);
  ux_jobdoc *d = j->done ? j->doc : NULL;
  pthread_mutex_unlock(&js->mu);
  /* a final document is never changed: reading it needs no lock */
  return d ? ux_jobdoc_spool(d, out, len) : -1;
}

void ux_jobs_release(ux_jobs *js, ux_job *j) {
  pthread_mutex_lock(&js->mu);
  unref_locked(j);
  pthread_mutex_unlock(&js->mu);
}

static ux_job *find_active(ux_jobs *js, const char *id, const char *owner) {
  for (ux_job *j = js->active; j; j = j->anext)
    if (!strcmp(j->id, id) && !strcmp(j->owner, owner)) return j;
  return NULL;
}

void ux_jobs_set_retention(ux_jobs *js, long seconds) {
  pthread_mutex_lock(&js->mu);
  js->retention_s = seconds;
  pthread_mutex_unlock(&js->mu);
}

void ux_jobs_expire_due(ux_jobs *js, const char *id) {
  pthread_mutex_lock(&js->mu);
  long keep = js->retention_s;
  pthread_mutex_unlock(&js->mu);
  if (keep > 0) ux_store_expire_job(js->st, id, ux_now() - keep);
}

char *ux_jobs_get_active(ux_jobs *js, const char *id, const char *owner, size_t *len) {
  pthread_mutex_lock(&js->mu);
  ux_job *j = find_active(js, id, owner);
  char *d = j ? head_text(j, j->state, len) : NULL;
  pthread_mutex_unlock(&js->mu);
  return d;
}

char *ux_jobs_list(ux_jobs *js, const char *owner, size_t *len) {
  ux_jw w;
  int n = 0;
  ux_jw_init(&w);
  ux_jw_open(&w, '[');
  pthread_mutex_lock(&js->mu);
  /* the active list is newest first; the answer is oldest first */
  for (ux_job *j = js->active; j; j = j->anext) if (!strcmp(j->owner, owner)) n++;
  ux_job **mine = ux_xcalloc((size_t)n + 1, sizeof *mine);
  int k = n;
  for (ux_job *j = js->active; j; j = j->anext) if (!strcmp(j->owner, owner)) mine[--k] = j;
  for (int i = 0; i < n; i++) {
    id_out_locked(js, mine[i]);
    ux_jw_open(&w, '{');
    ux_job_head h = head_of(mine[i], mine[i]->state, 0, NULL);
    ux_job_write_head(&w, &h);
    ux_jw_close(&w);
  }
  pthread_mutex_unlock(&js->mu);
  free(mine);
  ux_jw_close(&w);
  size_t alen;
  char *arr = ux_jw_take(&w, &alen);
  char *o = ux_xasprintf("{\"count\":%d,\"jobs\":%s}", n, arr);
  free(arr);
  *len = strlen(o);
  return o;
}

/* Removes a queued job from the queue; 1 if it was there. Locked. */
static int dequeue(ux_jobs *js, ux_job *j) {
  ux_job *prev = NULL;
  for (ux_job *q = js->qhead; q; prev = q, q = q->qnext) {
    if (q != j) continue;
    if (prev) prev->qnext = q->qnext; else js->qhead = q->qnext;
    if (js->qtail == q) js->qtail = prev;
    js->queued--;
    return 1;
  }
  return 0;
}

static void finish_unrun(ux_jobs *js, ux_job *j, jstate s, const char *error) {
  ux_run_result res;
  memset(&res, 0, sizeof res);
  res.exit_code = -1;
  finish(js, j, s, error, &res);
}

int ux_jobs_cancel(ux_jobs *js, const char *id, const char *owner) {
  pthread_mutex_lock(&js->mu);
  ux_job *j = find_active(js, id, owner);
  if (!j) {
    pthread_mutex_unlock(&js->mu);
    ux_jobs_expire_due(js, id);
    json_t *d = ux_db_row(js->st, "SELECT 1 AS found FROM jobs WHERE id = ?1 AND owner = ?2", "ss", id, owner);
    json_decref(d);
    return d ? 1 : -1;
  }
  j->refs++;
  j->cancel = 1;
  if (dequeue(js, j)) {
    pthread_mutex_unlock(&js->mu);
    finish_unrun(js, j, J_CANCELLED, NULL);
    pthread_mutex_lock(&js->mu);
  } else if (j->run_id) {
    ux_run_cancel_id(j->run_id);                     /* safe even if it just ended */
  }
  /* answer once the job really is terminal, so the next poll agrees */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  while (!j->done)
    if (pthread_cond_timedwait(&js->done, &js->mu, &until) != 0) break;
  unref_locked(j);
  pthread_mutex_unlock(&js->mu);
  return 0;
}

void ux_jobs_stop(ux_jobs *js) {
  pthread_mutex_lock(&js->mu);
  js->stopping = 1;
  while (js->qhead) {
    ux_job *j = js->qhead;
    dequeue(js, j);
    j->refs++;
    pthread_mutex_unlock(&js->mu);
    finish_unrun(js, j, J_FAILED, "server shutting down");
    pthread_mutex_lock(&js->mu);
    unref_locked(j);
  }
  for (ux_job *j = js->active; j; j = j->anext)
    if (j->run_id) ux_run_cancel_id(j->run_id);
  pthread_cond_broadcast(&js->work);
  pthread_mutex_unlock(&js->mu);
  for (int i = 0; i < js->workers; i++) pthread_join(js->threads[i], NULL);
  js->workers = 0;
}

void ux_jobs_free(ux_jobs *js) {
  if (!js) return;
  free(js->threads);
  pthread_mutex_destroy(&js->mu);
  pthread_cond_destroy(&js->work);
  pthread_cond_destroy(&js->done);
  free(js);
}

void ux_jobs_depth(ux_jobs *js, int *queued, int *running, int *starting, int *start_slots) {
  pthread_mutex_lock(&js->mu);
  *queued = js->queued;
  *running = js->running;
  *starting = js->starting;
  *start_slots = js->start_slots;
  pthread_mutex_unlock(&js->mu);
}
