/*
** Object content over HTTP (objxfer.h): PUT bodies read piece by piece
** into an object version, downloads written from the version's fd into a
** sized stream. The 64 KiB buffer lives on the handler thread's stack;
** memory stays flat whatever the object's size.
*/
#include "server/cp/objxfer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/cp/cp.h"
#include "server/http/stream.h"
#include "server/store/ledger.h"

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

int ux_objxfer_send(ux_req *r, int fd, const ux_obj_meta *m) {
  char etag[40], buf[PIECE];
  snprintf(etag, sizeof etag, "\"%s\"", m->etag);
  ux_stream *s = NULL;
  if (ux_reply_header(r, "ETag", etag) == 0 && ux_reply_header(r, "X-Object-Version-Id", m->version_id) == 0 &&
      ux_reply_header(r, "X-Content-SHA256", m->sha256) == 0)
    s = ux_reply_stream(r, 200, m->content_type, (long long)m->bytes);
  if (!s) { close(fd); return -1; }
  unsigned long long left = m->bytes;
  while (left > 0) {
    ssize_t n = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || ux_stream_write(s, buf, (size_t)n) < 0) {
      if (n <= 0) fprintf(stderr, "unsandboxd: objects: reading version %s: %s\n", m->version_id,
                          n < 0 ? strerror(errno) : "shorter than recorded");
      ux_stream_abort(s);
      close(fd);
      return -1;
    }
    left -= (unsigned long long)n;
  }
  ux_stream_close(s);
  close(fd);
  return 200;
}
