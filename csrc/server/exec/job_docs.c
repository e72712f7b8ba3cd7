/*
** Job documents as text (job_docs.h). The key order is the wire's: the
** scalar head first, nested values (artifacts) last; success right after
** exit_code (several SDKs read it instead of comparing exit_code).
*/
#include "server/exec/job_docs.h"

#include <string.h>

void ux_job_write_head(ux_jw *w, const ux_job_head *h) {
  ux_jw_key(w, "job_id");       ux_jw_cstr(w, h->id);
  ux_jw_key(w, "status");       ux_jw_cstr(w, h->status);
  ux_jw_key(w, "language");     ux_jw_cstr(w, h->language);
  ux_jw_key(w, "created_at");   ux_jw_int(w, h->created_at);
  ux_jw_key(w, "completed_at");
  if (h->completed_at) ux_jw_int(w, h->completed_at); else ux_jw_null(w);
  ux_jw_key(w, "error");
  if (h->error && *h->error) ux_jw_cstr(w, h->error); else ux_jw_null(w);
}

char *ux_job_head_text(const ux_job_head *h, size_t *len) {
  ux_jw w;
  ux_jw_init(&w);
  ux_jw_open(&w, '{');
  ux_job_write_head(&w, h);
  ux_jw_close(&w);
  return ux_jw_take(&w, len);
}

static void write_artifacts(ux_jw *w, const ux_run_result *res, int keep_output) {
  ux_jw_key(w, "artifacts");
  ux_jw_open(w, '[');
  for (size_t i = 0; keep_output && i < res->n_artifacts; i++) {
    ux_jw_open(w, '{');
    ux_jw_key(w, "filename");
    ux_jw_cstr(w, res->artifacts[i].name);
    ux_jw_key(w, "content_base64");
    ux_jw_base64(w, res->artifacts[i].data, res->artifacts[i].len);
    ux_jw_close(w);
  }
  ux_jw_close(w);
}

void ux_job_write_final(ux_jw *w, const ux_job_head *h, const ux_run_result *res,
                        int want_artifacts, int keep_output) {
  ux_jw_open(w, '{');
  ux_job_write_head(w, h);
  ux_jw_key(w, "exit_code");   ux_jw_int(w, res->exit_code);
  ux_jw_key(w, "success");     ux_jw_bool(w, !strcmp(h->status, "completed") && res->exit_code == 0);
  ux_jw_key(w, "stdout");
  ux_jw_str(w, keep_output && res->out ? res->out : "", keep_output ? res->out_len : 0);
  ux_jw_key(w, "stderr");
  ux_jw_str(w, keep_output && res->err ? res->err : "", keep_output ? res->err_len : 0);
  ux_jw_key(w, "stdout_truncated"); ux_jw_bool(w, !keep_output || res->out_truncated);
  ux_jw_key(w, "stderr_truncated"); ux_jw_bool(w, !keep_output || res->err_truncated);
  ux_jw_key(w, "execution_time_ms"); ux_jw_int(w, res->elapsed_ms);
  ux_jw_key(w, "execution_time");    ux_jw_int(w, (long long)res->elapsed_ms * 1000);
  ux_jw_key(w, "oom_killed");        ux_jw_bool(w, res->oom_killed);
  if (want_artifacts) write_artifacts(w, res, keep_output);   /* nested values last */
  ux_jw_close(w);
}
