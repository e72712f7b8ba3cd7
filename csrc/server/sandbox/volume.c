/*
** Volumes (see volume.h). Mount work is serialised by one mutex: mounts
** are rare (a resource's creation, its first use after a restart, a
** restore, a deletion) and the checks around them ("is DIR/work mounted
** yet?") must not race.
**
** Loop devices are attached with LOOP_CONFIGURE and LO_FLAGS_AUTOCLEAR,
** so a device frees itself when its file system is unmounted, also a
** lazily detached one once its last user is gone: nothing to track.
** mkfs.ext4 is the only program spawned; it gets a fixed PATH and no
** other environment.
*/
#include "server/sandbox/volume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/fsutil.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/tree.h"
#include "server/mem.h"

#define IMAGE       "disk.img"
#define NEXT_IMAGE  "next.img"
#define MKFS        "/usr/sbin/mkfs.ext4"
#define MKFS_MS     30000

static struct {
  pthread_mutex_t lock;
  int loop;                       /* 1: ext4 images; 0: plain directories */
  int private_ns;                 /* 1: our mounts are the server's own */
  unsigned long long disk;
} vol = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

static int remove_volume(const char *dir);

const char *ux_volume_mode(void) { return vol.loop ? "loop" : "plain"; }
unsigned long long ux_volume_disk_bytes(void) { return vol.disk; }
unsigned long long ux_volume_charge(void) { return vol.loop ? vol.disk : 0; }

static int errf(char *err, size_t errlen, const char *what, const char *path) {
  int e = errno;
  snprintf(err, errlen, "%s %.200s: %s", what, path, strerror(e));
  errno = e;
  return -1;
}

/* ---------------------------------------------------------------------
** Images: make, attach, mount
** ------------------------------------------------------------------- */

/* Runs mkfs.ext4 on the image; its stderr becomes err on failure. */
static int mkfs(const char *image, char *err, size_t errlen) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return errf(err, errlen, "cannot make a pipe for", MKFS);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  const char *const argv[] = { "mkfs.ext4", "-q", "-F", "-m", "0", "-L", "unsandbox",
    "-E", "root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1,nodiscard",
    image, NULL };
  const char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
  pid_t pid;
  int rc = posix_spawn(&pid, MKFS, &fa, NULL, (char *const *)argv, (char *const *)envp);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    errno = rc;
    return errf(err, errlen, "cannot run", MKFS);
  }
  char msg[256] = "";
  size_t got = 0;
  ssize_t n;
  while (got < sizeof msg - 1 &&
         (n = read(pipefd[0], msg + got, sizeof msg - 1 - got)) > 0) got += (size_t)n;
  msg[got] = '\0';
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  char *nl = strchr(msg, '\n');
  if (nl) *nl = '\0';
  snprintf(err, errlen, "mkfs.ext4 failed (status %d): %s", status, msg);
  return -1;
}

/* A loop device backed by img_fd, auto-cleared when unmounted: its fd
** (keep it open until mounted), with the device path in dev. */
static int loop_attach(int img_fd, char *dev, size_t devlen) {
  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) return -1;
  int fd = -1;
  for (int tries = 0; tries < 64 && fd < 0; tries++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) break;
    snprintf(dev, devlen, "/dev/loop%d", n);
    int lfd = open(dev, O_RDWR | O_CLOEXEC);
    if (lfd < 0 && errno == ENOENT &&              /* no devtmpfs: make the node */
        mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned)n)) == 0)
      lfd = open(dev, O_RDWR | O_CLOEXEC);
    if (lfd < 0) break;
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (unsigned)img_fd;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) { fd = lfd; break; }
    int e = errno;
    close(lfd);
    if (e != EBUSY) { errno = e; break; }          /* EBUSY: another process won it */
  }
  int e = errno;
  close(ctl);
  errno = e;
  return fd;
}

