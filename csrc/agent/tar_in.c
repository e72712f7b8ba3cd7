/*
** Extraction of an untrusted gzip tar (mode `extract`, op `restore`).
**
** The archive may come from a sandbox, so every member is judged before
** anything is created: its name (relative, no empty, "." or ".."
** component, at most AG_TAR_NAME_MAX bytes; a leading "./" is accepted
** and dropped), its type (regular file, directory or
** symlink; hard links and everything else are refused) and the limits.
** Parents are opened one component at a time with openat2(RESOLVE_BENEATH
** | RESOLVE_NO_SYMLINKS), so a symlink created earlier by the same archive
** is never traversed: the member that tries is refused by name. Files are
** created O_CREAT | O_EXCL | O_NOFOLLOW (a second member of the same name
** is refused), symlinks with symlinkat as they are. Modes are masked to
** 0777. Directories are created 0700 and get their own mode and mtime at
** the end, deepest first, so a read-only directory in the archive does not
** stop its own contents from being extracted.
*/
#include "agent/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/fsfd.h"

typedef struct {
  char *rel;
  mode_t mode;
  struct timespec mtime;
} dirmeta;

typedef struct {
  struct archive *a;
  int root;
  const ag_tar_limits *lim;
  ag_tar_stats *st;
  ag_err *e;
  dirmeta *dirs;
  size_t ndirs, capdirs;
  char buf[65536];
} extract;

static int refuse(extract *x, const char *name, const char *why) {
  char shown[AG_SHOW_MAX];
  return ag_fail(x->e, AG_INVALID, "member '%s': %s", ag_show(name, shown, sizeof shown), why);
}

/* Checks a member name and writes its normal form (no "./" prefix, no
** trailing '/') into out. Returns 1 for the root itself ("." / "./"), 0
** for a good name, -1 refused. */
static int check_name(extract *x, const char *name, char *out) {
  const char *p = name;
  size_t len;
  if (!name || !*name) return refuse(x, name ? name : "", "empty name");
  if (name[0] == '/') return refuse(x, name, "absolute name");
  /* Any other byte is a name the sandbox's own code could make, so it is
  ** restored as it was archived: every step goes by fd, and messages show
  ** such bytes as '?' (ag_show). */
  while (p[0] == '.' && p[1] == '/') p += 2;
  len = strlen(p);
  if (len > AG_TAR_NAME_MAX) return refuse(x, name, "name too long");
  memcpy(out, p, len + 1);
  if (len > 0 && out[len - 1] == '/') out[--len] = '\0';
  if (len == 0 || !strcmp(out, ".")) return 1;
  for (char *seg = out;;) {
    char *slash = strchr(seg, '/');
    size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
    if (n == 0) return refuse(x, name, "empty path component");
    if (n == 1 && seg[0] == '.') return refuse(x, name, "'.' path component");
    if (n == 2 && seg[0] == '.' && seg[1] == '.') return refuse(x, name, "'..' path component");
    if (!slash) break;
    seg = slash + 1;
  }
  return 0;
}

/* Opens (creating when missing) every directory above the last component
** of rel; *leaf points at that component. Never traverses a symlink. */
static int open_parent(extract *x, const char *name, char *rel, char **leaf) {
  int cur = dup(x->root);
  char *seg = rel;
  if (cur < 0) return ag_sysfail(x->e, "dup");
  for (char *slash; (slash = strchr(seg, '/')) != NULL; seg = slash + 1) {
    int next;
    *slash = '\0';
    next = ag_openat2(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(cur, seg, 0755) < 0 && errno != EEXIST) {
        *slash = '/';
        close(cur);
        return ag_sysfail(x->e, "member '%s': mkdir", name);
      }
      next = ag_openat2(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT);
    }
    if (next < 0) {
      int err = errno;
      struct stat s;
      /* O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR: tell them apart */
      int is_link = err == ELOOP || err == EXDEV ||
          (err == ENOTDIR && fstatat(cur, seg, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode));
      *slash = '/';
      close(cur);
      if (is_link) return refuse(x, name, "a parent directory is a symlink");
      if (err == ENOTDIR) return refuse(x, name, "a parent is not a directory");
      errno = err;
      return ag_sysfail(x->e, "member '%s': open parent", name);
    }
    *slash = '/';
    close(cur);
    cur = next;
  }
  *leaf = seg;
  return cur;
}

