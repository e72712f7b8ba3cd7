/*
** unsandboxd's allocation policy: memory is not an expected failure. A
** request handler that finds malloc empty cannot answer sensibly (the
** reply needs memory too), and on Linux an exhausted machine is met by
** the OOM killer long before malloc returns NULL, so a NULL check per
** call would be code nobody can run. Instead every allocation of the
** server goes through these wrappers, and jansson's through the same ones
** (ux_mem_init): on failure the process writes one line to stderr and
** aborts. A restart then finds the jobs left running and marks them
** failed with "server restarted" (store.h), as after any crash.
**
** The core's files the server links (csrc/core) are a library and keep
** their own policy: they report UNSB_ENOMEM and never abort.
*/
#ifndef UX_MEM_H
#define UX_MEM_H

#include <stddef.h>

/* Installs the wrappers as jansson's allocator. Call before any JSON
** value exists (main, and the C tests that build JSON). */
void ux_mem_init(void);

void *ux_xmalloc(size_t n);
void *ux_xcalloc(size_t n, size_t size);
void *ux_xrealloc(void *p, size_t n);
char *ux_xstrdup(const char *s);
char *ux_xstrndup(const char *s, size_t n);
/* A formatted string in new memory (vasprintf under the same policy). */
char *ux_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Gives the heap's free pages back to the system (malloc_trim). A reply
** built for one request (a list of thousands of rows) raises the heap's
** peak; glibc keeps such a peak for reuse, so without this the process
** would hold it for good. Costs a walk of the free lists: call it after
** a large reply only. */
void ux_mem_return(void);

/* Writes "unsandboxd: out of memory (N bytes)" and aborts. */
_Noreturn void ux_oom(size_t n);

#endif