/* Mounts image at target (an existing directory). */
static int mount_image(const char *image, const char *target, char *err, size_t errlen) {
  int img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (img < 0) return errf(err, errlen, "cannot open", image);
  char dev[64];
  int lfd = loop_attach(img, dev, sizeof dev);
  close(img);
  if (lfd < 0) return errf(err, errlen, "no loop device for", image);
  int rc = mount(dev, target, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro");
  int e = errno;
  close(lfd);                     /* autoclear: the mount now holds the device */
  errno = e;
  return rc == 0 ? 0 : errf(err, errlen, "cannot mount", image);
}

/* 1 when path is the root of a mount other than its parent's. */
static int is_mounted(const char *path) {
  struct stat a, b;
  char parent[4200];
  if (ux_path(parent, sizeof parent, "%s/..", path) < 0) return 0;
  return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* A fresh, mounted, empty ext4 volume: image at dir/img_name, mounted on
** dir/mnt_name (created). The root is 0700 with no lost+found. */
static int make_volume(const char *dir, const char *img_name, const char *mnt_name,
                       char *err, size_t errlen) {
  char image[4200], mnt[4200];
  if (ux_path(image, sizeof image, "%s/%s", dir, img_name) < 0 ||
      ux_path(mnt, sizeof mnt, "%s/%s", dir, mnt_name) < 0)
    return errf(err, errlen, "path too long:", dir);
  int fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errf(err, errlen, "cannot create", image);
  int rc = ftruncate(fd, (off_t)vol.disk);
  close(fd);
  if (rc != 0) { errf(err, errlen, "cannot size", image); goto fail; }
  if (mkfs(image, err, errlen) != 0) goto fail;
  if (mkdir(mnt, 0700) != 0 && errno != EEXIST) { errf(err, errlen, "cannot create", mnt); goto fail; }
  if (mount_image(image, mnt, err, errlen) != 0) goto fail;
  int root = open(mnt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) { errf(err, errlen, "cannot open", mnt); goto fail_mounted; }
  unlinkat(root, "lost+found", AT_REMOVEDIR);     /* the sandbox's tree starts empty */
  rc = fchmod(root, 0700);
  close(root);
  if (rc == 0) return 0;
  errf(err, errlen, "cannot set the mode of", mnt);
fail_mounted:
  umount2(mnt, MNT_DETACH);
fail:
  unlink(image);
  rmdir(mnt);
  return -1;
}

/* ---------------------------------------------------------------------
** Start-up
** ------------------------------------------------------------------- */

/* Makes, mounts and removes one volume: proves the whole chain works. */
static int probe(const char *data_dir, char *why, size_t whylen) {
  char dir[4200];
  if (ux_path(dir, sizeof dir, "%s/tmp/volume-probe", data_dir) < 0) return -1;
  remove_volume(dir);                              /* a probe left by a crash */
  if (mkdir(dir, 0700) != 0) {
    snprintf(why, whylen, "cannot create %.200s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = make_volume(dir, IMAGE, "work", why, whylen);
  remove_volume(dir);
  return rc;
}

/* The data directory as a mount of its own (a bind onto itself, in the
** private namespace): the sandboxes' mount namespace is made without it,
** and with it every volume and scratch volume below, in one call
** (mounts.c). Without it they would be detached one by one; it works,
** only slower. */
static void own_mount(const char *data_dir) {
  if (mount(data_dir, data_dir, NULL, MS_BIND, NULL) != 0)
    fprintf(stderr, "unsandboxd: cannot bind %s onto itself (%s): sandboxes start a little "
            "slower\n", data_dir, strerror(errno));
}

int ux_volume_init(const char *data_dir, unsigned long long disk_bytes, char *desc, size_t desclen,
                   char *err, size_t errlen) {
  if (disk_bytes < (16ull << 20)) {
    snprintf(err, errlen, "the disk size must be at least 16 MiB");
    return -1;
  }
  vol.disk = disk_bytes;
  char why[300] = "";
  if (geteuid() != 0) snprintf(why, sizeof why, "not running as root");
  else if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    snprintf(why, sizeof why, "no private mount namespace: %s", strerror(errno));
  else {
    vol.private_ns = 1;
    own_mount(data_dir);
    if (access(MKFS, X_OK) != 0)
      snprintf(why, sizeof why, MKFS " not found (apt-get install e2fsprogs)");
    else if (probe(data_dir, why, sizeof why) == 0)
      vol.loop = 1;
  }
  if (vol.loop)
    snprintf(desc, desclen, "disk: ext4 volumes of %llu MiB", vol.disk >> 20);
  else
    snprintf(desc, desclen, "disk: plain directories, unbounded (%s)", why);
  return 0;
}

int ux_volume_private_ns(void) { return vol.private_ns; }

/* ---------------------------------------------------------------------
** Persistent volumes
** ------------------------------------------------------------------- */

int ux_volume_create(const char *dir, char *err, size_t errlen) {
  if (mkdir(dir, 0700) != 0) return errf(err, errlen, "cannot create", dir);
  int rc = 0;
  if (!vol.loop) {
    char work[4200];
    if (ux_path(work, sizeof work, "%s/work", dir) < 0 || mkdir(work, 0700) != 0)
      rc = errf(err, errlen, "cannot create the work directory in", dir);
  } else {
    pthread_mutex_lock(&vol.lock);
    rc = make_volume(dir, IMAGE, "work", err, errlen);
    pthread_mutex_unlock(&vol.lock);
  }
  if (rc != 0) {
    int e = errno;
    rmdir(dir);
    errno = e == EEXIST ? EIO : e;               /* EEXIST says only: dir was there */
  }
  return rc;
}

/* ---------------------------------------------------------------------
** Uses (see volume.h). One entry per volume that has uses or is being
** destroyed or swapped, in a list under vol.lock; vol.changed wakes
** whoever waits for a state change or for the last use to end.
** ------------------------------------------------------------------- */

enum { V_OPEN, V_CLOSING, V_SWAPPING };

typedef struct use {
  char *dir;
  int users, state;
  struct use *next;
} use;

static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static use *uses;

static use *find_use(const char *dir, int create) {
  for (use *u = uses; u; u = u->next)
    if (!strcmp(u->dir, dir)) return u;
  if (!create) return NULL;
  use *u = ux_xcalloc(1, sizeof *u);
  u->dir = ux_xstrdup(dir);
  u->next = uses;
  uses = u;
  return u;
}

static void forget_use(use *gone) {
  for (use **p = &uses; *p; p = &(*p)->next)
    if (*p == gone) { *p = gone->next; free(gone->dir); free(gone); return; }
}

int ux_volume_acquire(const char *dir, char *err, size_t errlen) {
  char work[4200], image[4200];
  if (ux_path(work, sizeof work, "%s/work", dir) < 0 ||
      ux_path(image, sizeof image, "%s/" IMAGE, dir) < 0)
    return errf(err, errlen, "path too long:", dir);
  pthread_mutex_lock(&vol.lock);
  use *u;
  while ((u = find_use(dir, 1)) && u->state == V_SWAPPING)
    pthread_cond_wait(&changed, &vol.lock);
  if (!u || u->state == V_CLOSING) {
    pthread_mutex_unlock(&vol.lock);
    errno = u ? ENOENT : ENOMEM;
    return errf(err, errlen, u ? "the volume is being removed:" : "out of memory for", dir);
  }
  u->users++;
  int rc = 0;
  if (vol.loop && !is_mounted(work) && access(image, F_OK) == 0)
    rc = mount_image(image, work, err, errlen);
  pthread_mutex_unlock(&vol.lock);
  int fd = rc == 0 ? open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (fd < 0) {
    if (rc == 0) errf(err, errlen, "no volume at", dir);
    ux_volume_release(dir);
  }
  return fd;
}

void ux_volume_release(const char *dir) {
  pthread_mutex_lock(&vol.lock);
  use *u = find_use(dir, 0);
  if (u && --u->users <= 0) {
    u->users = 0;
    if (u->state == V_OPEN) forget_use(u);
    pthread_cond_broadcast(&changed);
  }
  pthread_mutex_unlock(&vol.lock);
}

/* Puts u into `state` (refusing a volume already closing) and kills the
** volume's runs until no use is left, for at most QUIESCE_MS. 0 when
** quiet; -1 when the volume is closing already; -2 when uses remain. */
#define QUIESCE_MS 10000
static int quiesce(const char *dir, int state) {
  char work[4200];
  if (ux_path(work, sizeof work, "%s/work", dir) < 0) return -1;
  pthread_mutex_lock(&vol.lock);
  use *u = find_use(dir, 1);
  if (!u || u->state == V_CLOSING) { pthread_mutex_unlock(&vol.lock); return -1; }
  u->state = state;
  pthread_mutex_unlock(&vol.lock);
  int root = open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  long long end = ux_now_ms() + QUIESCE_MS;
  int users = 1;
  while (users > 0 && ux_now_ms() < end) {
    if (root >= 0) ux_runner_kill_workdir(root, 1000);
    pthread_mutex_lock(&vol.lock);
    if ((users = u->users) > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100 * 1000000L;
      if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
      pthread_cond_timedwait(&changed, &vol.lock, &ts);
      users = u->users;
    }
    pthread_mutex_unlock(&vol.lock);
  }
  if (root >= 0) close(root);
  if (users > 0) fprintf(stderr, "unsandboxd: %d use(s) of %s outlived its quiescing\n", users, dir);
  return users > 0 ? -2 : 0;
}

/* Unmounts dir/name if mounted, then removes it: empty when it was a
** mount point, else (plain mode, or a crash) by the fd-only remover. */
static int remove_mount_dir(int dfd, const char *dir, const char *name) {
  char path[4200];
  if (ux_path(path, sizeof path, "%s/%s", dir, name) < 0) return -1;
  while (umount2(path, MNT_DETACH) == 0) {}       /* stacked mounts, if any */
  return ux_tree_remove(dfd, name);
}

/* Removes DIR and everything in it; the caller holds vol.lock. */
static int remove_volume(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return errno == ENOENT ? 0 : -1;
  int rc = remove_mount_dir(dfd, dir, "work") | remove_mount_dir(dfd, dir, "next");
  /* what is left is the server's own: images, logs */
  DIR *d = fdopendir(dfd);
  if (!d) { close(dfd); return -1; }
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        unlinkat(dirfd(d), e->d_name, 0) != 0 && ux_tree_remove(dirfd(d), e->d_name) != 0)
      rc = -1;
  closedir(d);
  if (rmdir(dir) != 0) rc = -1;
  if (rc != 0) fprintf(stderr, "unsandboxd: could not remove all of %s\n", dir);
  return rc;
}

int ux_volume_destroy(const char *dir) {
  if (access(dir, F_OK) != 0) return 0;
  if (quiesce(dir, V_CLOSING) == -1) return 0;     /* another destroy is at it */
  pthread_mutex_lock(&vol.lock);
  int rc = remove_volume(dir);
  use *u = find_use(dir, 0);
  if (u) forget_use(u);
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&vol.lock);
  return rc;
}

/* DIR/next: a fresh volume (plain mode: a directory). */
static int make_next(const char *dir, char *err, size_t errlen) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return errf(err, errlen, "cannot open", dir);
  remove_mount_dir(dfd, dir, "next");               /* left by a crash */
  unlinkat(dfd, NEXT_IMAGE, 0);
  int rc = 0;
  if (vol.loop) rc = make_volume(dir, NEXT_IMAGE, "next", err, errlen);
  else if (mkdirat(dfd, "next", 0700) != 0) rc = errf(err, errlen, "cannot create next in", dir);
  close(dfd);
  return rc;
}

void ux_volume_tidy(const char *dir) {
  pthread_mutex_lock(&vol.lock);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd >= 0) {
    remove_mount_dir(dfd, dir, "next");
    unlinkat(dfd, NEXT_IMAGE, 0);
    close(dfd);
  }
  pthread_mutex_unlock(&vol.lock);
}

