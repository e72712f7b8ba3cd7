/*
** Libraries loaded on first use. unsandbox/core.so links neither libcurl
** (with its tree of some thirty libraries) nor libcrypto: `require
** "unsandbox"` costs what the module itself costs, and a script that never
** talks to a service never maps them. Instead curl.c and crypto.c define
** every function of theirs the core calls, each forwarding to the real
** one, which unsb_lazy_load dlopens (by soname) the first time any of
** them runs: libcurl when the first client is made, libcrypto at the
** first signature, digest, base64 or random bytes. (A session terminal
** needs nothing more: its connection is libcurl's, its framing the core's.)
**
** A function the core starts to use must get its line in one of those
** files: the Makefile refuses a core.so that still has an undefined
** symbol of these libraries. A C host that embeds the core links it with
** -lcurl -lcrypto as usual and leaves these files out.
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

/* What each library's file builds from its two X-macro lists, FUNCS
** (X(type, name, params, args, value on failure)) and PROCS (X(name,
** params, args), returning nothing): an index and a name per function,
** for `names` and `slot`, and a definition that forwards to the loaded
** one. The forwarders use the file's own `lib` and `slot`. */
#define UNSB_LAZY_IDX_F(type, name, params, args, fail) I_##name,
#define UNSB_LAZY_IDX_P(name, params, args) I_##name,
#define UNSB_LAZY_NAME_F(type, name, params, args, fail) #name,
#define UNSB_LAZY_NAME_P(name, params, args) #name,
/* POSIX lets dlsym's void * be converted to the function's own type */
#define UNSB_LAZY_FORWARD_F(type, name, params, args, fail) \
  type name params { \
    if (!unsb_lazy_load(&lib)) return fail; \
    return ((type (*) params)slot[I_##name]) args; \
  }
#define UNSB_LAZY_FORWARD_P(name, params, args) \
  void name params { if (unsb_lazy_load(&lib)) ((void (*) params)slot[I_##name]) args; }

#endif
