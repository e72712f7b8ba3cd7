/*
** Credential resolution (see credentials.h for the rules). Files are read
** whole into one buffer that is wiped before it is freed, so the secrets of
** other rows do not linger in freed memory.
*/
#include "core/credentials.h"
#include "core/validate.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>

#define CSV_MAX (1024 * 1024)   /* an accounts file is a few lines */

void unsb_cred_opts_init(unsb_cred_opts *o) {
  memset(o, 0, sizeof *o);
  o->account = -1;
}

void unsb_cred_opts_from_environ(unsb_cred_opts *o) {
  o->home = getenv("HOME");
  o->env_public_key = getenv("UNSANDBOX_PUBLIC_KEY");
  o->env_secret_key = getenv("UNSANDBOX_SECRET_KEY");
  o->env_account = getenv("UNSANDBOX_ACCOUNT");
}

void unsb_credentials_free(unsb_credentials *c) {
  if (!c) return;
  if (c->secret) {
    OPENSSL_cleanse(c->secret, c->secret_len);
    free(c->secret);
  }
  free(c->public_key);
  free(c->source);
  c->public_key = c->secret = c->source = NULL;
  c->secret_len = 0;
}

static int fill(unsb_credentials *out, const char *pk, size_t pk_len,
                const char *sk, size_t sk_len, const char *source,
                unsb_error *err) {
  out->public_key = strndup(pk, pk_len);
  out->secret = malloc(sk_len + 1);
  out->source = strdup(source);
  if (!out->public_key || !out->secret || !out->source) {
    free(out->public_key);
    free(out->secret);
    free(out->source);
    out->public_key = out->secret = out->source = NULL;
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  }
  memcpy(out->secret, sk, sk_len);
  out->secret[sk_len] = '\0';
  out->secret_len = sk_len;
  return 0;
}

/* ---------------------------------------------------------------------
** accounts.csv
** ------------------------------------------------------------------- */

/* [*s, *e) without the blanks around it (core/validate.h's rule). */
static void trim(const char **s, const char **e) {
  size_t len = (size_t)(*e - *s);
  unsb_trim(s, &len);
  *e = *s + len;
}

typedef struct { const char *pk, *sk; size_t pk_len, sk_len; } csv_row;

/* A key goes into a header and is compared as a C string: a NUL or any
** other control byte in it (found by fuzz/accounts.c: a NUL-led key
** resolved as "") makes the line no key pair. */
static int has_control(const char *s, const char *e) {
  for (; s < e; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
  return 0;
}

/* Finds data row `index`; returns 1 and fills row, else 0 with *rows set
** to the number of data rows. */
static int csv_find(const char *buf, size_t len, long long index,
                    csv_row *row, long long *rows) {
  const char *p = buf, *end = buf + len;
  long long n = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *s = p, *e = nl ? nl : end;
    p = nl ? nl + 1 : end;
    trim(&s, &e);
    if (s == e || *s == '#') continue;
    const char *c1 = memchr(s, ',', (size_t)(e - s));
    if (!c1) continue;
    const char *c2 = memchr(c1 + 1, ',', (size_t)(e - c1 - 1));
    const char *ps = s, *pe = c1, *ss = c1 + 1, *se = c2 ? c2 : e;
    trim(&ps, &pe);
    trim(&ss, &se);
    if (ps == pe || ss == se || has_control(ps, pe) || has_control(ss, se))
      continue;                                /* not a key pair: not counted */
    if (n == index) {
      row->pk = ps; row->pk_len = (size_t)(pe - ps);
      row->sk = ss; row->sk_len = (size_t)(se - ss);
      return 1;
    }
    n++;
  }
  *rows = n;
  return 0;
}

/* Reads a whole small file. Returns the buffer or NULL with errno set. */
static char *slurp(const char *path, size_t *len) {
  struct stat st;
  char *buf;
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0) { close(fd); return NULL; }
  if (!S_ISREG(st.st_mode)) { close(fd); errno = EISDIR; return NULL; }
  if (st.st_size > CSV_MAX) { close(fd); errno = EFBIG; return NULL; }
  buf = malloc((size_t)st.st_size + 1);
  if (!buf) { close(fd); return NULL; }
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  *len = got;
  return buf;
}

/* Appends "; " + printf text to a bounded note buffer. */
static void note(char *buf, size_t size, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t size, const char *fmt, ...) {
  size_t used = strlen(buf);
  va_list ap;
  if (used >= size - 1) return;
  if (used) { snprintf(buf + used, size - used, "; "); used = strlen(buf); }
  va_start(ap, fmt);
  vsnprintf(buf + used, size - used, fmt, ap);
  va_end(ap);
}

