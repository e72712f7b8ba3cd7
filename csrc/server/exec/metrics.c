/*
** The execution API's metrics (see metrics.h). Counters are kept under one
** mutex; the gauges are read from their owners when scraped, so nothing
** here can drift from what /health reports.
*/
#include "server/exec/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/exec/jobs.h"
#include "server/http/counters.h"
#include "server/sandbox/runner.h"
#include "server/server.h"
#include "server/store/ledger.h"
#include "server/mem.h"

#define MAX_LANGS 128
static const char *const OUTCOMES[] = { "completed", "failed", "timeout", "cancelled" };
#define N_OUTCOMES (sizeof OUTCOMES / sizeof OUTCOMES[0])
/* upper bounds in seconds of the histograms (+Inf is implied) */
static const double BUCKETS[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };
#define N_BUCKETS (sizeof BUCKETS / sizeof BUCKETS[0])

typedef struct {
  unsigned long long bucket[N_BUCKETS + 1], n;   /* non-cumulative; last = +Inf */
  double sum_s;
} histogram;

/* Counts a duration of ms milliseconds (M.lock held). */
static void observe_locked(histogram *h, long ms) {
  double s = ms > 0 ? ms / 1000.0 : 0;
  size_t b = 0;
  while (b < N_BUCKETS && s > BUCKETS[b]) b++;
  h->bucket[b]++;
  h->n++;
  h->sum_s += s;
}

static struct {
  pthread_mutex_t lock;
  ux_counters *requests;
  char lang[MAX_LANGS][32];
  unsigned long long runs[MAX_LANGS][N_OUTCOMES];
  size_t n_langs;
  histogram run, wait;           /* the runs' times; the queue's waits */
} M = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ux_exec_metrics_request(const char *route, int status) {
  pthread_mutex_lock(&M.lock);
  if (!M.requests) M.requests = ux_counters_new();   /* NULL (no memory): not counted */
  pthread_mutex_unlock(&M.lock);
  ux_counters_count(M.requests, route, status);
}

/* The row of a language, added on first use; -1 when the table is full
** (languages are a closed set far below MAX_LANGS). Under M.lock. */
static int lang_row(const char *language) {
  for (size_t i = 0; i < M.n_langs; i++)
    if (!strcmp(M.lang[i], language)) return (int)i;
  if (M.n_langs == MAX_LANGS || strlen(language) >= sizeof M.lang[0]) return -1;
  snprintf(M.lang[M.n_langs], sizeof M.lang[0], "%s", language);
  return (int)M.n_langs++;
}

void ux_exec_metrics_run(const char *language, const char *status, long elapsed_ms) {
  size_t o = 0;
  while (o < N_OUTCOMES && strcmp(OUTCOMES[o], status)) o++;
  pthread_mutex_lock(&M.lock);
  int row = lang_row(language ? language : "");
  if (row >= 0 && o < N_OUTCOMES) M.runs[row][o]++;
  observe_locked(&M.run, elapsed_ms);
  pthread_mutex_unlock(&M.lock);
}

void ux_exec_metrics_wait(long waited_ms) {
  pthread_mutex_lock(&M.lock);
  observe_locked(&M.wait, waited_ms);
  pthread_mutex_unlock(&M.lock);
}

/* A growing text buffer (allocations follow server/mem.h). */
typedef struct { char *p; size_t len, cap; } text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  for (int pass = 0; pass < 2; pass++) {
    va_start(ap, fmt);
    int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < t->cap - t->len) { t->len += (size_t)n; return; }
    t->cap = (t->cap + (size_t)n) * 2;              /* room, then the second pass */
    t->p = ux_xrealloc(t->p, t->cap);
  }
}

/* A histogram in the exposition format (cumulative buckets). */
static void put_histogram(text *t, const char *name, const char *help, const histogram *h) {
  put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  unsigned long long cum = 0;
  for (size_t b = 0; b < N_BUCKETS; b++) {
    cum += h->bucket[b];
    put(t, "%s_bucket{le=\"%g\"} %llu\n", name, BUCKETS[b], cum);
  }
  put(t, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.3f\n%s_count %llu\n", name, h->n, name, h->sum_s,
      name, h->n);
}

