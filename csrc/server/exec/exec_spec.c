/*
** Validation of execute-shaped request bodies. Everything a client can
** get wrong is answered here with a 400 that names the field, before a
** job exists; the runner then only sees well-formed specs.
*/
#include "server/exec/exec_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/validate.h"
#include "server/exec/inside.h"
#include "server/ids.h"
#include "server/mem.h"
#include "server/sandbox/volume.h"

int ux_exec_spec_claim(ux_exec_spec *s, char *err, size_t errlen) {
  if (ux_mem_claim(&s->mem, ux_run_memory_bytes(s->run.vcpu), err, errlen) != 0) return -1;
  s->run.mem = &s->mem;
  return 0;
}

void ux_exec_spec_free(ux_exec_spec *s) {
  if (!s) return;
  ux_mem_release(&s->mem);              /* its run, if any, has ended */
  ux_inside_free(s->inside);
  for (size_t i = 0; i < s->run.n_env; i++) free(s->env[i]);
  for (size_t i = 0; i < s->run.n_files; i++) {
    free(s->files[i].name);
    free(s->files[i].data);
  }
  free(s->env);
  free(s->files);
  free(s->language);
  free(s->code);
  if (s->volume && s->work_fd >= 0) {
    close(s->work_fd);
    ux_volume_release(s->volume);
  }
  free(s->volume);
  free(s);
}

int ux_exec_spec_set_volume(ux_exec_spec *s, const char *dir) {
  free(s->volume);
  s->volume = ux_xstrdup(dir);
  s->run.workdir = s->volume;
  return 0;
}

int ux_exec_spec_open_volume(ux_exec_spec *s, char *err, size_t errlen) {
  if (!s->volume || s->work_fd >= 0) return 0;
  if ((s->work_fd = ux_volume_acquire(s->volume, err, errlen)) < 0) return -1;
  s->run.workdir_fd = s->work_fd;
  return 0;
}

int ux_network_mode(ux_req *r, json_t *body, const char *dflt) {
  const char *mode;
  /* "network" is the Lua SDK's name for it (lenient mode only) */
  const char *key = r->srv && r->srv->cfg.lenient && !json_object_get(body, "network_mode") &&
                    json_object_get(body, "network") ? "network" : "network_mode";
  if (ux_get_str(r, body, key, 0, dflt, &mode) < 0) return -1;
  if (!strcmp(mode, "zerotrust")) return 0;
  if (!strcmp(mode, "semitrusted")) return 1;
  return ux_reply_error(r, 400, "bad_request",
                        "network_mode must be \"zerotrust\" or \"semitrusted\"");
}

/* env: an object of strings, checked whole by the core's rule
** (validate.h) before anything is copied, so a spec the runner would
** refuse (a bad name, 257 variables, more than 256 KiB) is a 400 here. */
static int parse_env(ux_req *r, ux_exec_spec *s, json_t *env) {
  const char *k;
  json_t *v;
  size_t n = 0, bad;
  if (!env || json_is_null(env)) return 0;
  if (!json_is_object(env))
    return ux_reply_error(r, 400, "bad_request", "field 'env' must be an object");
  if (json_object_size(env) > UNSB_ENV_MAX_VARS)
    return ux_reply_error(r, 400, "bad_request", "at most %d environment variables",
                          UNSB_ENV_MAX_VARS);
  unsb_env_var vars[UNSB_ENV_MAX_VARS];
  json_object_foreach(env, k, v) {
    if (!json_is_string(v))
      return ux_reply_error(r, 400, "bad_request", "env values must be strings");
    vars[n++] = (unsb_env_var){ k, json_string_value(v), strlen(k), json_string_length(v) };
  }
  const char *why = unsb_env_check(vars, n, &bad);
  if (why && bad < n)
    return ux_reply_error(r, 400, "bad_request", "env: variable %zu: %s", bad, why);
  if (why) return ux_reply_error(r, 400, "bad_request", "env: %s", why);
  s->env = ux_xcalloc(n + 1, sizeof *s->env);
  for (size_t i = 0; i < n; i++) {
    size_t len = vars[i].name_len + vars[i].value_len + 2;
    s->env[i] = ux_xmalloc(len);
    snprintf(s->env[i], len, "%s=%s", vars[i].name, vars[i].value);
  }
  s->run.n_env = n;
  return 0;
}

/* Names that cannot all be placed ("a" and "a/b", or one name twice)
** are the request's fault, not the sandbox's: 400 before a job exists. */
static int check_file_set(ux_req *r, json_t *files) {
  size_t n = json_array_size(files), i, j;
  const char **names = ux_xcalloc(n + 1, sizeof *names);
  size_t *lens = ux_xcalloc(n + 1, sizeof *lens), *order = ux_xcalloc(n + 1, sizeof *order);
  for (size_t k = 0; k < n; k++) {
    json_t *name = json_object_get(json_array_get(files, k), "filename");
    names[k] = json_string_value(name);
    lens[k] = json_string_length(name);
  }
  const char *why = unsb_paths_conflict(names, lens, n, order, &i, &j);
  int rc = why ? ux_reply_error(r, 400, "bad_request", "input_files[%zu] and [%zu]: %s",
                                i < j ? i : j, i < j ? j : i, why) : 0;
  free(names);
  free(lens);
  free(order);
  return rc;
}

