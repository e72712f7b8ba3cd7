/*
** Object content over HTTP (cp/objects/transfer.h): PUT bodies read piece by piece
** into an object version (the 64 KiB buffer lives on the handler thread's
** stack), downloads pulled from the version's fd by the transport as the
** client takes them (ux_reply_source: one small buffer, no thread). Memory
** stays flat whatever the object's size and however slow the client.
*/
#include "server/cp/objects/transfer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/cp.h"
#include "server/http/stream.h"
#include "server/store/ledger.h"
#include "server/mem.h"

#define PIECE 65536

/* The status and text of a refused or failed version. */
static int put_status(int rc, unsigned long long max, const char *tenant, char *err, size_t errlen) {
  switch (rc) {
  case UX_OBJ_OK: return 201;
  case UX_OBJ_EQUOTA: ux_cp_storage_text(UX_LEDGER_QUOTA, tenant, err, errlen); return 429;
  case UX_OBJ_EBUDGET: ux_cp_storage_text(UX_LEDGER_BUDGET, tenant, err, errlen); return 429;
  case UX_OBJ_ETOOBIG: snprintf(err, errlen, "object is larger than max_bytes (%llu)", max); return 400;
  case UX_OBJ_ESHA: snprintf(err, errlen, "sha256 does not match the uploaded content; nothing was stored"); return 400;
  case UX_OBJ_ESTORE: snprintf(err, errlen, "control plane store unavailable: cannot record the object"); return 503;
  default: snprintf(err, errlen, "the object could not be stored"); return 500;
  }
}

int ux_objxfer_receive(ux_req *r, ux_objstore *os, const char *tenant, const char *bucket,
                       const char *key, const char *content_type, unsigned long long max_bytes,
                       const char *sha256, ux_obj_meta *out, char *err, size_t errlen) {
  char buf[PIECE], party[UX_LEDGER_PARTY_MAX];
  ux_objput *p;
  if (r->content_length < 0) {
    snprintf(err, errlen, "Content-Length is required");
    return 400;
  }
  if ((unsigned long long)r->content_length > max_bytes) {
    snprintf(err, errlen, "Content-Length %lld exceeds max_bytes (%llu)", r->content_length, max_bytes);
    return 400;
  }
  ux_ledger_tenant(party, sizeof party, tenant);
  int rc = ux_objput_begin(os, party, bucket, key, content_type, max_bytes,
                           (unsigned long long)r->content_length, sha256, &p);
  if (rc != UX_OBJ_OK) return put_status(rc, max_bytes, tenant, err, errlen);
  for (;;) {
    ssize_t n = ux_req_read_body(r, buf, sizeof buf);
    if (n < 0) {
      ux_objput_abort(p);
      if (!r->body_overflow) return -1;           /* cut off: nothing stored */
      return put_status(UX_OBJ_ETOOBIG, max_bytes, tenant, err, errlen);
    }
    if (n == 0) break;
    if ((rc = ux_objput_write(p, buf, (size_t)n)) != UX_OBJ_OK) {
      ux_objput_abort(p);
      return put_status(rc, max_bytes, tenant, err, errlen);
    }
  }
  return put_status(ux_objput_commit(p, out), max_bytes, tenant, err, errlen);
}

/* A download, pulled from the version's file as the client takes it. */
typedef struct file_src {
  int fd;
  ux_objstore *gate;          /* its transfer slot, or NULL */
  char party[64];             /* whose share of the gate the slot is */
  char version[33];
} file_src;

static ssize_t file_read(void *ctx, unsigned long long pos, char *buf, size_t max) {
  file_src *f = ctx;
  ssize_t n;
  do n = pread(f->fd, buf, max, (off_t)pos); while (n < 0 && errno == EINTR);
  if (n <= 0) fprintf(stderr, "unsandboxd: objects: reading version %s: %s\n", f->version,
                      n < 0 ? strerror(errno) : "shorter than recorded");
  return n > 0 ? n : -1;
}

static void file_free(void *ctx) {
  file_src *f = ctx;
  close(f->fd);
  if (f->gate) ux_objstore_transfer_end(f->gate, f->party);
  free(f);
}

int ux_objxfer_send(ux_req *r, int fd, const ux_obj_meta *m, ux_objstore *gate, const char *party) {
  char etag[40];
  snprintf(etag, sizeof etag, "\"%s\"", m->etag);
  file_src *f = ux_xcalloc(1, sizeof *f);
  *f = (file_src){ fd, gate, "", "" };
  snprintf(f->party, sizeof f->party, "%s", party ? party : "");
  snprintf(f->version, sizeof f->version, "%s", m->version_id);
  if (ux_reply_header(r, "ETag", etag) != 0 || ux_reply_header(r, "X-Object-Version-Id", m->version_id) != 0 ||
      ux_reply_header(r, "X-Content-SHA256", m->sha256) != 0) {
    file_free(f);
    return -1;
  }
  return ux_reply_source(r, 200, m->content_type, m->bytes, file_read, file_free, f) == 0 ? 200 : -1;
}
