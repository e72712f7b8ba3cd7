/*
** A runner spec that owns its memory, so a job can outlive the request
** that described it. Built from a validated request body.
*/
#ifndef UX_EXEC_SPEC_H
#define UX_EXEC_SPEC_H

#include <jansson.h>

#include "server/http/reply.h"
#include "server/sandbox/membudget.h"
#include "server/sandbox/runner.h"

struct ux_inside;

typedef struct ux_exec_spec {
  ux_run_spec run;        /* points into the fields below */
  struct ux_inside *inside; /* runs in a living sandbox (inside.h); NULL:
                             a sandbox of its own (runner.h) */
  ux_memclaim mem;        /* the run's memory when its owner claims it
                             (ux_exec_spec_claim: a bootstrap, a terminal),
                             given back when the spec is freed, after the
                             run; empty for a job (the runner claims) */
  char *language, *code;
  char *volume;           /* the volume it works in (volume.h), or NULL */
  int work_fd;            /* its root while in use (-1: not yet) */
  char **env;
  ux_file *files;
} ux_exec_spec;

/* Validates a POST /execute body: language, code, env, input_files,
** network_mode, ttl (default dflt_ttl), vcpu, return_artifact(s).
** Returns a spec, or NULL after setting a 400 reply. */
ux_exec_spec *ux_exec_spec_from_json(ux_req *r, json_t *body, long dflt_ttl);

/* A bash command (session shell, service execute, service bootstrap),
** without a work directory yet. ttl_s 0 = no limit. NULL: out of memory. */
ux_exec_spec *ux_exec_spec_command(const char *command, int network, int vcpu, int ttl_s);

/* The spec runs in the persistent volume dir. The volume is only taken
** into use (ux_volume_acquire) by ux_exec_spec_open_volume, right before
** the run starts, and given back when the spec is freed: a job that waits
** in the queue holds nothing, so deleting its session is never held up
** by it, and it fails to start instead. 0, or -1 (out of memory; with
** err, errno ENOENT when the volume is gone or going). */
int ux_exec_spec_set_volume(ux_exec_spec *s, const char *dir);
int ux_exec_spec_open_volume(ux_exec_spec *s, char *err, size_t errlen);

/* Parses input_files [{filename, content(base64), mode?}] into the spec.
** A file's mode is its `mode` (permission bits, 0-0777) when sent, else
** 0755 for a script (content starting with "#!", or a name ending in
** ".sh": runnable as the README's `./serve.sh`), else 0644.
** Returns 0 or -1 after setting a 400 reply. */
int ux_exec_spec_files(ux_req *r, ux_exec_spec *s, json_t *files);

/* Reads network_mode ("zerotrust" default or "semitrusted"): 0/1, or -1
** after setting a 400 reply. */
int ux_network_mode(ux_req *r, json_t *body, const char *dflt);

/* Gives a command spec (one without an environment yet) n "NAME=value"
** strings (malloc'd, in a malloc'd array), taking them over (freed here
** when refused): a service's env vault, checked by the vault's parser.
** 0, or -1 when the spec has an environment already. */
int ux_exec_spec_take_env(ux_exec_spec *s, char **env, size_t n);

/* Claims the memory of the spec's run from the budget (membudget.h) for
** as long as the spec lives: 0, or -1 with err when the budget has no
** room (the caller answers 429). */
int ux_exec_spec_claim(ux_exec_spec *s, char *err, size_t errlen);

void ux_exec_spec_free(ux_exec_spec *s);

#endif
