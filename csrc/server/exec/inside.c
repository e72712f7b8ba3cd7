/*
** Jobs in living sandboxes (inside.h).
*/
#include "server/exec/inside.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "server/exec/living.h"
#include "server/fsutil.h"
#include "server/mem.h"

#define INPUT_DIR "/tmp/input"

void ux_inside_attach(ux_exec_spec *spec, ux_server *srv, const char *kind, const char *id,
                      json_t *doc) {
  struct ux_inside *in = ux_xcalloc(1, sizeof *in);
  in->srv = srv;
  snprintf(in->kind, sizeof in->kind, "%s", kind);
  snprintf(in->id, sizeof in->id, "%s", id);
  in->doc = doc ? json_incref(doc) : NULL;
  spec->inside = in;
}

void ux_inside_input_files(ux_exec_spec *spec) {
  if (!spec->inside || !spec->run.n_files) return;
  json_t *arr = json_array();
  for (size_t i = 0; i < spec->run.n_files; i++) {
    const ux_file *f = &spec->files[i];
    char *b64 = unsb_base64_encode(f->data, f->len, NULL);
    size_t plen = strlen(INPUT_DIR) + strlen(f->name) + 2;
    char *path = ux_xmalloc(plen);
    snprintf(path, plen, INPUT_DIR "/%s", f->name);
    json_array_append_new(arr, json_pack("{s:s, s:s, s:i}", "path", path, "content_base64", b64 ? b64 : "",
                                         "mode", f->mode ? (int)f->mode : 0644));
    free(path);
    free(b64);
  }
  spec->inside->files = arr;
  spec->inside->in_input = 1;
  spec->run.n_files = 0;                 /* they travel with the command */
}

void ux_inside_free(struct ux_inside *in) {
  if (!in) return;
  json_decref(in->doc);
  json_decref(in->files);
  free(in);
}

/* ---------------------------------------------------------------- run */

typedef struct {
  ux_run_result *res;
  size_t cap, out_cap, err_cap;
  int (*stop)(void *ctx);
  void *ctx;
  int stopped;
} gather;

