/*
** Routes for executing code and managing jobs, plus the small fixed
** ones: health, key validation, languages.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fsutil.h"
#include "server/jsonw.h"
#include "server/mem.h"
#include "server/exec/shells.h"
#include "server/exec/jobs.h"
#include "server/exec/routes.h"
#include "server/sandbox/membudget.h"
#include "server/sandbox/volume.h"
#include "server/store/ledger.h"

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

/* What party (NULL: everyone) stores, by kind: for /health (everyone,
** with the limits) and /keys/validate (the key's own, no other's). */
json_t *ux_storage_json(ux_server *srv, const char *party) {
  ux_ledger_usage u;
  json_t *kinds = json_object();
  if (ux_ledger_usage_of(srv->store, party, &u) != 0) memset(&u, 0, sizeof u);
  for (int k = 0; k < UX_LEDGER_KINDS; k++)
    json_object_set_new(kinds, ux_ledger_kind_name((ux_ledger_kind)k), json_pack("{s:I,s:I}",
      "bytes", (json_int_t)u.kind[k].bytes, "items", (json_int_t)u.kind[k].items));
  json_t *j = json_pack("{s:I}", "used_bytes", (json_int_t)u.used);
  if (party) {
    json_object_set_new(j, "quota_bytes", json_integer((json_int_t)u.limit));
  } else {
    ux_ledger_limits lim;
    ux_ledger_limits_of(srv->store, &lim);
    json_object_set_new(j, "budget_bytes", json_integer((json_int_t)lim.budget));
    json_object_set_new(j, "key_quota_bytes", json_integer((json_int_t)lim.key_quota));
    json_object_set_new(j, "tenant_quota_bytes", json_integer((json_int_t)lim.tenant_quota));
    json_object_set_new(j, "job_retention_s", json_integer(srv->cfg.job_retention_s));
  }
  json_object_set_new(j, "kinds", kinds);
  return j;
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
  json_t *storage = ux_storage_json(r->srv, NULL);
  json_t *volumes = json_object_get(json_object_get(storage, "kinds"), "volume");
  json_object_set_new(i, "disk", json_pack("{s:s,s:I,s:I,s:I}", "mode", ux_volume_mode(),
    "volume_mb", (json_int_t)(ux_volume_disk_bytes() >> 20),
    "claimed_mb", (json_int_t)(json_integer_value(json_object_get(volumes, "bytes")) >> 20),
    "budget_mb", (json_int_t)(json_integer_value(json_object_get(storage, "budget_bytes")) >> 20)));
  /* every run's memory limit is claimed from one budget (membudget.h) */
  unsigned long long claimed, budget;
  ux_membudget_usage(&claimed, &budget);
  json_object_set_new(i, "memory_budget", json_pack("{s:I,s:I}", "budget_mb", (json_int_t)(budget >> 20),
    "claimed_mb", (json_int_t)(claimed >> 20)));
  json_object_set_new(j, "isolation", i);
  json_object_set_new(j, "pool", pool_json());
  json_object_set_new(j, "storage", storage);
  /* what a session may name (shells.h) */
  json_object_set_new(j, "shells", ux_shells_json());
  json_object_set_new(j, "multiplexers", ux_multiplexers_json());
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
  char party[UX_LEDGER_PARTY_MAX];
  ux_ledger_key(party, sizeof party, r->owner);
  json_object_set_new(j, "storage", ux_storage_json(r->srv, party));
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

/* 429 for a run whose memory the budget cannot hold now (membudget.h). */
int ux_reply_no_memory(ux_req *r, const char *why) {
  ux_reply_error(r, 429, "memory_limit_reached", "%s; retry when runs have ended", why);
  r->reply.retry_after = 1;
  return -1;
}

ux_job *ux_submit(ux_req *r, ux_exec_spec *spec, int defer_row) {
  ux_job *job = NULL;
  int active = 0, limit = 0;
  char why[200];
  /* refused now when the sessions, services and runtimes leave its run no
  ** room; its run claims when a worker starts it (membudget.h), so a
  ** queued job holds nothing. A command inside a living sandbox uses the
  ** memory its sandbox holds. */
  if (!spec->inside && ux_mem_fits(ux_run_memory_bytes(spec->run.vcpu), why, sizeof why) != 0) {
    ux_exec_spec_free(spec);
    return ux_reply_no_memory(r, why), NULL;
  }
  int rc = ux_jobs_submit(r->srv->jobs, r->owner, spec, defer_row, &job, &active, &limit);
  if (rc == UX_JOBS_OK) return job;
  if (rc == UX_JOBS_QUOTA || rc == UX_JOBS_BUDGET) {
    ux_reply_storage(r, rc == UX_JOBS_QUOTA ? UX_LEDGER_QUOTA : UX_LEDGER_BUDGET,
                     ux_jobs_doc_bound(spec));
    ux_exec_spec_free(spec);
    return NULL;
  }
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

static int execute(ux_req *r, int async) {
  json_t *body = ux_body_object(r, 0);
  if (!body) return -1;
  ux_exec_spec *spec = ux_exec_spec_from_json(r, body, 60);
  json_decref(body);
  if (!spec) return -1;
  /* a synchronous run's row waits until its id is given out (jobs.h) */
  ux_job *job = ux_submit(r, spec, !async);
  if (!job) return -1;
  long wait_ms = (async || r->defer) ? 0 : r->srv->cfg.sync_ms;
  const char *status = NULL;
  int rc;
  if (ux_jobs_wait(r->srv->jobs, job, wait_ms, &status)) {
    rc = ux_reply_finished_job(r, job);
  } else {
    /* /execute/async promises "pending" (spec §8); /execute tells the truth */
    json_t *j = json_pack("{s:s,s:s}", "job_id", ux_job_id(job), "status", async ? "pending" : status);
    rc = ux_reply_json(r, async ? 202 : 200, j);
  }
  ux_jobs_release(r->srv->jobs, job);
  return rc;
}

int ux_h_execute(ux_req *r, const char *id) { (void)id; return execute(r, 0); }
int ux_h_execute_async(ux_req *r, const char *id) { (void)id; return execute(r, 1); }

int ux_reply_list(ux_req *r, const char *name, ux_jw *w, int n) {
  size_t len;
  char *arr = ux_jw_take(w, &len);
  char head[96];
  int hl = snprintf(head, sizeof head, "{\"count\":%d,\"%s\":", n, name);
  char *text = ux_xmalloc((size_t)hl + len + 2);
  memcpy(text, head, (size_t)hl);
  memcpy(text + hl, arr, len);
  memcpy(text + hl + len, "}", 2);
  free(arr);
  return ux_reply_take(r, 200, NULL, text, (size_t)hl + len + 1);
}

int ux_h_jobs_list(ux_req *r, const char *id) {
  (void)id;
  size_t len;
  char *text = ux_jobs_list(r->srv->jobs, r->owner, &len);
  return ux_reply_take(r, 200, NULL, text, len);
}

static ssize_t spool_read(void *ctx, unsigned long long pos, char *buf, size_t max) {
  return ux_spool_read(ctx, pos, buf, max);
}
static void spool_put(void *ctx) { ux_spool_put(ctx); }

/* 200 with the stored document of finished job id, pulled from a spool
** (store.h) as the client takes it, never parsed and serialised again: a
** slow reader of a large one holds one small buffer. 1 answered, 0 no
** such row, -1 the store failed. */
static int reply_stored_job(ux_req *r, const char *id) {
  ux_spool *sp;
  unsigned long long len = 0;
  ux_jobs_expire_due(r->srv->jobs, id);
  int rc = ux_store_spool(r->srv->store, "jobs", id, r->owner, &sp, &len);
  if (rc != 1) return rc;
  return ux_reply_source(r, 200, "application/json", len, spool_read, spool_put, sp) == 0 ? 1 : -1;
}

int ux_reply_finished_job(ux_req *r, ux_job *job) {
  ux_spool *sp;
  unsigned long long len;
  /* the document as the job wrote it: the same bytes the store keeps,
  ** whether or not its row could be stored */
  if (ux_jobs_final(r->srv->jobs, job, &sp, &len) != 0)
    return ux_reply_error(r, 500, "internal_error", "cannot read the job");
  return ux_reply_source(r, 200, "application/json", len, spool_read, spool_put, sp);
}

int ux_h_job_get(ux_req *r, const char *id) {
  size_t len;
  char *head = ux_jobs_get_active(r->srv->jobs, id, r->owner, &len);
  if (head) return ux_reply_take(r, 200, NULL, head, len);
  int rc = reply_stored_job(r, id);
  if (rc == 0) return ux_reply_error(r, 404, "not_found", "no such job");
  if (rc < 0) return ux_reply_error(r, 500, "internal_error", "cannot read the job");
  return 0;
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

int ux_reply_storage(ux_req *r, int refusal, unsigned long long bytes) {
  char party[UX_LEDGER_PARTY_MAX], why[400];
  if (refusal == UX_LEDGER_ERROR) return ux_reply_error(r, 500, "internal_error", "cannot count the storage");
  ux_ledger_key(party, sizeof party, r->owner);
  ux_ledger_explain(r->srv->store, party, refusal, bytes, why, sizeof why);
  return ux_reply_error(r, 507, "insufficient_storage", "%s", why);
}

int ux_resource_dir(const ux_server *srv, const char *kind, const char *id, char *out, size_t outlen) {
  return ux_path(out, outlen, "%s/%ss/%s", srv->cfg.data, kind, id);
}
