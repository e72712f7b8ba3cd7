/*
** POSIX shell quoting of an argv for Sandbox run_command (spec §8, vectors
** ids.json "argv_quoting"): the Control Plane's shell tool takes one
** command string for bash, so a caller's argument list must reach it as
** exactly those words. Same output as Python's shlex.quote joined by
** spaces: arguments of only [A-Za-z0-9_@%+=:,./-] stay bare, the empty
** string becomes '', anything else is single-quoted with each ' written as
** '"'"'. Single quotes make every other byte literal to the shell, so
** non-ASCII and control characters are safe inside them; only NUL cannot
** be passed to a program and is refused.
*/
#ifndef UNSB_QUOTE_H
#define UNSB_QUOTE_H

#include <stddef.h>

#include "core/error.h"

/* Quotes and joins n >= 1 arguments (args[i] of lens[i] bytes). Returns a
** malloc'd NUL-terminated string with *out_len, or NULL with err:
** validation (err->arg 1: no arguments, a NUL byte in argument i; 2: the
** result is longer than max_len bytes, 0 = no limit) or memory. */
char *unsb_shell_quote(const char *const *args, const size_t *lens, size_t n, size_t max_len,
                       size_t *out_len, unsb_error *err);

#endif
