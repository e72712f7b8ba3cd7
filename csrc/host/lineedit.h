/*
** The REPL's line reader, apart from unlua.c: on a terminal GNU readline
** (line editing and history, as the stock lua program has it with
** LUA_USE_READLINE); from a pipe or a file the prompt and getline, so
** scripted input reads exactly as it always did.
*/
#ifndef UNLUA_LINEEDIT_H
#define UNLUA_LINEEDIT_H

/* Shows prompt and reads one line: a malloc'd string without its newline
** (the caller frees it), or NULL at the end of input. */
char *ul_readline(const char *prompt);

/* Adds a line the REPL ran to the history (terminal only, non-empty). */
void ul_saveline(const char *line);

#endif
