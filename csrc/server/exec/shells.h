/*
** The shells and REPLs a session may name (spec §1, §4.2: "bash default,
** other shells/REPLs"), and the multiplexers it may ask for, as far as
** this machine has their programs under /usr (the sandbox sees /usr and
** nothing else of the host): probed once, listed in GET /health. The
** terminal runs the session's shell, inside its multiplexer when it has
** one (then a client that leaves is told "detached" and the shell lives
** on for the next attach). A session's commands are bash command lines
** whatever its shell.
*/
#ifndef UX_EXEC_SHELLS_H
#define UX_EXEC_SHELLS_H

#include <jansson.h>

/* 1 when the shell / multiplexer is known and installed. */
int ux_shell_ok(const char *name);
int ux_multiplexer_ok(const char *name);

/* ["bash", ...] and ["tmux", ...]: what is available, in table order. */
json_t *ux_shells_json(void);
json_t *ux_multiplexers_json(void);

/* The terminal's program for a session of shell (and multiplexer, or
** NULL): a JSON array of strings, or NULL when either is not available. */
json_t *ux_terminal_argv(const char *shell, const char *multiplexer);

#endif