/* The mode rule of exec_spec.h: sent, else a script's 0755, else 0644. */
static unsigned file_mode(const ux_file *f, json_t *mode) {
  size_t n = strlen(f->name);
  if (mode) return (unsigned)json_integer_value(mode);
  if ((f->len >= 2 && f->data[0] == '#' && f->data[1] == '!') || (n > 3 && !strcmp(f->name + n - 3, ".sh")))
    return 0755;
  return 0644;
}

int ux_exec_spec_files(ux_req *r, ux_exec_spec *s, json_t *files) {
  size_t i;
  json_t *f;
  if (!files || json_is_null(files)) return 0;
  if (!json_is_array(files))
    return ux_reply_error(r, 400, "bad_request", "field 'input_files' must be an array");
  if (json_array_size(files) > UNSB_FILES_MAX)
    return ux_reply_error(r, 400, "bad_request", "at most %d input files", UNSB_FILES_MAX);
  json_array_foreach(files, i, f) {
    json_t *name = json_object_get(f, "filename");
    json_t *content = json_object_get(f, "content");
    if (!json_is_object(f) || !json_is_string(name) || !json_is_string(content))
      return ux_reply_error(r, 400, "bad_request",
                            "input_files[%zu] needs string 'filename' and 'content'", i);
    const char *why = unsb_relpath_check(json_string_value(name), json_string_length(name));
    if (why) return ux_reply_error(r, 400, "bad_request", "input_files[%zu]: file name %s", i, why);
    json_t *mode = json_object_get(f, "mode");
    if (mode && (!json_is_integer(mode) || json_integer_value(mode) < 0 || json_integer_value(mode) > 0777))
      return ux_reply_error(r, 400, "bad_request", "input_files[%zu]: mode must be an integer 0-511 (0777)", i);
  }
  if (check_file_set(r, files) < 0) return -1;
  s->files = ux_xcalloc(json_array_size(files) + 1, sizeof *s->files);
  json_array_foreach(files, i, f) {
    json_t *content = json_object_get(f, "content");
    ux_file *uf = &s->files[s->run.n_files];
    uf->data = unsb_base64_decode(json_string_value(content), json_string_length(content), &uf->len);
    if (!uf->data)
      return ux_reply_error(r, 400, "bad_request",
                            "input_files[%zu]: content is not valid base64", i);
    uf->name = ux_xstrdup(json_string_value(json_object_get(f, "filename")));
    uf->mode = file_mode(uf, json_object_get(f, "mode"));
    s->run.n_files++;
  }
  return 0;
}

int ux_exec_spec_take_env(ux_exec_spec *s, char **env, size_t n) {
  if (!env) return 0;
  if (s->env || s->run.n_env) {
    for (size_t i = 0; i < n; i++) free(env[i]);
    free(env);
    return -1;
  }
  s->env = env;
  s->run.n_env = n;
  s->run.env = (const char *const *)s->env;
  return 0;
}

/* Points the runner view at the owned fields. */
static void finish(ux_exec_spec *s) {
  s->run.language = s->language;
  s->run.code = s->code;
  s->run.env = (const char *const *)s->env;
  s->run.files = s->files;
}

ux_exec_spec *ux_exec_spec_from_json(ux_req *r, json_t *body, long dflt_ttl) {
  const char *lang, *code;
  long ttl, vcpu;
  int art1, art2, net;
  ux_exec_spec *s = ux_xcalloc(1, sizeof *s);
  s->work_fd = -1;
  if (ux_get_str(r, body, "language", 1, NULL, &lang) < 0 ||
      ux_get_str(r, body, "code", 1, NULL, &code) < 0 ||
      ux_get_int(r, body, "ttl", 1, 900, dflt_ttl, &ttl) < 0 ||
      ux_get_int(r, body, "vcpu", 1, 8, 1, &vcpu) < 0 ||
      ux_get_bool(r, body, "return_artifact", 0, &art1) < 0 ||
      ux_get_bool(r, body, "return_artifacts", 0, &art2) < 0 ||
      (net = ux_network_mode(r, body, "zerotrust")) < 0 ||
      parse_env(r, s, json_object_get(body, "env")) < 0 ||
      ux_exec_spec_files(r, s, json_object_get(body, "input_files")) < 0)
    goto fail;
  if (!ux_language_known(lang)) {
    ux_reply_error(r, 400, "unsupported_language",
                   "language is not supported here; GET /languages lists the available ones");
    goto fail;
  }
  size_t code_len = json_string_length(json_object_get(body, "code"));
  s->language = ux_xstrdup(lang);
  s->code = memcpy(ux_xmalloc(code_len + 1), code, code_len + 1);
  s->run.code_len = code_len;
  s->run.network = net;
  s->run.ttl_s = (int)ttl;
  s->run.vcpu = (int)vcpu;
  s->run.want_artifacts = art1 || art2;
  finish(s);
  return s;
fail:
  ux_exec_spec_free(s);
  return NULL;
}

ux_exec_spec *ux_exec_spec_command(const char *command, int network, int vcpu, int ttl_s) {
  ux_exec_spec *s = ux_xcalloc(1, sizeof *s);
  s->language = ux_xstrdup("bash");
  s->code = ux_xstrdup(command);
  s->work_fd = -1;
  s->run.code_len = strlen(command);
  s->run.network = network;
  s->run.vcpu = vcpu;
  s->run.ttl_s = ttl_s;
  finish(s);
  return s;
}
