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

/* Long replies (a list of thousands of rows, a large job document) are
** built in one buffer of up to a megabyte or two. Grown by doubling, such
** a buffer passes through fresh mappings, and given back after the reply
** (ux_mem_return) the next long reply starts in fresh pages again: first
** touches cost more than the bytes (a fault per page, which a virtual
** machine makes dearer still). So a text that grows long moves into a
** reply buffer (UX_MEM_REPLY_MIN bytes or more), and the last one given
** back, if at most UX_MEM_REPLY_KEEP bytes, is kept for the next: the
** server holds at most that much more than it must. */
#define UX_MEM_REPLY_MIN  ((size_t)256 << 10)
#define UX_MEM_REPLY_KEEP ((size_t)2 << 20)

/* A buffer of at least n bytes for a long reply, its usable size in *cap:
** the kept one when it is large enough, else new memory. */
void *ux_mem_reply_buffer(size_t n, size_t *cap);

/* Frees a reply's text once it is sent (any malloc'd text; NULL is
** fine): a reply buffer is kept when none is and it is small enough, else
** freed and the heap's free pages go back (ux_mem_return, whose walk of
** the heap costs more than a short reply: only after a long one); a short
** text is just freed. */
void ux_mem_reply_done(void *p);

/* Writes "unsandboxd: out of memory (N bytes)" and aborts. */
_Noreturn void ux_oom(size_t n);

#endif