/* Appends len bytes to *buf (kept up to cap). */
static void keep(char **buf, size_t *len, size_t *have, size_t cap, const char *s, size_t n, int *cut) {
  if (*len + n > cap) { n = cap > *len ? cap - *len : 0; *cut = 1; }
  if (!n) return;
  if (*len + n + 1 > *have) {
    size_t want = *have ? *have * 2 : 4096;
    while (want < *len + n + 1) want *= 2;
    *buf = ux_xrealloc(*buf, want);
    *have = want;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
}

static int on_event(void *ctx, const json_t *ev) {
  gather *g = ctx;
  if (!ev) return g->stopped = g->stop && g->stop(g->ctx);
  const char *ch = json_string_value(json_object_get(ev, "channel"));
  json_t *data = json_object_get(ev, "data");
  ux_run_result *r = g->res;
  if (ch && !strcmp(ch, "stderr"))
    keep(&r->err, &r->err_len, &g->err_cap, g->cap, json_string_value(data), json_string_length(data),
         &r->err_truncated);
  else
    keep(&r->out, &r->out_len, &g->out_cap, g->cap, json_string_value(data), json_string_length(data),
         &r->out_truncated);
  return 0;
}

/* The agent's request for spec. */
static json_t *request(const ux_exec_spec *spec, size_t cap) {
  const struct ux_inside *in = spec->inside;
  json_t *env = json_object();
  for (size_t i = 0; i < spec->run.n_env; i++) {
    const char *eq = strchr(spec->env[i], '=');
    char *name = eq ? ux_xstrndup(spec->env[i], (size_t)(eq - spec->env[i])) : NULL;
    if (name) json_object_set_new(env, name, json_string(eq + 1));
    free(name);
  }
  char *cmd = NULL;
  if (in->in_input) {
    size_t n = strlen(spec->code) + 32;
    cmd = ux_xmalloc(n);
    snprintf(cmd, n, "cd " INPUT_DIR " || exit 1\n%s", spec->code);
  }
  json_t *req = json_pack("{s:s, s:s, s:b, s:b, s:b, s:I, s:I, s:o}", "op", "exec",
                          "command", cmd ? cmd : spec->code, "background", 1, "stream", 1, "collect", 0,
                          "output_max", (json_int_t)cap, "timeout_seconds", (json_int_t)spec->run.ttl_s,
                          "env", env);
  free(cmd);
  if (req && in->files) json_object_set(req, "files", in->files);
  return req;
}

/* The run's end from the agent's answer. */
static void settle(ux_run_result *res, int rc, json_t *result, const char *err, ux_runtimes *rts,
                   const char *why_gone, int stopped) {
  if (rc == UX_RTC_OK) {
    long long code = json_integer_value(json_object_get(result, "exit_code"));
    res->timed_out = json_is_true(json_object_get(result, "timed_out"));
    res->exit_code = res->timed_out ? 128 + 9 : code < 0 ? (int)(128 - code) : (int)code;
  } else if (rc == UX_RTC_CANCELLED || stopped) {
    res->cancelled = 1;
    res->exit_code = 128 + 9;
  } else if (rc == UX_RTC_GONE && why_gone) {
    /* its sandbox ended under it: deleted or restored (cancelled), or
    ** it died (failed, saying why) */
    if (!strncmp(why_gone, "released", 8) || strstr(why_gone, "from outside")) res->cancelled = 1;
    else if (strstr(why_gone, "out of memory")) res->oom_killed = 1;
    else snprintf(res->error, sizeof res->error, "the sandbox ended: %.200s", why_gone);
    res->exit_code = 128 + 9;
  } else {
    snprintf(res->error, sizeof res->error, "%s", err);
    res->exit_code = -1;
  }
  (void)rts;
}

void ux_inside_run(ux_exec_spec *spec, int (*stop)(void *ctx), void *ctx, ux_run_result *res) {
  struct ux_inside *in = spec->inside;
  char err[512] = "";
  size_t per_stream, arts;
  long t0 = ux_now_ms();
  int rc = 0;
  memset(res, 0, sizeof *res);
  ux_rt *rt = !strcmp(in->kind, "session") && in->doc
              ? ux_living_session(in->srv, in->id, in->doc, &rc, err, sizeof err)
              : ux_living_get(in->srv, in->id);
  if (!rt) {
    if (!strcmp(in->kind, "service")) res->cancelled = 1;   /* stopped or deleted meanwhile */
    else snprintf(res->error, sizeof res->error, "%s", err[0] ? err : "the session has no sandbox");
    res->exit_code = -1;
    return;
  }
  ux_run_result_caps(&spec->run, &per_stream, &arts);
  gather g = { res, per_stream, 0, 0, stop, ctx, 0 };
  json_t *req = request(spec, per_stream), *result = NULL;
  /* the agent's own deadline decides; ours only catches an agent that
  ** never answers */
  long ms = spec->run.ttl_s > 0 ? spec->run.ttl_s * 1000L + 30000 : 86400000L;
  rc = req ? ux_rt_call(rt, req, 0, (int)ms, on_event, &g, &result, err, sizeof err) : UX_RTC_INVALID;
  json_decref(req);
  ux_rt_info info;
  const char *why = NULL;
  if (rc == UX_RTC_GONE && ux_runtimes_info(in->srv->living, ux_rt_sb_id(rt), &info) == 0 &&
      (info.status == UX_RT_FAILED || info.status == UX_RT_RELEASED)) why = info.why;
  if (rc == UX_RTC_GONE && !why) why = "released";        /* stopped and forgotten: a DELETE */
  settle(res, rc, result, err, in->srv->living, why, g.stopped);
  json_decref(result);
  ux_rt_put(rt);
  res->elapsed_ms = ux_now_ms() - t0;
}
