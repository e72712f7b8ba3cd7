/*
** Archive creation by file descriptor (mode `archive`, op `checkpoint`).
**
** libarchive's disk reader walks by path, so it is not used: the walk is
** ours. Every entry is first opened O_PATH | O_NOFOLLOW relative to its
** parent's fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
** RESOLVE_NO_MAGICLINKS): this never blocks (FIFO), never follows and has
** no side effect (device). Its fstat decides: a symlink is stored via
** readlinkat on that fd; a file or directory is opened again, by name and
** with the same resolve rules, for reading, and must be the same inode as
** the O_PATH fd, else it changed under us and is skipped. Anything else is
** skipped with a warning. Directories are listed then sorted, so archives
** of equal trees are equal.
*/
#include "agent/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "agent/fsfd.h"

typedef struct {
  struct archive *w;
  const ag_tar_limits *lim;
  ag_tar_stats *st;
  unsigned long long entries;
  ag_err *e;
  int outfd;
  EVP_MD_CTX *sha;
  int write_errno;
  char buf[65536];
} walk;

void ag_tar_limits_default(ag_tar_limits *lim) {
  memset(lim, 0, sizeof *lim);
  lim->max_bytes = 4ULL << 30;
  lim->max_entries = 1000000;
  lim->max_file_bytes = 1ULL << 30;
}

static void warn(const char *rel, const char *why) {
  char shown[AG_SHOW_MAX];
  fprintf(stderr, "unsandboxd-agent: warning: skipped %s: %s\n",
          ag_show(rel, shown, sizeof shown), why);
}

static la_ssize_t sink(struct archive *a, void *ud, const void *buf, size_t len) {
  walk *wk = ud;
  if (ag_write_all(wk->outfd, buf, len) < 0) {
    wk->write_errno = errno;
    archive_set_error(a, errno, "writing the archive: %s", strerror(errno));
    return -1;
  }
  if (EVP_DigestUpdate(wk->sha, buf, len) != 1) {
    archive_set_error(a, ENOMEM, "sha256 failed");
    return -1;
  }
  wk->st->out_bytes += len;
  return (la_ssize_t)len;
}

static int arc_fail(walk *wk, const char *rel) {
  char shown[AG_SHOW_MAX];
  const char *why = archive_error_string(wk->w);
  return ag_fail(wk->e, AG_INTERNAL, "%s: %s", ag_show(rel, shown, sizeof shown),
                 why ? why : "libarchive failed");
}

/* The sorted names of a directory; more than cap fails. */
static int list_dir(int dirfd, const char *rel, unsigned long long cap,
                    char ***out, size_t *count, ag_err *e) {
  char shown[AG_SHOW_MAX];
  if (ag_dir_names(dirfd, cap > (1ULL << 40) ? (size_t)1 << 40 : (size_t)cap, out, count) == 0) return 0;
  if (errno == E2BIG)
    return ag_fail(e, AG_INVALID, "%s: more entries than --max-entries allows",
                   ag_show(rel, shown, sizeof shown));
  return ag_sysfail(e, "%s: reading the directory", ag_show(rel, shown, sizeof shown));
}

static struct archive_entry *header(const char *rel, const struct stat *s) {
  struct archive_entry *ae = archive_entry_new();
  if (!ae) return NULL;
  archive_entry_set_pathname(ae, rel);
  archive_entry_set_perm(ae, s->st_mode & 0777);
  archive_entry_set_mtime(ae, s->st_mtim.tv_sec, s->st_mtim.tv_nsec);
  archive_entry_set_uid(ae, 0);
  archive_entry_set_gid(ae, 0);
  return ae;
}

static int write_header(walk *wk, struct archive_entry *ae, const char *rel) {
  int rc = archive_write_header(wk->w, ae);
  archive_entry_free(ae);
  if (rc < ARCHIVE_WARN) return arc_fail(wk, rel);
  return 0;
}

