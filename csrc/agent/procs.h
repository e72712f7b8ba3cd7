/*
** The processes of a runtime's sandbox that are not the agent's own: what
** a service runs (its bootstrap, the daemons it left, a command in
** flight). The sandbox has a pid namespace and a /proc of its own, so
** this is every live process there but bwrap's init (pid 1), the agent,
** its request handlers and the caller; zombies are not counted.
*/
#ifndef AG_PROCS_H
#define AG_PROCS_H

#include <sys/types.h>

/* The count, leaving out the n pids of `own` besides pid 1, the caller
** and its parent; -1 when /proc cannot be read. */
long ag_procs_count(const pid_t *own, size_t n);

#endif
