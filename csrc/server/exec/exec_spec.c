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
#include "server/ids.h"
#include "server/sandbox/volume.h"

#define MAX_ENV 256
#define MAX_FILES 1000

void ux_exec_spec_free(ux_exec_spec *s) {
  if (!s) return;
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
  s->volume = strdup(dir);
  s->run.workdir = s->volume;
  return s->volume ? 0 : -1;
}

int ux_exec_spec_open_volume(ux_exec_spec *s, char *err, size_t errlen) {
  if (!s->volume || s->work_fd >= 0) return 0;
  if ((s->work_fd = ux_volume_acquire(s->volume, err, errlen)) < 0) return -1;
  s->run.workdir_fd = s->work_fd;
  return 0;
}

int ux_network_mode(ux_req *r, json_t *body, const char *dflt) {
  const char *mode;
  if (ux_get_str(r, body, "network_mode", 0, dflt, &mode) < 0) return -1;
  if (!strcmp(mode, "zerotrust")) return 0;
  if (!strcmp(mode, "semitrusted")) return 1;
  return ux_reply_error(r, 400, "bad_request",
                        "network_mode must be \"zerotrust\" or \"semitrusted\"");
}

static int env_name_ok(const char *k) {
  if (!*k || (*k >= '0' && *k <= '9')) return 0;
  for (; *k; k++)
    if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
          (*k >= '0' && *k <= '9') || *k == '_')) return 0;
  return 1;
}

static int parse_env(ux_req *r, ux_exec_spec *s, json_t *env) {
  const char *k;
  json_t *v;
  if (!env || json_is_null(env)) return 0;
  if (!json_is_object(env))
    return ux_reply_error(r, 400, "bad_request", "field 'env' must be an object");
  if (json_object_size(env) > MAX_ENV)
    return ux_reply_error(r, 400, "bad_request", "at most %d environment variables", MAX_ENV);
  s->env = calloc(json_object_size(env) + 1, sizeof *s->env);
  json_object_foreach(env, k, v) {
    if (!env_name_ok(k))
      return ux_reply_error(r, 400, "bad_request", "bad environment variable name");
    if (!json_is_string(v))
      return ux_reply_error(r, 400, "bad_request", "env values must be strings");
    const char *val = json_string_value(v);
    if (strlen(val) != json_string_length(v))
      return ux_reply_error(r, 400, "bad_request", "env values must not contain NUL");
    size_t n = strlen(k) + strlen(val) + 2;
    char *kv = malloc(n);
    snprintf(kv, n, "%s=%s", k, val);
    s->env[s->run.n_env++] = kv;
  }
  return 0;
}

int ux_exec_spec_files(ux_req *r, ux_exec_spec *s, json_t *files) {
  size_t i;
  json_t *f;
  if (!files || json_is_null(files)) return 0;
  if (!json_is_array(files))
    return ux_reply_error(r, 400, "bad_request", "field 'input_files' must be an array");
  if (json_array_size(files) > MAX_FILES)
    return ux_reply_error(r, 400, "bad_request", "at most %d input files", MAX_FILES);
  s->files = calloc(json_array_size(files) + 1, sizeof *s->files);
  json_array_foreach(files, i, f) {
    json_t *name = json_object_get(f, "filename");
    json_t *content = json_object_get(f, "content");
    if (!json_is_object(f) || !json_is_string(name) || !json_is_string(content))
      return ux_reply_error(r, 400, "bad_request",
                            "input_files[%zu] needs string 'filename' and 'content'", i);
    if (!ux_valid_relpath(json_string_value(name)))
      return ux_reply_error(r, 400, "bad_request", "input_files[%zu]: bad file name", i);
    ux_file *uf = &s->files[s->run.n_files];
    uf->data = unsb_base64_decode(json_string_value(content), json_string_length(content), &uf->len);
    if (!uf->data)
      return ux_reply_error(r, 400, "bad_request",
                            "input_files[%zu]: content is not valid base64", i);
    uf->name = strdup(json_string_value(name));
    s->run.n_files++;
  }
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
  ux_exec_spec *s = calloc(1, sizeof *s);
  if (s) s->work_fd = -1;
  if (!s) { ux_reply_error(r, 500, "internal_error", "out of memory"); return NULL; }
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
  s->language = strdup(lang);
  s->code = malloc(json_string_length(json_object_get(body, "code")) + 1);
  memcpy(s->code, code, json_string_length(json_object_get(body, "code")) + 1);
  s->run.code_len = json_string_length(json_object_get(body, "code"));
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
  ux_exec_spec *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->language = strdup("bash");
  s->code = strdup(command);
  s->work_fd = -1;
  if (!s->language || !s->code) { ux_exec_spec_free(s); return NULL; }
  s->run.code_len = strlen(command);
  s->run.network = network;
  s->run.vcpu = vcpu;
  s->run.ttl_s = ttl_s;
  finish(s);
  return s;
}
