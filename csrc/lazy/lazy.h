/*
** Libraries loaded on first use. unsandbox/core.so links neither libcurl
** (with its tree of some thirty libraries) nor libcrypto: `require
** "unsandbox"` costs what the module itself costs, and a script that
** never talks to a service never maps them. Instead curl.c and crypto.c
** define every libcurl and libcrypto function the core calls, each
** forwarding to the real one, which unsb_lazy_load dlopens (by soname)
** the first time any of them runs: libcurl when the first client is made,
** libcrypto at the first signature, digest, base64 or random bytes.
**
** A function the core starts to use must get its line in curl.c or
** crypto.c: the Makefile refuses a core.so that still has an undefined
** libcurl or libcrypto symbol. A C host that embeds the core links it
** with -lcurl -lcrypto as usual and leaves these files out.
**
** Should a library fail to load, each function returns its failure value
** (NULL, an error code, -1), which the core already handles as a failed
** call.
*/
#ifndef UNSB_LAZY_H
#define UNSB_LAZY_H

#include <pthread.h>
#include <stddef.h>

typedef struct unsb_lazy {
  const char *soname;           /* e.g. "libcurl.so.4" */
  const char *const *names;     /* the functions, NULL-terminated */
  void **slots;                 /* their addresses, filled in order */
  pthread_once_t once;
  int loaded;
} unsb_lazy;

/* Loads the library and every name once (thread-safe); 1 when they are
** all there, else 0 (for good: a library that is not there now will not
** be later in this process). */
int unsb_lazy_load(unsb_lazy *l);

#endif
