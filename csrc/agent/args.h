/*
** Request arguments. A request is a JSON object {"op": NAME, ...}; every
** op names the keys it accepts, and any other key, a missing required one
** or one of the wrong type is an `invalid` error that names the argument.
*/
#ifndef AG_ARGS_H
#define AG_ARGS_H

#include <jansson.h>

#include "agent/err.h"

/* Fails on any key of req that is neither "op" nor in the NULL-ended list. */
int ag_args_only(json_t *req, const char *const *allowed, ag_err *e);

/* A string argument; def is used when it is absent (NULL: required). No
** NUL byte allowed unless allow_nul. *len gets the byte length. */
int ag_arg_str(json_t *req, const char *key, const char *def, int allow_nul,
               const char **out, size_t *len, ag_err *e);

/* An integer in [min, max]; def when absent. Reals are refused. */
int ag_arg_int(json_t *req, const char *key, long long def, long long min,
               long long max, long long *out, ag_err *e);

/* A boolean; def when absent. */
int ag_arg_bool(json_t *req, const char *key, int def, int *out, ag_err *e);

#endif