/* next takes work's place: the old tree is unmounted (plain mode:
** exchanged, then removed by fd), the new one moved onto DIR/work. */
static int commit_next(const char *dir, char *err, size_t errlen) {
  char work[4200], next[4200], image[4200], next_image[4200];
  if (ux_path(work, sizeof work, "%s/work", dir) < 0 || ux_path(next, sizeof next, "%s/next", dir) < 0 ||
      ux_path(image, sizeof image, "%s/" IMAGE, dir) < 0 ||
      ux_path(next_image, sizeof next_image, "%s/" NEXT_IMAGE, dir) < 0)
    return errf(err, errlen, "path too long:", dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return errf(err, errlen, "cannot open", dir);
  int rc = 0;
  if (vol.loop) {
    while (umount2(work, MNT_DETACH) == 0) {}
    if (mount(next, work, NULL, MS_MOVE, NULL) != 0) rc = errf(err, errlen, "cannot move", next);
    else if (rename(next_image, image) != 0) rc = errf(err, errlen, "cannot rename", next_image);
    else rmdir(next);
  } else if (renameat2(dfd, "next", dfd, "work", RENAME_EXCHANGE) != 0) {
    rc = errf(err, errlen, "cannot swap in", next);
  } else {
    ux_tree_remove(dfd, "next");                   /* the old tree */
  }
  close(dfd);
  return rc;
}

int ux_volume_swap_begin(const char *dir, char *err, size_t errlen) {
  int q = quiesce(dir, V_SWAPPING);
  if (q == -1) { errno = ENOENT; return errf(err, errlen, "the volume is being removed:", dir); }
  int rc = -1;
  pthread_mutex_lock(&vol.lock);
  if (q == 0) rc = make_next(dir, err, errlen);
  else snprintf(err, errlen, "the runs of %.200s did not end", dir);
  pthread_mutex_unlock(&vol.lock);
  if (rc != 0) ux_volume_swap_end(dir, 0, NULL, 0);
  return rc;
}

int ux_volume_swap_end(const char *dir, int commit, char *err, size_t errlen) {
  int rc = 0;
  pthread_mutex_lock(&vol.lock);
  if (commit) rc = commit_next(dir, err, errlen);
  if (!commit || rc != 0) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
      remove_mount_dir(dfd, dir, "next");
      unlinkat(dfd, NEXT_IMAGE, 0);
      close(dfd);
    }
  }
  use *u = find_use(dir, 0);
  if (u && u->state == V_SWAPPING) {
    u->state = V_OPEN;
    if (u->users == 0) forget_use(u);
  }
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&vol.lock);
  return rc;
}

