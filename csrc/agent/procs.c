/*
** Counting the sandbox's own processes (procs.h).
*/
#include "agent/procs.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when pid is a zombie (or gone). */
static int dead(int dirfd, const char *name) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "%s/stat", name);
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 1;
  buf[n] = '\0';
  const char *paren = strrchr(buf, ')');      /* the name may hold anything */
  return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

long ag_procs_count(const pid_t *own, size_t n) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  long count = 0;
  struct dirent *de;
  pid_t self = getpid(), parent = getppid();
  while ((de = readdir(d))) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 1 || pid == self || pid == parent) continue;
    int mine = 0;
    for (size_t i = 0; i < n && !mine; i++) mine = own[i] == pid;
    if (!mine && !dead(dirfd(d), de->d_name)) count++;
  }
  closedir(d);
  return count;
}
