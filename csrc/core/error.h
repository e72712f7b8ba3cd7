/*
** Error reporting for the Lua-free core: every fallible function fills an
** unsb_error (a kind, a readable message, and for a value refused which
** input it was) and returns -1, in the style of a strerror-style C
** library, so the binding only has to marshal it: it never reads the
** message to learn what went wrong.
*/
#ifndef UNSB_ERROR_H
#define UNSB_ERROR_H

/* The kinds are the strings the Lua API returns as the second value. */
typedef enum {
  UNSB_OK = 0,
  UNSB_ECREDENTIALS,
  UNSB_ETRANSPORT,
  UNSB_ETIMEOUT,
  UNSB_EPROTOCOL,
  UNSB_EVALIDATION,
  UNSB_EINTERRUPTED,
  UNSB_ECANCELLED,    /* a caller's callback asked a transfer to stop */
  UNSB_EIO,           /* a local file a transfer reads or writes failed */
  UNSB_ENOMEM         /* the binding raises on it, as lauxlib does */
} unsb_kind;

/* Big enough for a message naming two full paths (credential lookups). */
#define UNSB_ERROR_MAX 2048

/* arg of an error about the process environment (a variable the message
** names), not about an input of the call */
#define UNSB_ARG_ENV (-1)

typedef struct {
  unsb_kind kind;
  char message[UNSB_ERROR_MAX];
  /* which input of the call was refused: its 1-based position as the
  ** function's header documents it, UNSB_ARG_ENV, or 0 (none: not a value
  ** of the caller's, or the call as a whole) */
  int arg;
} unsb_error;

/* "credentials", "transport", ...; "ok" for UNSB_OK. */
const char *unsb_kind_name(unsb_kind kind);

/* Sets kind and a printf-formatted message (arg 0); returns -1 so callers
** can write `return unsb_fail(err, ...)`. err may be NULL. */
int unsb_fail(unsb_error *err, unsb_kind kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* A value refused: kind UNSB_EVALIDATION, arg the input it was (see
** unsb_error.arg). Returns -1. */
int unsb_invalid(unsb_error *err, int arg, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#endif
