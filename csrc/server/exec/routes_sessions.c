/*
** Sessions: a persistent work directory, DATA/sessions/<id>/work; each
** shell command is one sandbox run (bash) with that directory mounted as
** its work directory, so files persist between commands while processes
** do not. Sessions are not reaped when their ttl runs out; remaining_ttl
** is informational.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/ids.h"
#include "server/exec/jobs.h"
#include "server/http/routes.h"
#include "server/store/store.h"

static int write_file(const char *dir, const ux_file *f) {
  char path[8192];
  if (ux_path(path, sizeof path, "%s/%s", dir, f->name) < 0) return -1;
  char *slash = strrchr(path, '/');
  *slash = '\0';
  if (ux_mkdir_p(path, 0755) < 0) return -1;
  *slash = '/';
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < f->len) {
    ssize_t n = write(fd, f->data + off, f->len - off);
    if (n <= 0) { close(fd); return -1; }
    off += (size_t)n;
  }
  return close(fd);
}

int ux_make_workdir(ux_req *r, const char *kind, const char *id, json_t *files,
                    char *workdir, size_t wlen) {
  ux_exec_spec tmp;
  memset(&tmp, 0, sizeof tmp);
  if (ux_exec_spec_files(r, &tmp, files) < 0) goto fail;
  if (ux_workdir(r->srv, kind, id, workdir, wlen) < 0 || ux_mkdir_p(workdir, 0700) < 0) {
    ux_reply_error(r, 500, "internal_error", "cannot create the work directory");
    goto fail;
  }
  for (size_t i = 0; i < tmp.run.n_files; i++)
    if (write_file(workdir, &tmp.files[i]) < 0) {
      ux_reply_error(r, 400, "bad_request", "cannot write input file %zu", i);
      goto fail;
    }
  for (size_t i = 0; i < tmp.run.n_files; i++) { free(tmp.files[i].name); free(tmp.files[i].data); }
  free(tmp.files);
  return 0;
fail:
  for (size_t i = 0; i < tmp.run.n_files; i++) { free(tmp.files[i].name); free(tmp.files[i].data); }
  free(tmp.files);
  return -1;
}

void ux_remove_resource_dir(const ux_server *srv, const char *kind, const char *id) {
  char dir[4200];
  if (ux_path(dir, sizeof dir, "%s/%ss/%s", srv->cfg.data, kind, id) == 0) ux_rm_rf(dir);
}

ux_exec_spec *ux_command_spec(ux_req *r, const char *kind, const char *id,
                              json_t *doc, json_t *body, long default_ms) {
  const char *command, *mode;
  long timeout;
  char workdir[4200];
  if (ux_get_str(r, body, "command", 1, NULL, &command) < 0 ||
      ux_get_int(r, body, "timeout", 1, 900000, default_ms, &timeout) < 0)
    return NULL;
  if (ux_workdir(r->srv, kind, id, workdir, sizeof workdir) < 0) {
    ux_reply_error(r, 500, "internal_error", "work directory path too long");
    return NULL;
  }
  mode = json_string_value(json_object_get(doc, "network_mode"));
  int net = mode && !strcmp(mode, "semitrusted");
  int vcpu = (int)json_integer_value(json_object_get(doc, "vcpu"));
  ux_exec_spec *spec = ux_exec_spec_command(command, workdir, net, vcpu,
                                            (int)((timeout + 999) / 1000));
  if (!spec) ux_reply_error(r, 500, "internal_error", "out of memory");
  return spec;
}

/* The stored document plus the computed remaining_ttl, in wire order. */
static json_t *present(json_t *doc) {
  static const char *const KEYS[] = {
    "id", "session_id", "container_name", "shell", "status", "network_mode",
    "vcpu", "ttl", NULL
  };
  json_t *j = json_object();
  for (int i = 0; KEYS[i]; i++) json_object_set(j, KEYS[i], json_object_get(doc, KEYS[i]));
  long ttl = (long)json_integer_value(json_object_get(doc, "ttl"));
  long last = (long)json_integer_value(json_object_get(doc, "last_activity"));
  long left = last + ttl - ux_now();
  json_object_set_new(j, "remaining_ttl", json_integer(left > 0 ? left : 0));
  json_object_set(j, "created_at", json_object_get(doc, "created_at"));
  json_object_set(j, "last_activity", json_object_get(doc, "last_activity"));
  return j;
}

