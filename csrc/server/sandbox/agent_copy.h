/*
** The agent binary as sandboxes see it: a copy on a read-only tmpfs of
** the server's own, so that no sandbox learns the host path it was
** installed at (agent_copy.c says why and how).
*/
#ifndef UX_AGENT_COPY_H
#define UX_AGENT_COPY_H

#include <stddef.h>

/* Copies the binary open (O_PATH will do) on src to a tmpfs mounted at
** DATA/agent, in the server's private mount namespace only: an O_PATH fd
** of the copy, or -1 with why (the caller then binds src itself). */
int ux_agent_copy(int src, const char *data_dir, char *why, size_t whylen);

#endif
