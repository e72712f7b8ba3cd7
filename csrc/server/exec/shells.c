/*
** Session shells and multiplexers (shells.h). The probe is the language
** table's rule (an executable under /usr after symlinks), done once.
*/
#include "server/exec/shells.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  const char *name, *probe;
  const char *argv[6];        /* the interactive program */
} prog;

static const prog shells[] = {
  { "bash", "/usr/bin/bash", { "/usr/bin/bash", "--norc", "--noprofile", "-i", NULL } },
  { "sh", "/usr/bin/dash", { "/usr/bin/dash", "-i", NULL } },
  { "zsh", "/usr/bin/zsh", { "/usr/bin/zsh", "-f", "-i", NULL } },
  { "fish", "/usr/bin/fish", { "/usr/bin/fish", "--no-config", "-i", NULL } },
  { "python3", "/usr/bin/python3", { "/usr/bin/python3", "-i", NULL } },
  { "python", "/usr/bin/python3", { "/usr/bin/python3", "-i", NULL } },
  { "node", "/usr/bin/node", { "/usr/bin/node", "-i", NULL } },
  { "ruby", "/usr/bin/irb", { "/usr/bin/irb", NULL } },
  { "irb", "/usr/bin/irb", { "/usr/bin/irb", NULL } },
  { "php", "/usr/bin/php", { "/usr/bin/php", "-a", NULL } },
  { "lua", "/usr/bin/lua5.4", { "/usr/bin/lua5.4", "-i", NULL } },
  { "perl", "/usr/bin/perl", { "/usr/bin/perl", "-de0", NULL } },
  { "R", "/usr/bin/R", { "/usr/bin/R", "--no-save", "--quiet", NULL } },
  { "julia", "/usr/bin/julia", { "/usr/bin/julia", NULL } },
  { "ghci", "/usr/bin/ghci", { "/usr/bin/ghci", NULL } },
  { "tclsh", "/usr/bin/tclsh", { "/usr/bin/tclsh", NULL } },
};

static const prog muxes[] = {
  { "tmux", "/usr/bin/tmux", { "/usr/bin/tmux", "new-session", "-A", "-s", "main", NULL } },
  { "screen", "/usr/bin/screen", { "/usr/bin/screen", "-D", "-R", "-S", "main", NULL } },
};

#define NSHELLS (sizeof shells / sizeof shells[0])
#define NMUXES (sizeof muxes / sizeof muxes[0])

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int have_shell[NSHELLS], have_mux[NMUXES];

static int installed(const char *path) {
  char real[PATH_MAX];
  return access(path, X_OK) == 0 && realpath(path, real) && !strncmp(real, "/usr/", 5);
}

static void probe(void) {
  for (size_t i = 0; i < NSHELLS; i++) have_shell[i] = installed(shells[i].probe);
  for (size_t i = 0; i < NMUXES; i++) have_mux[i] = installed(muxes[i].probe);
}

static const prog *find(const prog *t, const int *have, size_t n, const char *name) {
  pthread_once(&once, probe);
  for (size_t i = 0; name && i < n; i++)
    if (have[i] && !strcmp(t[i].name, name)) return &t[i];
  return NULL;
}

int ux_shell_ok(const char *name) { return find(shells, have_shell, NSHELLS, name) != NULL; }
int ux_multiplexer_ok(const char *name) { return find(muxes, have_mux, NMUXES, name) != NULL; }

static json_t *names(const prog *t, const int *have, size_t n) {
  json_t *a = json_array();
  pthread_once(&once, probe);
  for (size_t i = 0; i < n; i++)
    if (have[i]) json_array_append_new(a, json_string(t[i].name));
  return a;
}

json_t *ux_shells_json(void) { return names(shells, have_shell, NSHELLS); }
json_t *ux_multiplexers_json(void) { return names(muxes, have_mux, NMUXES); }

json_t *ux_terminal_argv(const char *shell, const char *multiplexer) {
  const prog *s = find(shells, have_shell, NSHELLS, shell ? shell : "bash");
  const prog *m = multiplexer ? find(muxes, have_mux, NMUXES, multiplexer) : NULL;
  if (!s || (multiplexer && !m)) return NULL;
  json_t *a = json_array();
  for (const char *const *w = m ? m->argv : NULL; w && *w; w++) json_array_append_new(a, json_string(*w));
  for (const char *const *w = s->argv; *w; w++) json_array_append_new(a, json_string(*w));
  return a;
}