/* ---------------------------------------------------------------------
** Scratch volumes
** ------------------------------------------------------------------- */

int ux_volume_runs_dir(const char *data_dir, char *out, size_t outlen) {
  if (ux_path(out, outlen, "%s/tmp/run", data_dir) < 0) { errno = ENAMETOOLONG; return -1; }
  if (ux_mkdir_p(out, 0700) < 0) return -1;
  /* only empty directories live here (each a mount point): 1024 of them
  ** at most, in a few pages */
  if (geteuid() == 0 && !is_mounted(out) &&
      mount("unsandbox-runs", out, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=1m,nr_inodes=1024,mode=0700") != 0)
    fprintf(stderr, "unsandboxd: cannot mount a tmpfs on %s (%s): run directories stay on "
            "disk\n", out, strerror(errno));
  return 0;
}

int ux_scratch_mount(const char *path) {
  if (geteuid() != 0) return 0;                   /* plain directory */
  char opts[64];
  snprintf(opts, sizeof opts, "size=%llu,mode=0700", vol.disk ? vol.disk : 256ull << 20);
  return mount("unsandbox-run", path, "tmpfs", MS_NOSUID | MS_NODEV, opts);
}

int ux_scratch_unmount(const char *path) {
  if (geteuid() != 0) return 0;
  return umount2(path, MNT_DETACH);
}
