/*
** Language map: every extension of spec §5.6 (and scala), case, paths,
** dot-files, and shebang lines.
*/
#include <string.h>

#include "core/langmap.h"
#include "tests/tap.h"

static const char *const SPEC[][2] = {
  {"py", "python"}, {"js", "javascript"}, {"ts", "typescript"}, {"rb", "ruby"},
  {"php", "php"}, {"pl", "perl"}, {"sh", "bash"}, {"lua", "lua"}, {"r", "r"},
  {"go", "go"}, {"rs", "rust"}, {"c", "c"}, {"cpp", "cpp"}, {"cc", "cpp"},
  {"cxx", "cpp"}, {"java", "java"}, {"kt", "kotlin"}, {"m", "objc"},
  {"cs", "csharp"}, {"fs", "fsharp"}, {"hs", "haskell"}, {"ml", "ocaml"},
  {"clj", "clojure"}, {"scm", "scheme"}, {"ss", "scheme"}, {"erl", "erlang"},
  {"ex", "elixir"}, {"exs", "elixir"}, {"jl", "julia"}, {"d", "d"}, {"nim", "nim"},
  {"zig", "zig"}, {"v", "v"}, {"cr", "crystal"}, {"dart", "dart"},
  {"groovy", "groovy"}, {"f90", "fortran"}, {"f95", "fortran"}, {"cob", "cobol"},
  {"tcl", "tcl"}, {"raku", "raku"}, {"lisp", "commonlisp"}, {"lsp", "commonlisp"},
  {"pro", "prolog"}, {"p", "prolog"}, {"4th", "forth"}, {"forth", "forth"},
  {"fth", "forth"},
};
#define N_SPEC (sizeof SPEC / sizeof SPEC[0])

static const char *detect(const char *name) { return unsb_detect_language(name, strlen(name)); }
static const char *shebang(const char *line) { return unsb_detect_shebang(line, strlen(line)); }

int main(void) {
  char name[64];
  size_t n;
  const unsb_langmap_entry *all = unsb_langmap_entries(&n);

  ok(N_SPEC == 48, "the spec lists 48 extensions");
  ok(n == N_SPEC + 1, "the map has the 48 plus scala (%zu)", n);
  for (size_t i = 0; i < N_SPEC; i++) {
    snprintf(name, sizeof name, "src/main.%s", SPEC[i][0]);
    is_str(detect(name), SPEC[i][1], ".%s", SPEC[i][0]);
    int found = 0;
    for (size_t j = 0; j < n; j++)
      found |= strcmp(all[j].ext, SPEC[i][0]) == 0 && strcmp(all[j].language, SPEC[i][1]) == 0;
    ok(found, ".%s is in the exported table", SPEC[i][0]);
  }
  is_str(detect("Main.scala"), "scala", ".scala (Lua SDK addition)");

  /* case-insensitive */
  is_str(detect("analysis.R"), "r", ".R");
  is_str(detect("HELLO.PY"), "python", ".PY");
  is_str(detect("x.Cpp"), "cpp", ".Cpp");

  /* the last dot of the base name */
  is_str(detect("archive.tar.py"), "python", "last dot wins");
  is_str(detect("/home/u/my.project/run.sh"), "bash", "dots in directories are ignored");
  ok(detect("/home/u/my.project/Makefile") == NULL, "no dot in the base name: nil");
  ok(detect("README") == NULL, "no extension: nil");
  ok(detect("foo.") == NULL, "empty extension: nil");
  ok(detect(".bashrc") == NULL, "dot-file: nil");
  ok(detect("dir/.py") == NULL, "dot-file named .py: nil");
  ok(detect("") == NULL, "empty name: nil");
  ok(detect("notes.txt") == NULL, "unknown extension: nil");
  ok(detect("x.pyc") == NULL, "longer unknown extension: nil");
  ok(detect("x.p") != NULL && strcmp(detect("x.p"), "prolog") == 0, "one-letter prefix is exact");
  is_str(unsb_detect_language("a.pyx", 3), "prolog", "the length is honoured (a.p of a.pyx)");
  ok(unsb_language_for_ext("PY", 2) && strcmp(unsb_language_for_ext("PY", 2), "python") == 0,
     "language_for_ext is case-insensitive");

  /* shebangs */
  is_str(shebang("#!/usr/bin/env python3"), "python", "env python3");
  is_str(shebang("#!/usr/bin/python3"), "python", "/usr/bin/python3");
  is_str(shebang("#!/usr/bin/python3.11 -u"), "python", "python3.11 with an option");
  is_str(shebang("#!/bin/bash"), "bash", "/bin/bash");
  is_str(shebang("#!/bin/sh -e\n"), "bash", "/bin/sh");
  is_str(shebang("#! /bin/bash\r\n"), "bash", "blank after #!, CRLF");
  is_str(shebang("#!/usr/bin/env node"), "javascript", "node");
  is_str(shebang("#!/usr/bin/env ruby"), "ruby", "ruby");
  is_str(shebang("#!/usr/bin/perl -w"), "perl", "perl");
  is_str(shebang("#!/usr/bin/env php"), "php", "php");
  is_str(shebang("#!/usr/bin/env lua"), "lua", "lua");
  is_str(shebang("#!/usr/bin/lua5.4"), "lua", "lua5.4");
  is_str(shebang("#!/usr/bin/env -S lua5.4 -W"), "lua", "env -S");
  is_str(shebang("#!/usr/bin/env LC_ALL=C perl"), "perl", "env with an assignment");
  is_str(shebang("#!/usr/bin/env Rscript"), "r", "Rscript");
  is_str(shebang("#!/usr/bin/tclsh"), "tcl", "tclsh");
  is_str(shebang("#!/usr/bin/env perl6"), "raku", "perl6 is raku");
  is_str(shebang("#!/usr/bin/env julia"), "julia", "julia");
  is_str(shebang("#!/usr/bin/env elixir"), "elixir", "elixir");
  is_str(shebang("#!/usr/bin/env -S python3 -u"), "python", "env -S with the interpreter's option");
  is_str(shebang("#!/usr/bin/env python3.11"), "python", "env python3.11");
  is_str(shebang("#!/usr/bin/env -u PYTHONPATH python3"), "python", "env -u NAME");
  is_str(shebang("#!/usr/bin/env -C /tmp -i ruby"), "ruby", "env -C DIR -i");
  ok(shebang("#!/usr/bin/env -u") == NULL, "env -u without its argument: nil");
  ok(shebang("#!/usr/bin/env") == NULL, "env alone: nil");
  ok(shebang("#!/usr/bin/unknown-thing") == NULL, "unknown interpreter: nil");
  ok(shebang("print('hi')") == NULL, "not a shebang: nil");
  ok(shebang("#!") == NULL, "bare #!: nil");
  ok(shebang("") == NULL, "empty line: nil");
  ok(shebang("# !/bin/bash") == NULL, "comment, not shebang: nil");
  ok(shebang("#!/usr/bin/env 3") == NULL, "digits only: nil");
  return tap_done();
}
