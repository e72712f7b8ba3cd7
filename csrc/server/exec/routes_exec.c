/*
** Routes for executing code and managing jobs, plus the small fixed
** ones: health, key validation, languages.
*/
#include <stdio.h>
#include <string.h>

#include "server/fsutil.h"
#include "server/exec/jobs.h"
#include "server/http/routes.h"
#include "server/sandbox/volume.h"

/* The sandboxes prepared ahead: per shape how many wait, and counters
** (how runs found the pool, how many sandboxes failed or died). */
static json_t *pool_json(void) {
  ux_pool_stats st;
  ux_runner_pool_stats(&st);
  json_t *shapes = json_array();
  for (int k = 0; k < st.n_shapes; k++)
    json_array_append_new(shapes, json_pack("{s:s,s:s,s:i}", "language", st.shape[k].language,
      "network_mode", st.shape[k].network ? "semitrusted" : "zerotrust", "ready", st.shape[k].ready));
  return json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:o}", "size", st.size,
    "started", (json_int_t)st.started, "failed", (json_int_t)st.failed,
    "hits", (json_int_t)st.hits, "misses", (json_int_t)st.misses,
    "discarded", (json_int_t)st.discarded, "shapes", shapes);
}

int ux_h_health(ux_req *r, const char *id) {
  (void)id;
  json_t *j = json_object();
  json_object_set_new(j, "status", json_string("ok"));
  json_object_set_new(j, "version", json_string(UNSB_VERSION));
  /* how runs are limited here (cgroup version or rlimits, network) */
  const ux_isolation *iso = ux_runner_isolation();
  json_t *i = json_object();
  json_object_set_new(i, "cgroup", json_string(iso->cgroup));
  json_object_set_new(i, "memory", json_boolean(iso->memory));
  json_object_set_new(i, "memsw", json_boolean(iso->memsw));
  json_object_set_new(i, "pids", json_boolean(iso->pids));
  json_object_set_new(i, "freezer", json_boolean(iso->freezer));
  json_object_set_new(i, "network", json_string(iso->network));
  unsigned long long claimed, budget;
  ux_volume_usage(&claimed, &budget);
  json_object_set_new(i, "disk", json_pack("{s:s,s:I,s:I,s:I}", "mode", ux_volume_mode(),
    "volume_mb", (json_int_t)(ux_volume_disk_bytes() >> 20), "claimed_mb", (json_int_t)(claimed >> 20),
    "budget_mb", (json_int_t)(budget >> 20)));
  json_object_set_new(j, "isolation", i);
  json_object_set_new(j, "pool", pool_json());
  return ux_reply_json(r, 200, j);
}

int ux_h_keys_validate(ux_req *r, const char *id) {
  (void)id;
  /* reaching a handler means the key authenticated: it is valid; what it
  ** may have active is its share of the job pool (jobs.h) */
  int capacity = r->srv->cfg.key_jobs + r->srv->cfg.key_queue;
  int pool = r->srv->cfg.workers + r->srv->cfg.queue;
  if (capacity > pool) capacity = pool;
  json_t *j = json_object();
  json_object_set_new(j, "valid", json_true());
  json_object_set_new(j, "public_key", json_string(r->owner));
  json_object_set_new(j, "tier", json_integer(1));
  json_object_set_new(j, "status", json_string("active"));
  json_object_set_new(j, "valid_through_datetime", json_null());
  json_object_set_new(j, "valid_for_human", json_string("forever (local server)"));
  json_object_set_new(j, "rate_per_minute", json_integer(6000));
  json_object_set_new(j, "burst", json_integer(capacity));
  json_object_set_new(j, "concurrency", json_integer(capacity));
  return ux_reply_json(r, 200, j);
}

int ux_h_languages(ux_req *r, const char *id) {
  (void)id;
  size_t n = 0;
  const char *const *names = ux_languages(&n);
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(names[i]));
  json_t *j = json_object();
  json_object_set_new(j, "count", json_integer((json_int_t)n));
  json_object_set_new(j, "languages", arr);
  return ux_reply_json(r, 200, j);
}

