/*
** file_grep: search the regular files of a tree for a literal string
** (default; case_insensitive folds ASCII letters only) or a POSIX extended
** regular expression (regcomp; REG_ICASE under the C locale), line by line.
** Files over AG_GREP_FILE_BYTES and files that are not UTF-8 are skipped;
** symlinks are not followed. Bounded everywhere: at most `limit` files
** (≤ 200), 200 lines per file and 2000 in all in content mode, line texts
** cut at 1000 characters, and the walk's scan and time limits.
*/
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/args.h"
#include "agent/buf.h"
#include "agent/conn.h"
#include "agent/files.h"
#include "agent/fsfd.h"
#include "agent/walk.h"

#define LINES_PER_FILE 200
#define LINES_TOTAL 2000
#define LINE_CHARS 1000

enum { FILES_WITH_MATCHES, CONTENT, COUNT };

typedef struct {
  const char *pattern;
  size_t patlen;
  int icase, regex, mode, has_glob, lines_cut;
  long long context, limit;
  regex_t re;
  ag_glob glob;
  char *folded;          /* the pattern, lower-cased, for icase literals */
  ag_buf line;
  json_t *files;
  size_t file_count, match_count, lines_total;
  const char *stopped;
} grep_run;

static void fold(char *s, size_t n) {
  for (size_t i = 0; i < n; i++) if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] + 32);
}

static int line_matches(grep_run *g, const char *s, size_t n) {
  /* a NUL-terminated copy: regexec needs one, folding must not touch d */
  ag_buf_reset(&g->line);
  if (ag_buf_add(&g->line, s, n) < 0 || ag_buf_add(&g->line, "", 1) < 0) return 0;
  if (g->regex) return regexec(&g->re, g->line.p, 0, NULL, 0) == 0;
  if (g->icase) fold(g->line.p, n);
  return memmem(g->line.p, n, g->icase ? g->folded : g->pattern, g->patlen) != NULL;
}

static json_t *line_entry(size_t no, const char *s, size_t n, int match) {
  size_t cut = ag_utf8_prefix(s, n, LINE_CHARS);
  return json_pack("{s:I, s:s%, s:b}", "line", (json_int_t)no, "text", s, cut, "match", match);
}

/* The content-mode lines of one file: matches with their context. */
static json_t *content_lines(grep_run *g, const char *d, size_t *starts, size_t nlines,
                             const unsigned char *hit, size_t len) {
  json_t *lines = json_array();
  unsigned char *want = calloc(nlines ? nlines : 1, 1);
  size_t emitted = 0;
  if (!lines || !want) { json_decref(lines); free(want); return NULL; }
  for (size_t i = 0; i < nlines; i++)
    if (hit[i])
      for (size_t k = i >= (size_t)g->context ? i - (size_t)g->context : 0; k <= i + (size_t)g->context && k < nlines; k++)
        want[k] = 1;
  for (size_t i = 0; i < nlines; i++) {
    if (!want[i]) continue;
    if (emitted >= LINES_PER_FILE || g->lines_total >= LINES_TOTAL) { g->lines_cut = 1; break; }
    size_t end = i + 1 < nlines ? starts[i + 1] - 1 : len;
    if (end > starts[i] && d[end - 1] == '\n') end--;
    if (json_array_append_new(lines, line_entry(i + 1, d + starts[i], end - starts[i], hit[i])) < 0) {
      json_decref(lines); free(want); return NULL;
    }
    emitted++;
    g->lines_total++;
  }
  free(want);
  return lines;
}

static int grep_data(grep_run *g, const char *rel, const char *d, size_t len, ag_err *e) {
  size_t nlines = 0, count = 0, cap = 1024;
  size_t *starts = malloc(cap * sizeof *starts);
  unsigned char *hit;
  int rc = 0;
  if (!starts) return ag_fail(e, AG_INTERNAL, "out of memory");
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(d + at, '\n', len - at);
    if (nlines == cap) {
      size_t *ns = realloc(starts, (cap *= 2) * sizeof *ns);
      if (!ns) { free(starts); return ag_fail(e, AG_INTERNAL, "out of memory"); }
      starts = ns;
    }
    starts[nlines++] = at;
    at = nl ? (size_t)(nl - d) + 1 : len;
  }
  if (!(hit = calloc(nlines ? nlines : 1, 1))) { free(starts); return ag_fail(e, AG_INTERNAL, "out of memory"); }
  for (size_t i = 0; i < nlines; i++) {
    size_t end = i + 1 < nlines ? starts[i + 1] - 1 : len;
    if (end > starts[i] && d[end - 1] == '\n') end--;
    if ((hit[i] = (unsigned char)line_matches(g, d + starts[i], end - starts[i]))) count++;
  }
  if (count > 0) {
    if (g->file_count == (size_t)g->limit) { g->stopped = "limit"; rc = 1; goto done; }
    json_t *entry = ag_json_text(rel, strlen(rel));
    if (entry && g->mode != FILES_WITH_MATCHES)
      entry = json_pack("{s:o, s:I}", "path", entry, "count", (json_int_t)count);
    if (entry && g->mode == CONTENT) {
      json_t *lines = content_lines(g, d, starts, nlines, hit, len);
      if (!lines || json_object_set_new(entry, "lines", lines) < 0) { json_decref(entry); entry = NULL; }
    }
    if (!entry || json_array_append_new(g->files, entry) < 0) { rc = ag_fail(e, AG_INTERNAL, "out of memory"); goto done; }
    g->file_count++;
    g->match_count += count;
  }