static int count_bytes(extract *x, const char *name, unsigned long long more,
                       unsigned long long file_total) {
  if (file_total > x->lim->max_file_bytes) {
    char why[96];
    snprintf(why, sizeof why, "larger than --max-file-bytes %llu", x->lim->max_file_bytes);
    return refuse(x, name, why);
  }
  if (more > x->lim->max_bytes - x->st->bytes) {
    char why[96];
    snprintf(why, sizeof why, "the files exceed --max-bytes %llu", x->lim->max_bytes);
    return refuse(x, name, why);
  }
  x->st->bytes += more;
  return 0;
}

static int make_file(extract *x, struct archive_entry *ae, const char *name, int pfd, const char *leaf) {
  struct timespec ts[2];
  unsigned long long done = 0;
  int fd, rc = 0;
  if (archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0 &&
      (unsigned long long)archive_entry_size(ae) > x->lim->max_file_bytes)
    return count_bytes(x, name, 0, (unsigned long long)archive_entry_size(ae));
  fd = ag_openat2(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, AG_RES_STRICT);
  if (fd < 0) {
    if (errno == EEXIST) return refuse(x, name, "a member of that name exists already");
    return ag_sysfail(x->e, "member '%s': create", name);
  }
  for (;;) {
    la_ssize_t n = archive_read_data(x->a, x->buf, sizeof x->buf);
    if (n < 0) { rc = refuse(x, name, archive_error_string(x->a) ? archive_error_string(x->a) : "bad data"); break; }
    if (n == 0) break;
    done += (unsigned long long)n;
    if ((rc = count_bytes(x, name, (unsigned long long)n, done)) < 0) break;
    if (ag_write_all(fd, x->buf, (size_t)n) < 0) { rc = ag_sysfail(x->e, "member '%s': write", name); break; }
  }
  ts[0] = ts[1] = (struct timespec){ archive_entry_mtime(ae), archive_entry_mtime_nsec(ae) };
  if (rc == 0 && (fchmod(fd, archive_entry_perm(ae) & 0777) < 0 || futimens(fd, ts) < 0))
    rc = ag_sysfail(x->e, "member '%s': set mode and time", name);
  if (close(fd) < 0 && rc == 0) rc = ag_sysfail(x->e, "member '%s': close", name);
  if (rc == 0) x->st->files++;
  return rc;
}

static int make_symlink(extract *x, struct archive_entry *ae, const char *name, int pfd, const char *leaf) {
  const char *target = archive_entry_symlink(ae);
  struct timespec ts[2];
  if (!target || !*target) return refuse(x, name, "symlink without a target");
  if (strlen(target) > AG_TAR_NAME_MAX) return refuse(x, name, "symlink target too long");
  if (symlinkat(target, pfd, leaf) < 0) {
    if (errno == EEXIST) return refuse(x, name, "a member of that name exists already");
    return ag_sysfail(x->e, "member '%s': symlink", name);
  }
  ts[0] = ts[1] = (struct timespec){ archive_entry_mtime(ae), archive_entry_mtime_nsec(ae) };
  if (utimensat(pfd, leaf, ts, AT_SYMLINK_NOFOLLOW) < 0)
    return ag_sysfail(x->e, "member '%s': set time", name);
  x->st->symlinks++;
  return 0;
}

