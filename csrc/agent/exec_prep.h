/*
** What a background `exec` (a session's command, a service's bootstrap or
** execute) brings besides its command: environment variables for the
** command and files placed before it starts. Both are checked whole when
** the request is read, so a bad one is an `invalid` answer naming it and
** nothing was written. The files are written by the handler, which runs as
** the sandbox's own user inside the sandbox: nothing here can reach what
** the sandbox's code could not reach itself, so paths are plain paths
** (absolute ones anywhere the sandbox may write, e.g. /tmp/input/x;
** relative ones below DIR).
*/
#ifndef AG_EXEC_PREP_H
#define AG_EXEC_PREP_H

#include <jansson.h>

#include "agent/err.h"
#include "agent/paths.h"

#define AG_EXEC_ENV_MAX 256          /* variables */
#define AG_EXEC_FILES_MAX 1000       /* files */

/* Checks `env` ({NAME: value}, names [A-Za-z_][A-Za-z0-9_]*, no NUL) and
** `files` ([{path, content_base64, mode?}], mode 0..0777) of req when
** present. 0, or -1 with e. */
int ag_exec_prep_check(json_t *req, ag_err *e);

/* Writes the files of req (parents made 0755, each file replaced, then
** given its mode: 0644 unless said). 0, or -1 with e naming the file. */
int ag_exec_prep_files(const ag_fs *fs, json_t *req, ag_err *e);

/* In the command's child: sets the variables of req. */
void ag_exec_prep_env(json_t *req);

#endif
