/*
** Language map (see langmap.h). Small linear tables: a lookup happens once
** per file name, so clarity wins over a hash.
*/
#include "core/langmap.h"

#include <string.h>

static const unsb_langmap_entry EXTENSIONS[] = {
  {"py", "python"}, {"js", "javascript"}, {"ts", "typescript"},
  {"rb", "ruby"}, {"php", "php"}, {"pl", "perl"}, {"sh", "bash"},
  {"lua", "lua"}, {"r", "r"},
  {"go", "go"}, {"rs", "rust"}, {"c", "c"}, {"cpp", "cpp"}, {"cc", "cpp"},
  {"cxx", "cpp"}, {"java", "java"}, {"kt", "kotlin"}, {"m", "objc"},
  {"cs", "csharp"}, {"fs", "fsharp"},
  {"hs", "haskell"}, {"ml", "ocaml"}, {"clj", "clojure"}, {"scm", "scheme"},
  {"ss", "scheme"}, {"erl", "erlang"}, {"ex", "elixir"}, {"exs", "elixir"},
  {"jl", "julia"},
  {"d", "d"}, {"nim", "nim"}, {"zig", "zig"}, {"v", "v"}, {"cr", "crystal"},
  {"dart", "dart"}, {"groovy", "groovy"},
  {"f90", "fortran"}, {"f95", "fortran"}, {"cob", "cobol"}, {"tcl", "tcl"},
  {"raku", "raku"}, {"lisp", "commonlisp"}, {"lsp", "commonlisp"},
  {"pro", "prolog"}, {"p", "prolog"}, {"4th", "forth"}, {"forth", "forth"},
  {"fth", "forth"},
  {"scala", "scala"},   /* the Lua SDK's addition to the C/Py table */
};
#define N_EXTENSIONS (sizeof EXTENSIONS / sizeof EXTENSIONS[0])

/* Interpreter names of a shebang, after any trailing version ("python3.11",
** "lua5.4", "perl5") has been cut off. */
static const unsb_langmap_entry INTERPRETERS[] = {
  {"python", "python"}, {"pypy", "python"},
  {"node", "javascript"}, {"nodejs", "javascript"},
  {"deno", "typescript"}, {"ts-node", "typescript"},
  {"ruby", "ruby"}, {"perl", "perl"}, {"php", "php"},
  {"bash", "bash"}, {"sh", "bash"}, {"dash", "bash"},
  {"lua", "lua"}, {"luajit", "lua"},
  {"rscript", "r"}, {"tclsh", "tcl"}, {"wish", "tcl"},
  {"raku", "raku"}, {"perl6", "raku"}, {"julia", "julia"},
  {"groovy", "groovy"}, {"scala", "scala"},
  {"guile", "scheme"}, {"scheme", "scheme"},
  {"clisp", "commonlisp"}, {"sbcl", "commonlisp"},
  {"ocaml", "ocaml"}, {"elixir", "elixir"}, {"escript", "erlang"},
  {"runghc", "haskell"}, {"runhaskell", "haskell"},
  {"gforth", "forth"}, {"swipl", "prolog"}, {"crystal", "crystal"},
  {"kotlin", "kotlin"}, {"dart", "dart"},
};
#define N_INTERPRETERS (sizeof INTERPRETERS / sizeof INTERPRETERS[0])

static char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive lookup of s[0..len) in a table of lower-case keys. */
static const char *lookup(const unsb_langmap_entry *t, size_t n,
                          const char *s, size_t len) {
  for (size_t i = 0; i < n; i++) {
    const char *k = t[i].ext;
    size_t j = 0;
    while (j < len && k[j] && ascii_lower(s[j]) == k[j]) j++;
    if (j == len && k[j] == '\0') return t[i].language;
  }
  return NULL;
}

const unsb_langmap_entry *unsb_langmap_entries(size_t *count) {
  if (count) *count = N_EXTENSIONS;
  return EXTENSIONS;
}

const char *unsb_language_for_ext(const char *ext, size_t len) {
  if (!ext || len == 0) return NULL;
  return lookup(EXTENSIONS, N_EXTENSIONS, ext, len);
}

const char *unsb_detect_language(const char *filename, size_t len) {
  const char *base = filename, *dot = NULL;
  if (!filename) return NULL;
  for (size_t i = 0; i < len; i++) {
    if (filename[i] == '/') { base = filename + i + 1; dot = NULL; }
    else if (filename[i] == '.') dot = filename + i;
  }
  if (!dot || dot == base) return NULL;   /* no dot, or a dot-file */
  return unsb_language_for_ext(dot + 1, (size_t)(filename + len - dot - 1));
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* Finds the next blank-separated word in [*p, end); returns its length. */
static size_t next_word(const char **p, const char *end, const char **word) {
  const char *s = *p;
  while (s < end && is_space(*s)) s++;
  *word = s;
  while (s < end && !is_space(*s)) s++;
  *p = s;
  return (size_t)(s - *word);
}

/* The language of an interpreter path such as /usr/bin/python3.11. */
static const char *interpreter_language(const char *w, size_t n) {
  const char *base = w;
  for (size_t i = 0; i < n; i++)
    if (w[i] == '/') base = w + i + 1;
  n -= (size_t)(base - w);
  /* the exact name first: some end in a digit of their own ("perl6") */
  const char *lang = lookup(INTERPRETERS, N_INTERPRETERS, base, n);
  if (lang) return lang;
  /* then without a version suffix of digits and dots ("lua5.4", "python3") */
  size_t stem = n;
  while (stem > 0 && ((base[stem - 1] >= '0' && base[stem - 1] <= '9') ||
                      base[stem - 1] == '.'))
    stem--;
  return stem ? lookup(INTERPRETERS, N_INTERPRETERS, base, stem) : NULL;
}

/* An env option whose argument is the next word (GNU env's -u, -C). */
static int takes_argument(const char *w, size_t n) {
  static const char *const OPTS[] = {"-u", "-C", "--unset", "--chdir"};
  for (size_t i = 0; i < sizeof OPTS / sizeof OPTS[0]; i++)
    if (n == strlen(OPTS[i]) && memcmp(w, OPTS[i], n) == 0) return 1;
  return 0;
}

const char *unsb_detect_shebang(const char *line, size_t len) {
  const char *nl, *end, *p, *w;
  size_t n;
  if (!line || len < 3 || line[0] != '#' || line[1] != '!') return NULL;
  nl = memchr(line, '\n', len);
  end = nl ? nl : line + len;
  while (end > line && (end[-1] == '\r' || is_space(end[-1]))) end--;
  p = line + 2;
  n = next_word(&p, end, &w);
  if (n == 0) return NULL;
  if ((n == 3 && memcmp(w, "env", 3) == 0) ||
      (n >= 4 && memcmp(w + n - 4, "/env", 4) == 0)) {
    /* env: skip its options (-S, -i; -u NAME and -C DIR with their
    ** argument) and NAME=value assignments */
    for (;;) {
      n = next_word(&p, end, &w);
      if (n == 0) return NULL;
      if (takes_argument(w, n)) {
        if (next_word(&p, end, &w) == 0) return NULL;
        continue;
      }
      if (w[0] == '-' || memchr(w, '=', n)) continue;
      break;
    }
  }
  return interpreter_language(w, n);
}