ux_job *ux_submit(ux_req *r, ux_exec_spec *spec, int defer_row) {
  ux_job *job = NULL;
  int active = 0, limit = 0;
  int rc = ux_jobs_submit(r->srv->jobs, r->owner, spec, defer_row, &job, &active, &limit);
  if (rc == UX_JOBS_OK) return job;
  ux_exec_spec_free(spec);
  if (rc == UX_JOBS_ERROR)
    return ux_reply_error(r, 500, "internal_error", "cannot store the job"), NULL;
  if (rc == UX_JOBS_STOPPING) {
    ux_reply_error(r, 503, "shutting_down", "the server is shutting down");
    r->reply.retry_after = 1;
    return NULL;
  }
  json_t *j = json_object();
  json_object_set_new(j, "error", json_string("concurrency_limit_reached"));
  json_object_set_new(j, "message", json_string("too many executions in progress; retry shortly"));
  json_object_set_new(j, "active_executions", json_integer(active));
  json_object_set_new(j, "concurrency_limit", json_integer(limit));
  ux_reply_json(r, 429, j);
  r->reply.retry_after = 1;
  return NULL;
}

/* {"job_id":..,"status":..} for a job not finished yet. */
static json_t *pending_doc(json_t *doc) {
  json_t *j = json_object();
  json_object_set(j, "job_id", json_object_get(doc, "job_id"));
  json_object_set(j, "status", json_object_get(doc, "status"));
  return j;
}

static int execute(ux_req *r, int async) {
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  ux_exec_spec *spec = ux_exec_spec_from_json(r, body, 60);
  json_decref(body);
  if (!spec) return -1;
  /* a synchronous run's row waits until its id is given out (jobs.h) */
  ux_job *job = ux_submit(r, spec, !async);
  if (!job) return -1;
  int terminal = 0;
  long wait_ms = (async || r->defer) ? 0 : r->srv->cfg.sync_ms;
  json_t *doc = ux_jobs_wait(r->srv->jobs, job, wait_ms, &terminal);
  ux_jobs_release(r->srv->jobs, job);
  if (terminal) return ux_reply_json(r, 200, doc);
  json_t *j = pending_doc(doc);
  json_decref(doc);
  /* /execute/async promises "pending" (spec §8); /execute tells the truth */
  if (async) json_object_set_new(j, "status", json_string("pending"));
  return ux_reply_json(r, async ? 202 : 200, j);
}

int ux_h_execute(ux_req *r, const char *id) { (void)id; return execute(r, 0); }
int ux_h_execute_async(ux_req *r, const char *id) { (void)id; return execute(r, 1); }

int ux_h_jobs_list(ux_req *r, const char *id) {
  (void)id;
  return ux_reply_json(r, 200, ux_jobs_list(r->srv->jobs, r->owner));
}

int ux_h_job_get(ux_req *r, const char *id) {
  json_t *doc = ux_jobs_get(r->srv->jobs, id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such job");
  return ux_reply_json(r, 200, doc);
}

int ux_h_job_cancel(ux_req *r, const char *id) {
  int rc = ux_jobs_cancel(r->srv->jobs, id, r->owner);
  if (rc < 0) return ux_reply_error(r, 404, "not_found", "no such job");
  if (rc > 0) return ux_reply_error(r, 409, "job_finished", "the job has already finished");
  json_t *j = json_object();
  json_object_set_new(j, "job_id", json_string(id));
  json_object_set_new(j, "status", json_string("cancelled"));
  return ux_reply_json(r, 200, j);
}

int ux_resource_dir(const ux_server *srv, const char *kind, const char *id, char *out, size_t outlen) {
  return ux_path(out, outlen, "%s/%ss/%s", srv->cfg.data, kind, id);
}