done:
  free(starts);
  free(hit);
  return rc;
}

static int grep_visit(void *ud, const ag_walk_entry *ent, ag_err *e) {
  grep_run *g = ud;
  struct stat st;
  char *data;
  ssize_t n;
  int fd, rc;
  if (!S_ISREG(ent->st.st_mode) || ent->st.st_size > AG_GREP_FILE_BYTES) return 0;
  if (g->has_glob && !ag_glob_match(&g->glob, ent->sub)) return 0;
  fd = ag_openat2(ent->dirfd, ent->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0, AG_RES_STRICT);
  if (fd < 0) return 0;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != ent->st.st_ino || !(data = malloc(AG_GREP_FILE_BYTES + 1))) {
    close(fd);
    return 0;
  }
  n = ag_read_full(fd, data, AG_GREP_FILE_BYTES + 1);
  close(fd);
  if (n < 0 || n > AG_GREP_FILE_BYTES || !ag_utf8_valid(data, (size_t)n)) { free(data); return 0; }
  rc = grep_data(g, ent->rel, data, (size_t)n, e);
  free(data);
  return rc;
}

static int grep_args(grep_run *g, json_t *req, const char **path, size_t *plen, ag_err *e) {
  static const char *const keys[] = { "path", "pattern", "glob", "mode", "case_insensitive",
                                      "context", "regex", "limit", NULL };
  const char *mode, *glob;
  size_t glen;
  if (ag_args_only(req, keys, e) < 0 || ag_arg_str(req, "path", ".", 1, path, plen, e) < 0 ||
      ag_arg_str(req, "pattern", NULL, 0, &g->pattern, &g->patlen, e) < 0 ||
      ag_arg_str(req, "glob", "", 1, &glob, &glen, e) < 0 ||
      ag_arg_str(req, "mode", "files_with_matches", 0, &mode, NULL, e) < 0 ||
      ag_arg_bool(req, "case_insensitive", 0, &g->icase, e) < 0 ||
      ag_arg_int(req, "context", 0, 0, AG_GREP_CONTEXT_MAX, &g->context, e) < 0 ||
      ag_arg_bool(req, "regex", 0, &g->regex, e) < 0 ||
      ag_arg_int(req, "limit", 0, 0, 1LL << 31, &g->limit, e) < 0)
    return -1;
  if (g->patlen == 0) return ag_fail(e, AG_INVALID, "argument 'pattern' must not be empty");
  if (g->patlen > AG_GREP_PATTERN_MAX) return ag_fail(e, AG_INVALID, "argument 'pattern' is longer than %d bytes", AG_GREP_PATTERN_MAX);
  if (!strcmp(mode, "files_with_matches")) g->mode = FILES_WITH_MATCHES;
  else if (!strcmp(mode, "content")) g->mode = CONTENT;
  else if (!strcmp(mode, "count")) g->mode = COUNT;
  else return ag_fail(e, AG_INVALID, "argument 'mode' must be files_with_matches, content or count");
  if (g->limit == 0 || g->limit > AG_GREP_FILES_MAX) g->limit = AG_GREP_FILES_MAX;
  if (glen > 0) {
    if (ag_glob_compile(&g->glob, glob, glen, "glob", e) < 0) return -1;
    g->has_glob = 1;
  }
  if (g->regex) {
    int rc = regcomp(&g->re, g->pattern, REG_EXTENDED | REG_NOSUB | (g->icase ? REG_ICASE : 0));
    if (rc != 0) {
      char msg[200];
      regerror(rc, &g->re, msg, sizeof msg);
      g->regex = 0;
      return ag_fail(e, AG_INVALID, "argument 'pattern' is not a valid POSIX extended regular expression: %s", msg);
    }
  } else if (g->icase) {
    if (!(g->folded = strdup(g->pattern))) return ag_fail(e, AG_INTERNAL, "out of memory");
    fold(g->folded, g->patlen);
  }
  return 0;
}

int ag_op_file_grep(const ag_fs *fs, json_t *req, json_t **result, ag_err *e) {
  static const char *const modes[] = { "files_with_matches", "content", "count" };
  char norm[AG_PATH_MAX];
  const char *path;
  size_t plen;
  grep_run g;
  ag_walk_state ws;
  int rc = -1;
  memset(&g, 0, sizeof g);
  if (grep_args(&g, req, &path, &plen, e) == 0 && ag_path_norm(path, plen, 1, norm, e) == 0) {
    if (!(g.files = json_array())) ag_fail(e, AG_INTERNAL, "out of memory");
    else if (ag_walk(fs, norm, path, &ws, grep_visit, &g, e) == 0) {
      const char *reason = g.stopped ? g.stopped : ws.stopped ? ws.stopped : g.lines_cut ? "line_limit" : NULL;
      *result = json_pack("{s:s, s:s, s:O, s:I, s:I, s:I, s:b, s:s?}", "pattern", g.pattern,
                          "mode", modes[g.mode], "files", g.files, "file_count", (json_int_t)g.file_count,
                          "match_count", (json_int_t)g.match_count, "scanned", (json_int_t)ws.scanned,
                          "truncated", reason != NULL, "truncated_reason", reason);
      rc = *result ? 0 : ag_fail(e, AG_INTERNAL, "out of memory");
    }
  }
  json_decref(g.files);
  if (g.regex) regfree(&g.re);
  ag_glob_free(&g.glob);
  free(g.folded);
  ag_buf_free(&g.line);
  return rc;
}