static int add_symlink(walk *wk, int pfd, const char *rel, const struct stat *s) {
  char target[AG_TAR_NAME_MAX + 1];
  char shown[AG_SHOW_MAX];
  ssize_t n = readlinkat(pfd, "", target, sizeof target);
  struct archive_entry *ae;
  if (n < 0) return ag_sysfail(wk->e, "%s: readlink", ag_show(rel, shown, sizeof shown));
  if ((size_t)n >= sizeof target) { warn(rel, "symlink target too long"); return 0; }
  target[n] = '\0';
  if (!(ae = header(rel, s))) return ag_fail(wk->e, AG_INTERNAL, "out of memory");
  archive_entry_set_filetype(ae, AE_IFLNK);
  archive_entry_set_perm(ae, 0777);
  archive_entry_set_symlink(ae, target);
  wk->st->symlinks++;
  return write_header(wk, ae, rel);
}

/* Copies exactly s->st_size bytes at most; a file that shrank meanwhile
** is padded with zeros by libarchive, one that grew is cut. */
static int add_file(walk *wk, int fd, const char *rel, const struct stat *s) {
  char shown[AG_SHOW_MAX];
  unsigned long long left = (unsigned long long)s->st_size;
  struct archive_entry *ae;
  if (left > wk->lim->max_bytes - wk->st->bytes)
    return ag_fail(wk->e, AG_INVALID, "%s: the files exceed --max-bytes %llu",
                   ag_show(rel, shown, sizeof shown), wk->lim->max_bytes);
  if (!(ae = header(rel, s))) return ag_fail(wk->e, AG_INTERNAL, "out of memory");
  archive_entry_set_filetype(ae, AE_IFREG);
  archive_entry_set_size(ae, s->st_size);
  if (write_header(wk, ae, rel) < 0) return -1;
  wk->st->files++;
  wk->st->bytes += left;
  while (left > 0) {
    size_t want = left < sizeof wk->buf ? (size_t)left : sizeof wk->buf;
    ssize_t n = read(fd, wk->buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ag_sysfail(wk->e, "%s: read", ag_show(rel, shown, sizeof shown));
    if (n == 0) break;
    if (archive_write_data(wk->w, wk->buf, (size_t)n) < 0) return arc_fail(wk, rel);
    left -= (unsigned long long)n;
  }
  return 0;
}

static int walk_dir(walk *wk, int dirfd, const char *prefix, int depth);

/* Opens name again for reading and checks it is still the inode seen. */
static int reopen_same(int dirfd, const char *name, int dir, const struct stat *seen) {
  struct stat now;
  int fd = ag_openat2(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
                      (dir ? O_DIRECTORY : 0), 0, AG_RES_STRICT);
  if (fd < 0) return -1;
  if (fstat(fd, &now) < 0 || now.st_dev != seen->st_dev || now.st_ino != seen->st_ino ||
      (now.st_mode & S_IFMT) != (seen->st_mode & S_IFMT)) {
    close(fd);
    errno = ESTALE;
    return -1;
  }
  return fd;
}

static int add_entry(walk *wk, int dirfd, const char *name, const char *rel, int depth) {
  char shown[AG_SHOW_MAX];
  struct stat s;
  int rc = 0, fd;
  int pfd = ag_openat2(dirfd, name, O_PATH | O_NOFOLLOW, 0, AG_RES_STRICT);
  if (pfd < 0) {
    /* vanished or swapped between readdir and open: not ours to follow */
    warn(rel, strerror(errno));
    return 0;
  }
  if (fstat(pfd, &s) < 0) { close(pfd); return ag_sysfail(wk->e, "%s: fstat", ag_show(rel, shown, sizeof shown)); }
  if (!S_ISREG(s.st_mode) && !S_ISDIR(s.st_mode) && !S_ISLNK(s.st_mode)) {
    close(pfd);
    warn(rel, S_ISFIFO(s.st_mode) ? "a FIFO" : S_ISSOCK(s.st_mode) ? "a socket" : "a device");
    return 0;
  }
  if (++wk->entries > wk->lim->max_entries) {
    close(pfd);
    return ag_fail(wk->e, AG_INVALID, "%s: more than --max-entries %llu entries",
                   ag_show(rel, shown, sizeof shown), wk->lim->max_entries);
  }
  if (S_ISLNK(s.st_mode)) {
    rc = add_symlink(wk, pfd, rel, &s);
    close(pfd);
    return rc;
  }
  close(pfd);
  if ((fd = reopen_same(dirfd, name, S_ISDIR(s.st_mode), &s)) < 0) {
    warn(rel, "changed while being archived");
    wk->entries--;
    return 0;
  }
  if (S_ISREG(s.st_mode)) {
    rc = add_file(wk, fd, rel, &s);
  } else {
    struct archive_entry *ae = header(rel, &s);
    if (!ae) rc = ag_fail(wk->e, AG_INTERNAL, "out of memory");
    else {
      archive_entry_set_filetype(ae, AE_IFDIR);
      rc = write_header(wk, ae, rel);
      wk->st->directories++;
    }
    if (rc == 0) rc = walk_dir(wk, fd, rel, depth + 1);
  }
  close(fd);
  return rc;
}

static int walk_dir(walk *wk, int dirfd, const char *prefix, int depth) {
  char shown[AG_SHOW_MAX];
  char **names = NULL;
  size_t n = 0;
  int rc = 0;
  if (depth > AG_TAR_MAX_DEPTH)
    return ag_fail(wk->e, AG_INVALID, "%s: deeper than %d directories",
                   ag_show(prefix, shown, sizeof shown), AG_TAR_MAX_DEPTH);
  if (list_dir(dirfd, *prefix ? prefix : ".", wk->lim->max_entries - wk->entries + 1,
               &names, &n, wk->e) < 0)
    return -1;
  for (size_t i = 0; i < n && rc == 0; i++) {
    char *rel;
    int skip = 0;
    if (depth == 0) {
      for (size_t k = 0; k < wk->lim->n_exclude; k++)
        if (!strcmp(names[i], wk->lim->exclude[k])) skip = 1;
      if (wk->lim->n_only) {
        int listed = 0;
        for (size_t k = 0; k < wk->lim->n_only; k++)
          if (!strcmp(names[i], wk->lim->only[k])) listed = 1;
        skip |= !listed;
      }
    }
    if (skip) continue;
    if (asprintf(&rel, "%s%s%s", prefix, *prefix ? "/" : "", names[i]) < 0) {
      rc = ag_fail(wk->e, AG_INTERNAL, "out of memory");
      break;
    }
    if (strlen(rel) > AG_TAR_NAME_MAX) rc = ag_fail(wk->e, AG_INVALID, "%s: name longer than %d bytes", ag_show(rel, shown, sizeof shown), AG_TAR_NAME_MAX);
    else rc = add_entry(wk, dirfd, names[i], rel, depth);
    free(rel);
  }
  ag_names_free(names, n);
  return rc;
}

int ag_tar_create(int dirfd, int outfd, const ag_tar_limits *lim,
                  ag_tar_stats *st, ag_err *e) {
  walk *wk = calloc(1, sizeof *wk);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  int rc = -1;
  memset(st, 0, sizeof *st);
  if (!wk) return ag_fail(e, AG_INTERNAL, "out of memory");
  wk->lim = lim; wk->st = st; wk->e = e; wk->outfd = outfd;
  if (!(wk->sha = EVP_MD_CTX_new()) || EVP_DigestInit_ex(wk->sha, EVP_sha256(), NULL) != 1 ||
      !(wk->w = archive_write_new())) {
    ag_fail(e, AG_INTERNAL, "out of memory");
    goto done;
  }
  if (archive_write_add_filter_gzip(wk->w) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(wk->w) != ARCHIVE_OK ||
      archive_write_open2(wk->w, wk, NULL, sink, NULL, NULL) != ARCHIVE_OK) {
    arc_fail(wk, "archive");
    goto done;
  }
  if (walk_dir(wk, dirfd, "", 0) < 0) goto done;
  if (archive_write_close(wk->w) != ARCHIVE_OK) { arc_fail(wk, "archive"); goto done; }
  if (EVP_DigestFinal_ex(wk->sha, md, &mdlen) != 1 || mdlen != 32) {
    ag_fail(e, AG_INTERNAL, "sha256 failed");
    goto done;
  }
  for (unsigned i = 0; i < 32; i++) sprintf(st->sha256 + 2 * i, "%02x", md[i]);
  rc = 0;
done:
  if (wk->w) archive_write_free(wk->w);
  EVP_MD_CTX_free(wk->sha);
  free(wk);
  return rc;
}