static void put_runs(text *t) {
  put(t, "# HELP unsandboxd_runs_total Execute jobs finished, by language and outcome.\n"
         "# TYPE unsandboxd_runs_total counter\n");
  for (size_t i = 0; i < M.n_langs; i++)
    for (size_t o = 0; o < N_OUTCOMES; o++)
      if (M.runs[i][o])
        put(t, "unsandboxd_runs_total{language=\"%s\",outcome=\"%s\"} %llu\n", M.lang[i],
            OUTCOMES[o], M.runs[i][o]);
  put_histogram(t, "unsandboxd_run_duration_seconds", "Run time of finished execute jobs.",
                &M.run);
  put_histogram(t, "unsandboxd_job_wait_seconds", "Time jobs waited queued for a worker and "
                "a start slot (--starts).", &M.wait);
}

static void put_gauges(text *t, ux_jobs *jobs) {
  int queued = 0, running = 0, starting = 0, slots = 0;
  ux_jobs_depth(jobs, &queued, &running, &starting, &slots);
  put(t, "# HELP unsandboxd_jobs_queued Jobs waiting for a worker.\n"
         "# TYPE unsandboxd_jobs_queued gauge\nunsandboxd_jobs_queued %d\n"
         "# HELP unsandboxd_jobs_running Jobs a worker is running.\n"
         "# TYPE unsandboxd_jobs_running gauge\nunsandboxd_jobs_running %d\n"
         "# HELP unsandboxd_sandboxes_live Sandboxes running a program (jobs, session and "
         "service commands, Control Plane runtimes).\n"
         "# TYPE unsandboxd_sandboxes_live gauge\nunsandboxd_sandboxes_live %d\n",
      queued, running, ux_runner_live());
  put(t, "# HELP unsandboxd_jobs_starting Jobs starting their sandbox now.\n"
         "# TYPE unsandboxd_jobs_starting gauge\nunsandboxd_jobs_starting %d\n"
         "# HELP unsandboxd_start_slots The most jobs that may start their sandbox at once (--starts).\n"
         "# TYPE unsandboxd_start_slots gauge\nunsandboxd_start_slots %d\n", starting, slots);
  ux_pool_stats st;
  ux_runner_pool_stats(&st);
  put(t, "# HELP unsandboxd_pool_ready Sandboxes started ahead and waiting, by shape.\n"
         "# TYPE unsandboxd_pool_ready gauge\n");
  for (int k = 0; k < st.n_shapes; k++)
    put(t, "unsandboxd_pool_ready{language=\"%s\",network_mode=\"%s\"} %d\n", st.shape[k].language,
        st.shape[k].network ? "semitrusted" : "zerotrust", st.shape[k].ready);
  put(t, "# HELP unsandboxd_pool_runs_total Runs of a pooled shape, by whether a sandbox was ready.\n"
         "# TYPE unsandboxd_pool_runs_total counter\n"
         "unsandboxd_pool_runs_total{found=\"ready\"} %llu\n"
         "unsandboxd_pool_runs_total{found=\"none\"} %llu\n", st.hits, st.misses);
}

/* What is stored, by kind, and the budget: the ledger's totals (no
** party's own: /metrics needs no key). */
static void put_storage(text *t, ux_store *st) {
  ux_ledger_usage u;
  if (ux_ledger_usage_of(st, NULL, &u) != 0) return;
  put(t, "# HELP unsandboxd_storage_bytes Bytes stored by all keys and tenants (reserved ones"
         " included), by kind.\n# TYPE unsandboxd_storage_bytes gauge\n");
  for (int k = 0; k < UX_LEDGER_KINDS; k++)
    put(t, "unsandboxd_storage_bytes{kind=\"%s\"} %llu\n", ux_ledger_kind_name((ux_ledger_kind)k),
        u.kind[k].bytes);
  put(t, "# HELP unsandboxd_storage_budget_bytes The most all of it may take (--disk-budget-mb).\n"
         "# TYPE unsandboxd_storage_budget_bytes gauge\nunsandboxd_storage_budget_bytes %llu\n", u.limit);
}

int ux_h_metrics(ux_req *r, const char *id) {
  (void)id;
  text t = { ux_xmalloc(4096), 0, 4096 };
  size_t rlen = 0;
  char *requests = NULL;
  if (M.requests)
    requests = ux_counters_text(M.requests, "unsandboxd_requests_total",
                                "Requests answered, by route and status.", &rlen);
  pthread_mutex_lock(&M.lock);
  put_runs(&t);
  pthread_mutex_unlock(&M.lock);
  put_gauges(&t, r->srv->jobs);
  put_storage(&t, r->srv->store);
  if (requests) put(&t, "%s", requests);
  free(requests);
  int rc = ux_reply_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8", t.p, t.len);
  free(t.p);
  return rc;
}
