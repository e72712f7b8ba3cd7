/*
** Error reporting for the Lua-free core: every fallible function fills an
** unsb_error (a kind plus a readable message) and returns -1, in the style
** of a strerror-style C library, so the binding only has to marshal it.
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
  UNSB_ENOMEM         /* the binding raises on it, as lauxlib does */
} unsb_kind;

/* Big enough for a message naming two full paths (credential lookups). */
#define UNSB_ERROR_MAX 2048

typedef struct {
  unsb_kind kind;
  char message[UNSB_ERROR_MAX];
} unsb_error;

/* "credentials", "transport", ...; "ok" for UNSB_OK. */
const char *unsb_kind_name(unsb_kind kind);

/* Sets kind and a printf-formatted message; returns -1 so callers can
** write `return unsb_fail(err, ...)`. err may be NULL. */
int unsb_fail(unsb_error *err, unsb_kind kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#endif
