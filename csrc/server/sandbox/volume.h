/*
** Volumes: where the files of a sandbox live. Sized, so sandboxed code
** can never fill the host disk, and removable without being walked, so
** root never descends into a tree a sandbox wrote just to delete it.
**
**   persistent  a sparse ext4 image DIR/disk.img, loop-mounted at
**               DIR/work while the server runs (sessions, services,
**               Control Plane workspaces);
**   scratch     a size-limited tmpfs (one execute run's directory).
**
** Deleting either is an unmount and an unlink. The server runs in a
** mount namespace of its own (ux_volume_init), so its mounts are private
** and vanish with it. Without root or loop devices, volumes fall back to
** plain directories (no disk bound; ux_volume_mode says so) and deletion
** to the descriptor-only remover of tree.c.
*/
#ifndef UX_VOLUME_H
#define UX_VOLUME_H

#include <stddef.h>

/* Called once at start-up, before any thread exists: enters a private
** mount namespace and checks that loop devices and mkfs.ext4 work.
** disk_bytes: the size of every volume. Writes a one-line description of
** the mode in force to desc. 0, or -1 with err (only for unusable
** settings). How many volumes there may be is the ledger's business
** (store/ledger.h): a volume is charged ux_volume_charge() there. */
int ux_volume_init(const char *data_dir, unsigned long long disk_bytes, char *desc, size_t desclen,
                   char *err, size_t errlen);

/* 1 when ux_volume_init entered a private mount namespace: mounts made
** by the server then stay its own. */
int ux_volume_private_ns(void);

/* "loop" (bounded ext4 images) or "plain" (directories, unbounded). */
const char *ux_volume_mode(void);
unsigned long long ux_volume_disk_bytes(void);
/* What a persistent volume takes of the disk at most: its image's size,
** or 0 for a plain directory (unbounded, so there is no size to count). */
unsigned long long ux_volume_charge(void);

/* Creates the persistent volume DIR (DIR/disk.img, DIR/work mounted,
** root 0700 and empty). 0, or -1 with err; errno EEXIST only when DIR
** existed already (nothing was made). */
int ux_volume_create(const char *dir, char *err, size_t errlen);

/*
** Uses. Every run and every request that works in a volume holds a use
** for as long as it does: ux_volume_acquire returns an O_DIRECTORY fd of
** the volume's root (mounting it first after a restart), and each
** successful call needs one ux_volume_release. While any use is held the
** volume is neither removed nor swapped, so nothing can run on, or bring
** back, a volume that was deleted. A volume being destroyed refuses new
** uses (-1, errno ENOENT); one being swapped by a restore makes them wait.
*/
int ux_volume_acquire(const char *dir, char *err, size_t errlen);
void ux_volume_release(const char *dir);

/* Refuses new uses, kills every run of the volume (runner.h) until no
** use is left (bounded: a use that outlives the bound is logged and the
** volume lazily detached anyway, so its holder keeps a private view until
** it ends), unmounts and removes DIR whole. 0, or -1 when something could
** not be removed (logged). A DIR that does not exist is fine. */
int ux_volume_destroy(const char *dir);

/*
** Restore. ux_volume_swap_begin makes new uses wait, kills the volume's
** runs until no use is left, and makes a fresh empty volume at DIR/next
** for the restored tree. ux_volume_swap_end then either puts DIR/next in
** place of the old tree (commit) or discards it, and lets uses go on.
** Both return 0, or -1 with err.
*/
int ux_volume_swap_begin(const char *dir, char *err, size_t errlen);
int ux_volume_swap_end(const char *dir, int commit, char *err, size_t errlen);

/* Removes what a restore that a crash cut short left in the volume DIR
** (its second volume, DIR/next and its image). For the start, before any
** use of DIR. */
void ux_volume_tidy(const char *dir);

/* The directory for the runner's run directories (ux_runner_set_tmpdir):
** DATA/tmp/run, made 0700, and as root a small tmpfs mounted there in the
** private namespace, so a run directory (an empty mount point for its
** scratch volume) is made and removed without a journalled inode of the
** data directory's file system each time. Writes its path to out. 0, or
** -1 (errno) when the directory cannot be made; a failed mount leaves a
** plain directory. */
int ux_volume_runs_dir(const char *data_dir, char *out, size_t outlen);

/* A scratch volume: a tmpfs of the volume size mounted on the existing
** empty directory path (mode 0700). Unmounting detaches it; its pages go
** back to the kernel once nothing holds it. 0 or -1 (errno). */
int ux_scratch_mount(const char *path);
int ux_scratch_unmount(const char *path);


#endif
