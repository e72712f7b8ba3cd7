/*
** The loader of lazy.h: dlopen by soname (RTLD_NODELETE: handles of the
** library live until the process ends), then dlsym of every name. All or
** nothing, so a forwarding function (curl.c, crypto.c) never calls through
** a missing address.
*/
#include "lazy/lazy.h"

#include <dlfcn.h>
#include <stdint.h>

/* pthread_once takes no argument: the library being loaded is passed
** through this thread's variable (each once runs on its caller's thread). */
static __thread unsb_lazy *loading;

static void load_once(void) {
  unsb_lazy *l = loading;
  void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) return;
  for (size_t i = 0; l->names[i]; i++)
    if (!(l->slots[i] = dlsym(h, l->names[i]))) {
      dlclose(h);
      return;
    }
  __atomic_store_n(&l->loaded, 1, __ATOMIC_RELEASE);
}

int unsb_lazy_load(unsb_lazy *l) {
  if (__atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE)) return 1;
  loading = l;
  pthread_once(&l->once, load_once);
  loading = NULL;
  return __atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE);
}
