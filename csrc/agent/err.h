/*
** Errors of unsandboxd-agent: a kind the server maps to a JSON-RPC code
** (invalid / busy / internal) and one line of text. Every function that
** can fail fills an ag_err and returns -1, so the message is written once,
** where the cause is known, and travels unchanged to stderr (archive and
** extract modes) or to the final frame (runtime mode).
*/
#ifndef AG_ERR_H
#define AG_ERR_H

#include <stddef.h>

typedef enum { AG_INVALID = 1, AG_BUSY = 2, AG_INTERNAL = 3 } ag_kind;

typedef struct {
  ag_kind kind;
  char msg[600];
} ag_err;

/* Sets kind and message; returns -1. */
int ag_fail(ag_err *e, ag_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Internal error whose message ends with ": strerror(errno)"; returns -1. */
int ag_sysfail(ag_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The wire name of a kind: "invalid", "busy", "internal". */
const char *ag_kind_name(ag_kind kind);

/* Writes a name (a path, an archive member: hostile bytes) into out so it
** fits on one line: control bytes become '?', at most 200 bytes, then
** "...". Returns out. */
const char *ag_show(const char *name, char *out, size_t outlen);
#define AG_SHOW_MAX 208

#endif
