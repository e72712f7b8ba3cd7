/*
** Mode `runtime`: the long-lived executor of a Control Plane runtime.
** See docs/internals.md ("unsandboxd-agent", "Mode runtime") for the
** protocol; runtime.c for how requests are scheduled.
*/
#ifndef AG_RUNTIME_H
#define AG_RUNTIME_H

/* Serves requests arriving on control_fd until it reaches EOF (or SIGTERM),
** then kills what it started and returns the exit status. */
int ag_runtime_main(const char *root, int control_fd);

#endif
