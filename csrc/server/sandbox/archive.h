/*
** Snapshot and checkpoint archives of the trees sandboxes own. Both ways
** run inside a sandbox, as the tree's own unprivileged user, seeing only
** that tree: unsandboxd-agent walks it by descriptor and writes a gzip
** tar to an fd the server opened (archive), or reads one and refuses
** anything hostile (extract). Root only ever handles the archive file.
*/
#ifndef UX_ARCHIVE_H
#define UX_ARCHIVE_H

#include <stddef.h>

/* The agent binary (bin/unsandboxd-agent); set once at start-up, with the
** copy sandboxes bind made under data_dir (agent_copy.h). Returns 0, or -1
** with err when it is missing or does not run in a sandbox. */
int ux_archive_init(const char *agent_path, const char *data_dir, char *err, size_t errlen);
/* Its installed path, and an O_PATH fd of what sandboxes bind (or -1). */
const char *ux_archive_agent(void);
int ux_archive_agent_fd(void);

/* Writes a gzip tar of the tree whose root is root_fd (a volume in use)
** to out_fd, a regular file, at most max_out bytes of it (the kernel's
** file size limit on the agent; 0 = the sandbox default): a larger
** archive fails, the file then holding max_out bytes. Top-level names in
** `exclude` (NULL-terminated, may be NULL) are left out. The tree's other
** runs should be frozen meanwhile (runner.h) for a consistent archive.
** 0, or -1 with err. */
int ux_archive_tree(int root_fd, int out_fd, const char *const *exclude,
                    unsigned long long max_out, char *err, size_t errlen);

typedef struct ux_extract_report {
  long long files, directories, symlinks, bytes;
} ux_extract_report;

/* Unpacks the gzip tar readable on in_fd into dir, an empty directory
** (a fresh volume); a hostile or corrupt archive is refused with err
** naming the entry, and dir must then be discarded. 0 or -1. */
int ux_extract_tree(const char *dir, int in_fd, ux_extract_report *rep,
                    char *err, size_t errlen);

#endif
