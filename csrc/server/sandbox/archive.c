/*
** Archives made and unpacked inside a sandbox (see archive.h). Each call
** is one ordinary run of the runner: the agent binary is bound read-only
** at AGENT_IN, the tree is the run's work directory (so the run has the
** tree's slot uid, its cgroup limits and no network), and the archive
** travels through an fd the server opened: the run's stdout when
** archiving, its stdin when unpacking.
*/
#include "server/sandbox/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "server/sandbox/agent_copy.h"
#include "server/sandbox/runner.h"
#include "server/sandbox/volume.h"

#define AGENT_IN   "/.unsandbox/agent"
#define AGENT_TTL  900          /* s: the longest an archive may take */

static struct {
  char path[PATH_MAX];
  int fd;                       /* O_PATH of what sandboxes bind: the
                                   private copy, else the binary itself */
} agent = { "", -1 };

const char *ux_archive_agent(void) { return agent.path; }
int ux_archive_agent_fd(void) { return agent.fd; }

/* The last non-empty line of the agent's stderr, which says why. */
static void last_line(const char *text, size_t len, char *out, size_t outlen) {
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
  size_t start = len;
  while (start > 0 && text[start - 1] != '\n') start--;
  snprintf(out, outlen, "%.*s", (int)(len - start), text + start);
}

/* Runs the agent with argv in the tree (workdir_fd, else workdir) and
** the given stdin/stdout; stdout, when not redirected, goes to *out. */
static int run_agent(const char *const *argv, int workdir_fd, const char *workdir,
                     int in_fd, int out_fd, unsigned long long fsize, ux_run_result *res,
                     char *err, size_t errlen) {
  ux_ro_bind bind = { agent.fd, NULL, AGENT_IN };
  ux_run_spec spec;
  memset(&spec, 0, sizeof spec);
  memset(res, 0, sizeof *res);        /* the caller frees it on every path */
  if (errlen) err[0] = '\0';
  spec.argv = argv;
  spec.workdir_fd = workdir_fd;
  spec.workdir = workdir;
  spec.in_fd = in_fd;
  spec.out_fd = out_fd;
  spec.ro_binds = &bind;
  spec.n_ro_binds = 1;
  spec.ttl_s = AGENT_TTL;
  spec.vcpu = 1;
  spec.output_cap = 64 * 1024;
  spec.fsize = fsize;
  if (agent.fd < 0) {
    snprintf(err, errlen, "the agent is not set up");
    return -1;
  }
  ux_run *run = ux_run_start(&spec, err, errlen);
  if (!run) return -1;
  ux_run_wait(run, res);
  if (res->error[0]) snprintf(err, errlen, "%s", res->error);
  else if (res->timed_out) snprintf(err, errlen, "the agent took longer than %d s", AGENT_TTL);
  else if (res->cancelled) snprintf(err, errlen, "cancelled");
  else if (res->exit_code != 0) {
    last_line(res->err ? res->err : "", res->err_len, err, errlen);
    if (!err[0]) snprintf(err, errlen, "the agent exited with status %d", res->exit_code);
  } else return 0;
  return -1;
}

int ux_archive_tree(int root_fd, int out_fd, const char *const *exclude,
                    unsigned long long max_out, char *err, size_t errlen) {
  const char *argv[40] = { AGENT_IN, "archive", "/sandbox" };
  char max[32];
  size_t n = 3;
  snprintf(max, sizeof max, "%llu", ux_volume_disk_bytes() ? ux_volume_disk_bytes() : 1ull << 32);
  argv[n++] = "--max-bytes";
  argv[n++] = max;
  for (size_t i = 0; exclude && exclude[i] && n < sizeof argv / sizeof argv[0] - 3; i++) {
    argv[n++] = "--exclude";
    argv[n++] = exclude[i];
  }
  argv[n] = NULL;
  ux_run_result res;
  int rc = run_agent(argv, root_fd, NULL, 0, out_fd, max_out, &res, err, errlen);
  ux_run_result_free(&res);
  return rc;
}

int ux_extract_tree(const char *dir, int in_fd, ux_extract_report *rep,
                    char *err, size_t errlen) {
  char max[32];
  snprintf(max, sizeof max, "%llu", ux_volume_disk_bytes() ? ux_volume_disk_bytes() : 1ull << 32);
  const char *argv[] = { AGENT_IN, "extract", "/sandbox", "--max-bytes", max, NULL };
  ux_run_result res;
  memset(rep, 0, sizeof *rep);
  int rc = run_agent(argv, 0, dir, in_fd, 0, 0, &res, err, errlen);
  if (rc == 0) {
    json_t *j = json_loadb(res.out ? res.out : "", res.out_len, 0, NULL);
    if (!json_is_object(j)) {
      snprintf(err, errlen, "the agent's report is not JSON");
      rc = -1;
    } else {
      rep->files = json_integer_value(json_object_get(j, "files"));
      rep->directories = json_integer_value(json_object_get(j, "directories"));
      rep->symlinks = json_integer_value(json_object_get(j, "symlinks"));
      rep->bytes = json_integer_value(json_object_get(j, "bytes"));
    }
    json_decref(j);
  }
  ux_run_result_free(&res);
  return rc;
}

/* Proves the chain once: an archive of an empty scratch tree. */
int ux_archive_init(const char *path, const char *data_dir, char *err, size_t errlen) {
  struct stat st;
  char why[300] = "";
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXOTH)) {
    snprintf(err, errlen, "the agent %.300s is missing or not executable by everyone (make builds it)",
             path);
    if (fd >= 0) close(fd);
    return -1;
  }
  snprintf(agent.path, sizeof agent.path, "%s", path);
  int copy = ux_agent_copy(fd, data_dir, why, sizeof why);
  if (copy >= 0) {
    close(fd);
    fd = copy;
  } else {
    fprintf(stderr, "unsandboxd: sandboxes see the agent's host path: %s\n", why);
  }
  agent.fd = fd;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const char *argv[] = { AGENT_IN, "archive", "/sandbox", NULL };
  ux_run_result res;
  int rc = devnull >= 0 ? run_agent(argv, 0, NULL, 0, devnull, 0, &res, why, sizeof why) : -1;
  if (devnull >= 0) { ux_run_result_free(&res); close(devnull); }
  if (rc != 0) snprintf(err, errlen, "the agent does not run in a sandbox: %s", why);
  return rc;
}
