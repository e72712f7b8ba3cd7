/*
** The language table of the sandbox runner: for each language, the
** interpreter or compiler that proves it is installed, the source file
** name and the /bin/sh script that runs it inside the sandbox.
**
** Probes are absolute paths that must resolve under /usr: the sandbox
** sees /usr and nothing else of the host, so an interpreter found in
** /root/.pyenv or /usr/local/... through PATH would be useless there.
** Some need configuration from /etc (OpenJDK's conf/ is a symlink into
** /etc/java-N-openjdk, GnuCOBOL reads /etc/gnucobol/default.conf): a
** glob per language, resolved at the probe, bound read-only for that
** language's runs only.
** The table is probed once (pthread_once) and never changes afterwards,
** so readers need no lock.
*/
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/sandbox/bwrap_argv.h"
#include "server/mem.h"

/* Compiled programs are built in the sandbox's private /tmp, not in the
** work directory; when the run asks for artifacts, {KEEP} (bwrap_argv.c's
** ux_sb_script) copies the built program there as `main` first, so it
** comes back as one. */
#define BUILD_RUN(cmd) cmd " && {KEEP}exec /tmp/.ux-prog"

static const ux_lang table[] = {
  { "bash", "/usr/bin/bash", "main.sh", "exec /usr/bin/bash /code/main.sh", NULL },
  { "c", "/usr/bin/gcc", "main.c",
    BUILD_RUN("/usr/bin/gcc -O0 -o /tmp/.ux-prog /code/main.c -lm"), NULL },
  { "cpp", "/usr/bin/g++", "main.cpp",
    BUILD_RUN("/usr/bin/g++ -O0 -o /tmp/.ux-prog /code/main.cpp"), NULL },
  /* the single-file source launcher; a bounded heap and the serial GC
  ** keep the JVM within the memory and process limits */
  { "java", "/usr/bin/java", "Main.java",
    "exec /usr/bin/java -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    " -Xmx{MEM}m -XX:CICompilerCount=1 /code/Main.java", "/etc/java-*" },
  { "javascript", "/usr/bin/node", "main.js",
    "exec /usr/bin/node --max-old-space-size={MEM} /code/main.js", NULL },
  { "lua", "/usr/bin/lua5.4", "main.lua", "exec /usr/bin/lua5.4 /code/main.lua", NULL },
  { "perl", "/usr/bin/perl", "main.pl", "exec /usr/bin/perl /code/main.pl", NULL },
  { "python", "/usr/bin/python3", "main.py", "exec /usr/bin/python3 /code/main.py", NULL },
  { "sh", "/usr/bin/dash", "main.sh", "exec /usr/bin/dash /code/main.sh", NULL },
  { "tcl", "/usr/bin/tclsh", "main.tcl", "exec /usr/bin/tclsh /code/main.tcl", NULL },
  { "fortran", "/usr/bin/gfortran", "main.f90",
    BUILD_RUN("/usr/bin/gfortran -O0 -o /tmp/.ux-prog /code/main.f90"), NULL },
  /* Not installed on the development machine; enabled when their Debian
  ** package is, with the usual command of each. */
  { "ruby", "/usr/bin/ruby", "main.rb", "exec /usr/bin/ruby /code/main.rb", NULL },
  { "php", "/usr/bin/php", "main.php", "exec /usr/bin/php /code/main.php", NULL },
  { "go", "/usr/bin/go", "main.go",
    "export GOCACHE=/tmp/.gocache GOPATH=/tmp/.gopath GO111MODULE=off;"
    " (cd /tmp && /usr/bin/go build -o /tmp/.ux-prog /code/main.go)"
    " && {KEEP}exec /tmp/.ux-prog", NULL },
  { "rust", "/usr/bin/rustc", "main.rs",
    BUILD_RUN("/usr/bin/rustc -o /tmp/.ux-prog /code/main.rs"), NULL },
  { "r", "/usr/bin/Rscript", "main.r", "exec /usr/bin/Rscript /code/main.r", NULL },
  { "haskell", "/usr/bin/runghc", "main.hs", "exec /usr/bin/runghc /code/main.hs", NULL },
  { "ocaml", "/usr/bin/ocaml", "main.ml", "exec /usr/bin/ocaml /code/main.ml", NULL },
  { "scheme", "/usr/bin/guile", "main.scm",
    "exec /usr/bin/guile --no-auto-compile /code/main.scm", NULL },
  { "commonlisp", "/usr/bin/sbcl", "main.lisp",
    "exec /usr/bin/sbcl --script /code/main.lisp", NULL },
  { "elixir", "/usr/bin/elixir", "main.exs", "exec /usr/bin/elixir /code/main.exs", NULL },
  { "julia", "/usr/bin/julia", "main.jl", "exec /usr/bin/julia /code/main.jl", NULL },
  { "raku", "/usr/bin/raku", "main.raku", "exec /usr/bin/raku /code/main.raku", NULL },
  { "d", "/usr/bin/gdc", "main.d",
    BUILD_RUN("/usr/bin/gdc -o /tmp/.ux-prog /code/main.d"), NULL },
  { "cobol", "/usr/bin/cobc", "main.cob",
    BUILD_RUN("/usr/bin/cobc -x -o /tmp/.ux-prog /code/main.cob"), "/etc/gnucobol" },
};

#define NLANG (sizeof table / sizeof table[0])

#define MAX_ETC 8

static struct {
  pthread_once_t once;
  const ux_lang *found[NLANG];
  const char *names[NLANG + 1];
  size_t n;
  char *etc[NLANG][MAX_ETC + 1];  /* per table entry, NULL-ended */
} probe = { PTHREAD_ONCE_INIT, {0}, {0}, 0, {{0}} };

static int installed(const char *path) {
  char real[PATH_MAX];
  if (access(path, X_OK) != 0 || !realpath(path, real)) return 0;
  return strncmp(real, "/usr/", 5) == 0;
}

/* The service's order of its languages (spec §5.6, the order its
** extension table lists them); sh, which the spec does not list, next to
** bash. GET /languages answers in this order. */
static const char *const service_order[] = {
  "python", "javascript", "typescript", "ruby", "php", "perl", "bash", "sh", "lua", "r", "go",
  "rust", "c", "cpp", "java", "kotlin", "objc", "csharp", "fsharp", "haskell", "ocaml",
  "clojure", "scheme", "erlang", "elixir", "julia", "d", "nim", "zig", "v", "crystal", "dart",
  "groovy", "fortran", "cobol", "tcl", "raku", "commonlisp", "prolog", "forth", NULL,
};

static size_t rank(const char *name) {
  size_t i = 0;
  while (service_order[i] && strcmp(service_order[i], name) != 0) i++;
  return i;
}

static int by_order(const void *a, const void *b) {
  const ux_lang *x = *(const ux_lang *const *)a;
  const ux_lang *y = *(const ux_lang *const *)b;
  size_t rx = rank(x->name), ry = rank(y->name);
  return rx != ry ? (rx < ry ? -1 : 1) : strcmp(x->name, y->name);
}

/* The /etc entries of table[i] that exist, from its glob. */
static void find_etc(size_t i) {
  glob_t g;
  size_t k = 0;
  if (table[i].etc && glob(table[i].etc, 0, NULL, &g) == 0) {
    for (size_t j = 0; j < g.gl_pathc && k < MAX_ETC; j++)
      if ((probe.etc[i][k] = ux_xstrdup(g.gl_pathv[j]))) k++;
    globfree(&g);
  }
  probe.etc[i][k] = NULL;
}

static void do_probe(void) {
  for (size_t i = 0; i < NLANG; i++)
    if (installed(table[i].probe)) {
      probe.found[probe.n++] = &table[i];
      find_etc(i);
    }
  qsort(probe.found, probe.n, sizeof probe.found[0], by_order);
  for (size_t i = 0; i < probe.n; i++) probe.names[i] = probe.found[i]->name;
  probe.names[probe.n] = NULL;
}

const ux_lang *ux_sb_lang(const char *name) {
  pthread_once(&probe.once, do_probe);
  if (!name) return NULL;
  for (size_t i = 0; i < probe.n; i++)
    if (strcmp(probe.found[i]->name, name) == 0) return probe.found[i];
  return NULL;
}

const char *const *ux_sb_lang_etc(const ux_lang *lang) {
  static const char *const none[] = { NULL };
  pthread_once(&probe.once, do_probe);
  if (!lang || lang < table || lang >= table + NLANG) return none;
  return (const char *const *)probe.etc[lang - table];
}

int ux_sb_lang_builds(const ux_lang *lang) {
  return lang && strstr(lang->script, "{KEEP}") != NULL;
}

const char *const *ux_languages(size_t *n) {
  pthread_once(&probe.once, do_probe);
  if (n) *n = probe.n;
  return probe.names;
}

int ux_language_known(const char *name) {
  return ux_sb_lang(name) != NULL;
}