static int make_dir(extract *x, struct archive_entry *ae, const char *name, const char *rel, int pfd, const char *leaf) {
  struct stat s;
  dirmeta *d;
  if (mkdirat(pfd, leaf, 0700) < 0) {
    if (errno != EEXIST) return ag_sysfail(x->e, "member '%s': mkdir", name);
    if (fstatat(pfd, leaf, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(s.st_mode))
      return refuse(x, name, "a member of that name exists already");
  }
  if (x->ndirs == x->capdirs) {
    size_t n = x->capdirs ? x->capdirs * 2 : 64;
    dirmeta *nd = realloc(x->dirs, n * sizeof *nd);
    if (!nd) return ag_fail(x->e, AG_INTERNAL, "out of memory");
    x->dirs = nd; x->capdirs = n;
  }
  d = &x->dirs[x->ndirs];
  if (!(d->rel = strdup(rel))) return ag_fail(x->e, AG_INTERNAL, "out of memory");
  d->mode = archive_entry_perm(ae) & 0777;
  d->mtime = (struct timespec){ archive_entry_mtime(ae), archive_entry_mtime_nsec(ae) };
  x->ndirs++;
  x->st->directories++;
  return 0;
}

static int one_member(extract *x, struct archive_entry *ae, unsigned long long index) {
  const char *name = archive_entry_pathname(ae);
  char *rel = malloc(AG_TAR_NAME_MAX + 2);
  char *leaf = NULL;
  mode_t type = archive_entry_filetype(ae);
  int rc, pfd;
  if (!rel) return ag_fail(x->e, AG_INTERNAL, "out of memory");
  if (index > x->lim->max_entries) {
    char why[96];
    snprintf(why, sizeof why, "more than --max-entries %llu members", x->lim->max_entries);
    rc = refuse(x, name ? name : "", why);
  } else if ((rc = check_name(x, name, rel)) != 0) {
    if (rc == 1) rc = (type == AE_IFDIR) ? 0 : refuse(x, name, "names the root but is not a directory");
  } else if (archive_entry_hardlink(ae)) {
    rc = refuse(x, name, "hard links are not allowed");
  } else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    rc = refuse(x, name, "only regular files, directories and symlinks are allowed");
  } else if ((pfd = open_parent(x, name, rel, &leaf)) < 0) {
    rc = -1;
  } else {
    if (type == AE_IFREG) rc = make_file(x, ae, name, pfd, leaf);
    else if (type == AE_IFLNK) rc = make_symlink(x, ae, name, pfd, leaf);
    else rc = make_dir(x, ae, name, rel, pfd, leaf);
    close(pfd);
  }
  free(rel);
  return rc;
}

/* Deepest first: a child's time is set before its parent is touched, and
** a parent's restrictive mode comes last. */
static int finish_dirs(extract *x) {
  for (size_t i = x->ndirs; i-- > 0;) {
    struct timespec ts[2] = { x->dirs[i].mtime, x->dirs[i].mtime };
    int fd = ag_openat2(x->root, x->dirs[i].rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, AG_RES_STRICT);
    if (fd < 0) return ag_sysfail(x->e, "member '%s': reopen directory", x->dirs[i].rel);
    if (futimens(fd, ts) < 0 || fchmod(fd, x->dirs[i].mode) < 0) {
      int err = errno;
      close(fd);
      errno = err;
      return ag_sysfail(x->e, "member '%s': set mode and time", x->dirs[i].rel);
    }
    close(fd);
  }
  return 0;
}

int ag_tar_extract(int infd, int dirfd, const ag_tar_limits *lim,
                   ag_tar_stats *st, ag_err *e) {
  extract *x = calloc(1, sizeof *x);
  struct archive_entry *ae;
  unsigned long long index = 0;
  int rc = -1, r;
  memset(st, 0, sizeof *st);
  if (!x) return ag_fail(e, AG_INTERNAL, "out of memory");
  x->root = dirfd; x->lim = lim; x->st = st; x->e = e;
  if (!(x->a = archive_read_new())) { ag_fail(e, AG_INTERNAL, "out of memory"); goto done; }
  archive_read_support_filter_gzip(x->a);
  archive_read_support_format_tar(x->a);
  if (archive_read_open_fd(x->a, infd, 65536) != ARCHIVE_OK) {
    ag_fail(e, AG_INVALID, "not a gzip tar: %s", archive_error_string(x->a));
    goto done;
  }
  while ((r = archive_read_next_header(x->a, &ae)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
    if (one_member(x, ae, ++index) < 0) goto done;
  }
  if (r != ARCHIVE_EOF) {
    ag_fail(e, AG_INVALID, "bad archive after %llu members: %s", index,
            archive_error_string(x->a) ? archive_error_string(x->a) : "read error");
    goto done;
  }
  rc = finish_dirs(x);
done:
  if (x->a) archive_read_free(x->a);
  for (size_t i = 0; i < x->ndirs; i++) free(x->dirs[i].rel);
  free(x->dirs);
  free(x);
  return rc;
}
