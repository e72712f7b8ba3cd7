/*
** The language table of the sandbox runner: for each language, the
** interpreter or compiler that proves it is installed, the source file
** name and the /bin/sh script that runs it inside the sandbox.
**
** Probes are absolute paths that must resolve under /usr: the sandbox
** sees /usr and nothing else of the host, so an interpreter found in
** /root/.pyenv or /usr/local/... through PATH would be useless there.
** The table is probed once (pthread_once) and never changes afterwards,
** so readers need no lock.
*/
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/sandbox/sandbox.h"

/* Compiled programs are built in the sandbox's private /tmp, never in the
** work directory (where they would come back as artifacts). */
#define BUILD_RUN(cmd) cmd " && exec /tmp/.ux-prog"

static const ux_lang table[] = {
  { "bash", "/usr/bin/bash", "main.sh", "exec /usr/bin/bash /code/main.sh" },
  { "c", "/usr/bin/gcc", "main.c",
    BUILD_RUN("/usr/bin/gcc -O0 -o /tmp/.ux-prog /code/main.c -lm") },
  { "cpp", "/usr/bin/g++", "main.cpp",
    BUILD_RUN("/usr/bin/g++ -O0 -o /tmp/.ux-prog /code/main.cpp") },
  /* the single-file source launcher; a bounded heap and the serial GC
  ** keep the JVM within RLIMIT_DATA and RLIMIT_NPROC */
  { "java", "/usr/bin/java", "Main.java",
    "exec /usr/bin/java -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    " -Xmx{MEM}m -XX:CICompilerCount=1 /code/Main.java" },
  { "javascript", "/usr/bin/node", "main.js",
    "exec /usr/bin/node --max-old-space-size={MEM} /code/main.js" },
  { "lua", "/usr/bin/lua5.4", "main.lua", "exec /usr/bin/lua5.4 /code/main.lua" },
  { "perl", "/usr/bin/perl", "main.pl", "exec /usr/bin/perl /code/main.pl" },
  { "python", "/usr/bin/python3", "main.py", "exec /usr/bin/python3 /code/main.py" },
  { "sh", "/usr/bin/dash", "main.sh", "exec /usr/bin/dash /code/main.sh" },
  { "tcl", "/usr/bin/tclsh", "main.tcl", "exec /usr/bin/tclsh /code/main.tcl" },
  { "fortran", "/usr/bin/gfortran", "main.f90",
    BUILD_RUN("/usr/bin/gfortran -O0 -o /tmp/.ux-prog /code/main.f90") },
  /* Not installed on the development machine; enabled when their Debian
  ** package is, with the usual command of each. */
  { "ruby", "/usr/bin/ruby", "main.rb", "exec /usr/bin/ruby /code/main.rb" },
  { "php", "/usr/bin/php", "main.php", "exec /usr/bin/php /code/main.php" },
  { "go", "/usr/bin/go", "main.go",
    "export GOCACHE=/tmp/.gocache GOPATH=/tmp/.gopath GO111MODULE=off;"
    " cd /tmp && /usr/bin/go build -o /tmp/.ux-prog /code/main.go"
    " && cd /sandbox && exec /tmp/.ux-prog" },
  { "rust", "/usr/bin/rustc", "main.rs",
    BUILD_RUN("/usr/bin/rustc -o /tmp/.ux-prog /code/main.rs") },
  { "r", "/usr/bin/Rscript", "main.r", "exec /usr/bin/Rscript /code/main.r" },
  { "haskell", "/usr/bin/runghc", "main.hs", "exec /usr/bin/runghc /code/main.hs" },
  { "ocaml", "/usr/bin/ocaml", "main.ml", "exec /usr/bin/ocaml /code/main.ml" },
  { "scheme", "/usr/bin/guile", "main.scm",
    "exec /usr/bin/guile --no-auto-compile /code/main.scm" },
  { "commonlisp", "/usr/bin/sbcl", "main.lisp",
    "exec /usr/bin/sbcl --script /code/main.lisp" },
  { "elixir", "/usr/bin/elixir", "main.exs", "exec /usr/bin/elixir /code/main.exs" },
  { "julia", "/usr/bin/julia", "main.jl", "exec /usr/bin/julia /code/main.jl" },
  { "raku", "/usr/bin/raku", "main.raku", "exec /usr/bin/raku /code/main.raku" },
  { "d", "/usr/bin/gdc", "main.d",
    BUILD_RUN("/usr/bin/gdc -o /tmp/.ux-prog /code/main.d") },
  { "cobol", "/usr/bin/cobc", "main.cob",
    BUILD_RUN("/usr/bin/cobc -x -o /tmp/.ux-prog /code/main.cob") },
};

#define NLANG (sizeof table / sizeof table[0])

static struct {
  pthread_once_t once;
  const ux_lang *found[NLANG];
  const char *names[NLANG + 1];
  size_t n;
  char *etc[16];              /* /etc/java-* and the like, NULL-ended */
} probe = { PTHREAD_ONCE_INIT, {0}, {0}, 0, {0} };

static int installed(const char *path) {
  char real[PATH_MAX];
  if (access(path, X_OK) != 0 || !realpath(path, real)) return 0;
  return strncmp(real, "/usr/", 5) == 0;
}

static int by_name(const void *a, const void *b) {
  const ux_lang *x = *(const ux_lang *const *)a;
  const ux_lang *y = *(const ux_lang *const *)b;
  return strcmp(x->name, y->name);
}

static void do_probe(void) {
  for (size_t i = 0; i < NLANG; i++)
    if (installed(table[i].probe)) probe.found[probe.n++] = &table[i];
  qsort(probe.found, probe.n, sizeof probe.found[0], by_name);
  for (size_t i = 0; i < probe.n; i++) probe.names[i] = probe.found[i]->name;
  probe.names[probe.n] = NULL;

  /* OpenJDK's conf/ and lib/security/ are symlinks into /etc/java-N-openjdk */
  glob_t g;
  size_t k = 0;
  if (glob("/etc/java-*", GLOB_ONLYDIR, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && k + 1 < sizeof probe.etc / sizeof probe.etc[0]; i++)
      if ((probe.etc[k] = strdup(g.gl_pathv[i]))) k++;
    globfree(&g);
  }
  probe.etc[k] = NULL;
}

const ux_lang *ux_sb_lang(const char *name) {
  pthread_once(&probe.once, do_probe);
  if (!name) return NULL;
  for (size_t i = 0; i < probe.n; i++)
    if (strcmp(probe.found[i]->name, name) == 0) return probe.found[i];
  return NULL;
}

const char *const *ux_sb_extra_etc(void) {
  pthread_once(&probe.once, do_probe);
  return (const char *const *)probe.etc;
}

const char *const *ux_languages(size_t *n) {
  pthread_once(&probe.once, do_probe);
  if (n) *n = probe.n;
  return probe.names;
}

int ux_language_known(const char *name) {
  return ux_sb_lang(name) != NULL;
}