int ux_h_sessions_list(ux_req *r, const char *id) {
  (void)id;
  json_t *docs = ux_store_list(r->srv->store, "sessions", r->owner), *doc;
  json_t *arr = json_array();
  size_t i;
  json_array_foreach(docs, i, doc) json_array_append_new(arr, present(doc));
  json_decref(docs);
  json_t *j = json_object();
  json_object_set_new(j, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(j, "sessions", arr);
  return ux_reply_json(r, 200, j);
}

int ux_h_session_create(ux_req *r, const char *unused) {
  (void)unused;
  const char *shell, *mux;
  long ttl, vcpu;
  int net;
  char id[64], vm[64], workdir[4200];
  json_t *body = ux_body_object(r, 1);
  if (!body) return -1;
  if (ux_get_str(r, body, "shell", 0, "bash", &shell) < 0 ||
      ux_get_str(r, body, "multiplexer", 0, NULL, &mux) < 0 ||
      ux_get_int(r, body, "ttl", 1, 86400, 3600, &ttl) < 0 ||
      ux_get_int(r, body, "vcpu", 1, 8, 1, &vcpu) < 0 ||
      (net = ux_network_mode(r, body, "zerotrust")) < 0) {
    json_decref(body);
    return -1;
  }
  if (strcmp(shell, "bash") != 0) {
    json_decref(body);
    return ux_reply_error(r, 400, "bad_request", "only the bash shell is available here");
  }
  ux_random_id(id, sizeof id, "unsb-session-", 12);
  ux_random_id(vm, sizeof vm, "unsb-vm-", 8);
  if (ux_make_workdir(r, "session", id, json_object_get(body, "input_files"),
                      workdir, sizeof workdir) < 0) {
    json_decref(body);
    return -1;
  }
  json_decref(body);
  long now = ux_now();
  json_t *doc = json_object();
  json_object_set_new(doc, "id", json_string(id));
  json_object_set_new(doc, "session_id", json_string(id));
  json_object_set_new(doc, "container_name", json_string(vm));
  json_object_set_new(doc, "shell", json_string(shell));
  json_object_set_new(doc, "status", json_string("running"));
  json_object_set_new(doc, "network_mode", json_string(net ? "semitrusted" : "zerotrust"));
  json_object_set_new(doc, "vcpu", json_integer(vcpu));
  json_object_set_new(doc, "ttl", json_integer(ttl));
  json_object_set_new(doc, "created_at", json_integer(now));
  json_object_set_new(doc, "last_activity", json_integer(now));
  if (ux_store_put(r->srv->store, "sessions", id, r->owner, "running", doc) < 0) {
    json_decref(doc);
    return ux_reply_error(r, 500, "internal_error", "cannot store the session");
  }
  ux_reply_json(r, 201, present(doc));
  json_decref(doc);
  return 0;
}

int ux_h_session_get(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such session");
  ux_reply_json(r, 200, present(doc));
  json_decref(doc);
  return 0;
}

int ux_h_session_delete(ux_req *r, const char *id) {
  if (ux_store_delete(r->srv->store, "sessions", id, r->owner) != 1)
    return ux_reply_error(r, 404, "not_found", "no such session");
  ux_remove_resource_dir(r->srv, "session", id);
  return ux_reply_deleted(r, "session_id", id);
}

int ux_h_session_shell(ux_req *r, const char *id) {
  json_t *doc = ux_store_get(r->srv->store, "sessions", id, r->owner);
  if (!doc) return ux_reply_error(r, 404, "not_found", "no such session");
  json_t *body = ux_body_object(r, 0);
  ux_exec_spec *spec = body ? ux_command_spec(r, "session", id, doc, body, 60000) : NULL;
  json_decref(body);
  if (!spec) {
    json_decref(doc);
    return -1;
  }
  json_object_set_new(doc, "last_activity", json_integer(ux_now()));
  ux_store_put(r->srv->store, "sessions", id, r->owner, "running", doc);
  json_decref(doc);
  ux_job *job = ux_submit(r, spec);
  if (!job) return r->reply.status ? -1 : ux_reply_error(r, 500, "internal_error", "out of memory");
  int terminal;
  json_t *res = ux_jobs_wait(r->srv->jobs, job, -1, &terminal);
  ux_jobs_release(r->srv->jobs, job);
  return ux_reply_json(r, 200, res);
}

int ux_h_session_snapshot(ux_req *r, const char *id) {
  return ux_snapshot_take(r, "session", id);
}