/* Looks for row index in one file. 1 = found (out filled), 0 = not there
** (a reason appended to notes), -1 = out of memory. */
static int try_file(const char *path, long long index, unsb_credentials *out,
                    char *notes, size_t notes_size, unsb_error *err) {
  size_t len = 0;
  long long rows = 0;
  csv_row row;
  char *buf = slurp(path, &len);
  if (!buf) {
    if (errno == ENOENT) note(notes, notes_size, "%s (not found)", path);
    else note(notes, notes_size, "%s (unreadable: %s)", path, strerror(errno));
    return 0;
  }
  int found = csv_find(buf, len, index, &row, &rows);
  int rc = 0;
  if (found) {
    char *source = NULL;
    if (asprintf(&source, "%s:%lld", path, index) < 0) source = NULL;
    rc = source && fill(out, row.pk, row.pk_len, row.sk, row.sk_len, source, err) == 0 ? 1 : -1;
    if (!source) unsb_fail(err, UNSB_ENOMEM, "out of memory");
    free(source);
  } else {
    note(notes, notes_size, "%s (%lld account%s, no row %lld)", path, rows,
         rows == 1 ? "" : "s", index);
  }
  OPENSSL_cleanse(buf, len);
  free(buf);
  return rc;
}

/* Row index of the home file, then of the cwd file. */
static int try_files(const unsb_cred_opts *o, long long index, unsb_credentials *out,
                     char *notes, size_t notes_size, unsb_error *err) {
  char *path = NULL;
  int rc;
  if (o->home && *o->home) {
    if (asprintf(&path, "%s/.unsandbox/accounts.csv", o->home) < 0)
      return unsb_fail(err, UNSB_ENOMEM, "out of memory");
    rc = try_file(path, index, out, notes, notes_size, err);
    free(path);
    if (rc != 0) return rc;
  } else {
    note(notes, notes_size, "~/.unsandbox/accounts.csv (HOME not set)");
  }
  if (asprintf(&path, "%s/accounts.csv", o->cwd ? o->cwd : ".") < 0)
    return unsb_fail(err, UNSB_ENOMEM, "out of memory");
  rc = try_file(path, index, out, notes, notes_size, err);
  free(path);
  return rc;
}

/* ---------------------------------------------------------------------
** resolution
** ------------------------------------------------------------------- */

static int nonempty(const char *s) { return s && *s; }

/* UNSANDBOX_ACCOUNT: unset or blank = 0; otherwise digits only. */
static int parse_account(const char *s, long long *out) {
  const char *e;
  long long v = 0;
  *out = 0;
  if (!s) return 0;
  e = s + strlen(s);
  trim(&s, &e);
  if (s == e) return 0;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9' || v > 100000000LL) return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

int unsb_credentials_resolve(const unsb_cred_opts *o, unsb_credentials *out,
                             unsb_error *err) {
  char notes[UNSB_ERROR_MAX - 200];
  long long index;
  int rc;

  memset(out, 0, sizeof *out);
  notes[0] = '\0';

  /* 1. explicit keys: both or neither */
  if (o->public_key || o->secret_key) {
    if (!nonempty(o->public_key) || !o->secret_key || o->secret_len == 0)
      return unsb_fail(err, UNSB_ECREDENTIALS,
                       "public_key and secret_key must both be given and non-empty");
    return fill(out, o->public_key, strlen(o->public_key), o->secret_key,
                o->secret_len, "arguments", err);
  }

  /* 2. an explicit account index: the files only, environment ignored */
  if (o->account >= 0) {
    rc = try_files(o, o->account, out, notes, sizeof notes, err);
    if (rc > 0) return 0;
    if (rc < 0) return -1;
    return unsb_fail(err, UNSB_ECREDENTIALS, "no credentials for account %lld: %s",
                     o->account, notes);
  }

  /* 3. the environment */
  if (nonempty(o->env_public_key) && nonempty(o->env_secret_key))
    return fill(out, o->env_public_key, strlen(o->env_public_key),
                o->env_secret_key, strlen(o->env_secret_key), "environment", err);

  /* 4. row UNSANDBOX_ACCOUNT (default 0) of the files */
  if (parse_account(o->env_account, &index) != 0) {
    if (o->home && *o->home)
      return unsb_fail(err, UNSB_ECREDENTIALS,
                       "UNSANDBOX_ACCOUNT='%s' is not a row index (a non-negative integer) "
                       "of %s/.unsandbox/accounts.csv or %s/accounts.csv",
                       o->env_account, o->home, o->cwd ? o->cwd : ".");
    return unsb_fail(err, UNSB_ECREDENTIALS,
                     "UNSANDBOX_ACCOUNT='%s' is not a row index (a non-negative integer) "
                     "of %s/accounts.csv", o->env_account, o->cwd ? o->cwd : ".");
  }
  rc = try_files(o, index, out, notes, sizeof notes, err);
  if (rc > 0) return 0;
  if (rc < 0) return -1;
  if (nonempty(o->env_account))
    return unsb_fail(err, UNSB_ECREDENTIALS,
                     "no credentials for account %lld (UNSANDBOX_ACCOUNT): %s", index, notes);
  return unsb_fail(err, UNSB_ECREDENTIALS,
                   "no credentials found; looked at: public_key/secret_key arguments (not given); "
                   "UNSANDBOX_PUBLIC_KEY/UNSANDBOX_SECRET_KEY (%s); %s",
                   nonempty(o->env_public_key) || nonempty(o->env_secret_key)
                     ? "only one of them set" : "not set",
                   notes);
}
