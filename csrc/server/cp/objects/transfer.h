/*
** Object content over HTTP (GET / PUT /v1/storage/content) and into or
** out of a workspace (objects/import, objects/export), always streamed:
** request bodies are read in 64 KiB pieces straight into an object
** version (cp/objects/store.h), downloads are pulled from the version's fd by
** the transport (ux_reply_source, http/reply.h), and workspace transfers go
** through a pipe to the runtime's agent (file_read_fd, file_write_fd,
** checkpoint `only`), pumped by a thread while the agent call runs. No
** descriptor of the server's data directory ever reaches a sandbox, and
** no object is ever held in memory whole.
**
** Results are HTTP statuses with the message in err, for the handlers to
** answer; -1 means the client went away and there is nobody to answer.
*/
#ifndef UX_CP_OBJXFER_H
#define UX_CP_OBJXFER_H

#include <stddef.h>
#include <jansson.h>

#include "server/cp/objects/store.h"
#include "server/http/reply.h"

typedef struct ux_rt ux_rt;

/* Receives r's body (a streaming-body route) into a new version of
** bucket/key, stored for tenant: Content-Length required and at most
** max_bytes (checked before a byte is read), then reserved in the ledger
** (429 before a byte is read when the tenant's quota or the budget has no
** room), the bytes received counted against max_bytes too, sha256 (""
** none) checked. 201 with *out; 400; 429; 503 (store); 500; -1 (cut off:
** nothing was stored). */
int ux_objxfer_receive(ux_req *r, ux_objstore *os, const char *tenant, const char *bucket,
                       const char *key, const char *content_type, unsigned long long max_bytes,
                       const char *sha256, ux_obj_meta *out, char *err, size_t errlen);

/* Answers r with the content of fd (m's version; fd is taken) as a sized
** reply with Content-Type, ETag, X-Object-Version-Id and X-Content-SHA256,
** read from the file as the client takes it; a file failing mid-way cuts
** the reply (the client sees a short body). gate: a transfer slot of that
** object store, counted for `party`, that the reply holds until it is
** done (released here in every case), or NULL. 200, or -1 (nothing sent;
** fd closed). */
int ux_objxfer_send(ux_req *r, int fd, const ux_obj_meta *m, ux_objstore *gate, const char *party);

/* The two transfers through a runtime's agent that the rest are made
** of: agent_in runs req with the read end of a pipe fed from fd (closed
** here), agent_out runs req with the write end of a pipe drained into put
** (at most its max_bytes, named `limit` in err). op names the operation in
** err. 0 (with *result; for agent_out when result is not NULL), else an
** HTTP status with err; after agent_out the caller commits or aborts put. */
int ux_objxfer_agent_in(ux_rt *rt, json_t *req, int fd, const char *op, json_t **result,
                        char *err, size_t errlen);
int ux_objxfer_agent_out(ux_rt *rt, json_t *req, ux_objput *put, const char *op,
                         unsigned long long limit, json_t **result, char *err, size_t errlen);

/* Copies the content fd (closed here) into workspace file dest through
** rt's agent (file_write_fd, sha256 checked there too). 0 with *file =
** the agent's {path, bytes, sha256}; else an HTTP status with err. */
int ux_objxfer_import(ux_rt *rt, int fd, const ux_obj_meta *m, const char *dest,
                      json_t **file, char *err, size_t errlen);

/* Writes workspace file wspath (archive: the gzip tar of exactly
** `artifacts`) into put through rt's agent, at most put's max_bytes.
** 0 (the caller commits put); else an HTTP status with err (the caller
** aborts put). */
int ux_objxfer_export(ux_rt *rt, const char *wspath, int archive, ux_objput *put,
                      char *err, size_t errlen);

#endif
