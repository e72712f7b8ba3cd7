/*
** User-mode networking for semitrusted runs: Debian's slirp4netns,
** attached to the run's own network namespace. Every run has a network
** namespace of its own (bwrap --unshare-net), so host loopback services
** and the host's abstract unix sockets are out of reach; a semitrusted
** run additionally gets a tap device whose traffic slirp4netns relays
** through its own sockets, with --disable-host-loopback (10.0.2.2 and
** 127.0.0.1 of the host refused) and DNS at 10.0.2.3.
** Internal to the runner (runner.c, wait.c).
*/
#ifndef UX_NET_H
#define UX_NET_H

#include <stddef.h>
#include <sys/types.h>

#define UX_NET_SLIRP  "/usr/bin/slirp4netns"
#define UX_NET_RESOLV "nameserver 10.0.2.3\n"   /* slirp's DNS forwarder */

typedef struct ux_net {
  pid_t pid;                  /* slirp4netns; 0 when none */
  int pidfd;                  /* -1 when none */
  int exit_fd;                /* write end of its --exit-fd pipe */
} ux_net;

typedef struct ux_net_how {
  pid_t inner;                /* bwrap's inner process: its namespaces */
  int inner_fd;               /* its pidfd (proves the pid still is it) */
  const int *cg_fds; int n_cg;/* the run's cgroup.procs: slirp joins it */
  int drop; uid_t uid; gid_t gid;   /* run as the slot uid (as root) */
  int timeout_ms;             /* until configured */
} ux_net_how;

/* 1 when slirp4netns is installed. */
int ux_net_available(void);

/* Starts slirp4netns for the inner process's network namespace (joining
** the user namespace that owns it, found with NS_GET_USERNS: bwrap's
** --disable-userns nests the program one user namespace deeper) and waits
** until it has configured the tap device. As root it runs as the slot uid
** (with its own /dev/net/tun node, in a private mount namespace, for a
** host whose /dev/net/tun is root-only) and --enable-seccomp. 0, or -1
** with err and nothing left running. */
int ux_net_start(ux_net *n, const ux_net_how *how, char *err, size_t errlen);

/* Stops it (its exit fd, then SIGKILL after a second) and reaps it. */
void ux_net_stop(ux_net *n);

void ux_net_init(ux_net *n);

#endif
