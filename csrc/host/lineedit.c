/*
** The REPL's line reader (see lineedit.h). readline is used only when
** standard input is a terminal: its editing needs one, and a pipe must see
** the same prompts and lines it always did.
*/
#include "host/lineedit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

static int on_terminal(void) {
  static int known = -1;
  if (known < 0) known = isatty(STDIN_FILENO) ? 1 : 0;
  return known;
}

char *ul_readline(const char *prompt) {
  if (on_terminal()) return readline(prompt);   /* malloc'd, no newline; NULL at EOF */
  fputs(prompt, stdout);
  fflush(stdout);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len = getline(&line, &cap, stdin);
  if (len < 0) {
    free(line);
    return NULL;
  }
  if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
  return line;
}

void ul_saveline(const char *line) {
  if (on_terminal() && line && line[0] != '\0') add_history(line);
}
