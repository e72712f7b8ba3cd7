/*
** Unit tests of the object store (cp/objects/store.h) on a real SQLite store
** and real files in a temporary data directory: round trips with
** versions, hashes and delete markers; what refused or aborted uploads
** leave (nothing); leftovers of a crash; parallel puts of one key (every
** version kept, ordinals 1..N); the jti ledger under parallel burns; the
** transfer gate; a broken store.
*/
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "server/cp/objects/store.h"
#include "server/fsutil.h"
#include "server/store/db.h"
#include "tests/tap.h"

static char data[256], err[256];
static ux_store *st;
static ux_objstore *os;

#define B "agent-data"

static int count_files(const char *sub) {
  char path[512];
  snprintf(path, sizeof path, "%s/objects/%s", data, sub);
  DIR *d = opendir(path);
  int n = 0;
  struct dirent *e;
  if (!d) return -1;
  while ((e = readdir(d))) if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static int put(const char *key, const char *content, size_t len, unsigned long long max,
               const char *sha, ux_obj_meta *m) {
  ux_objput *p;
  int rc = ux_objput_begin(os, "tenant/t", B, key, "text/plain", max, 0, sha, &p);
  if (rc) return rc;
  rc = ux_objput_write(p, content, len);
  if (rc) { ux_objput_abort(p); return rc; }
  return ux_objput_commit(p, m);
}

/* The whole content of key's latest version, malloc'd (NULL if none). */
static char *read_all(const char *key, size_t *len) {
  int fd;
  ux_obj_meta m;
  if (ux_objstore_open_read(os, B, key, &fd, &m) != UX_OBJ_OK) return NULL;
  char *buf = malloc(m.bytes + 1);
  ssize_t n = buf ? read(fd, buf, m.bytes + 1) : -1;
  close(fd);
  if (n != (ssize_t)m.bytes) { free(buf); return NULL; }
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

static void round_trip(void) {
  ux_obj_meta m, s;
  ok(put("k/hello", "hello", 5, 100, NULL, &m) == UX_OBJ_OK, "put hello");
  is_str(m.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "sha256 of hello");
  is_str(m.etag, "5d41402abc4b2a76b9719d911017c592", "etag = MD5 of hello");
  ok(m.ordinal == 1 && m.bytes == 5 && m.is_latest && !m.delete_marker, "first version, 5 bytes");
  ok(strlen(m.version_id) == 32, "version id of 32 hex");
  ok(ux_objstore_stat(os, B, "k/hello", &s) == UX_OBJ_OK && !strcmp(s.version_id, m.version_id) &&
     !strcmp(s.content_type, "text/plain") && s.last_modified >= ux_now() - 5, "stat finds it");
  size_t len;
  char *got = read_all("k/hello", &len);
  ok(got && len == 5 && !memcmp(got, "hello", 5), "content reads back");
  free(got);
  ux_obj_meta m2;
  ok(put("k/hello", "world!", 6, 100,
         "711e9609339e92b03ddc0a211827dba421f38f9ed8b9d806e1ffdd8c15ffa03d", &m2) == UX_OBJ_OK,
     "second version with the right sha256");
  ok(m2.ordinal == 2 && strcmp(m2.version_id, m.version_id) != 0, "ordinal 2, new version id");
  got = read_all("k/hello", &len);
  ok(got && len == 6 && !memcmp(got, "world!", 6), "reads the latest");
  free(got);
  ux_obj_meta *v;
  size_t n;
  ok(ux_objstore_versions(os, B, "k/hello", &v, &n) == UX_OBJ_OK && n == 2, "two versions");
  ok(n == 2 && v[0].ordinal == 2 && v[0].is_latest && v[1].ordinal == 1 && !v[1].is_latest,
     "newest first, only it is latest");
  free(v);
  ok(ux_objstore_stat(os, B, "k/none", &s) == UX_OBJ_ENOENT, "stat of a missing key");
  ok(ux_objstore_versions(os, B, "k/none", &v, &n) == UX_OBJ_ENOENT, "versions of a missing key");
  ok(ux_objstore_stat(os, "user-uploads", "k/hello", &s) == UX_OBJ_ENOENT, "buckets are apart");
  ok(put("k/empty", "", 0, 1, NULL, &m) == UX_OBJ_OK && m.bytes == 0, "an empty object");
  got = read_all("k/empty", &len);
  ok(got && len == 0, "reads back empty");
  free(got);
}

static void refused_uploads(void) {
  int blobs = count_files("blobs");
  ux_obj_meta m;
  ok(put("k/big", "12345", 5, 4, NULL, &m) == UX_OBJ_ETOOBIG, "5 bytes over max_bytes 4");
  ok(put("k/big", "1234", 4, 4, NULL, &m) == UX_OBJ_OK, "exactly max_bytes is fine");
  blobs++;
  ux_objput *p;
  ux_objput_begin(os, "tenant/t", B, "k/big2", NULL, 10, 0, NULL, &p);
  ok(ux_objput_write(p, "123456", 6) == UX_OBJ_OK && ux_objput_write(p, "12345", 5) == UX_OBJ_ETOOBIG &&
     ux_objput_write(p, "1", 1) == UX_OBJ_ETOOBIG, "the limit counts across writes and sticks");
  ok(ux_objput_commit(p, &m) == UX_OBJ_ETOOBIG, "commit after an overflow is refused");
  ok(put("k/sha", "hello", 5, 100, "0000000000000000000000000000000000000000000000000000000000000000",
         &m) == UX_OBJ_ESHA, "a sha256 mismatch is refused");
  ux_objput_begin(os, "tenant/t", B, "k/cut", NULL, 100, 0, NULL, &p);
  ux_objput_write(p, "partial", 7);
  ok(count_files("tmp") == 1, "an upload in progress is a temporary file");
  ux_objput_abort(p);
  ux_obj_meta s;
  ok(ux_objstore_stat(os, B, "k/big2", &s) == UX_OBJ_ENOENT &&
     ux_objstore_stat(os, B, "k/sha", &s) == UX_OBJ_ENOENT &&
     ux_objstore_stat(os, B, "k/cut", &s) == UX_OBJ_ENOENT, "no version of any refused upload");
  ok(count_files("tmp") == 0, "no temporary file left");
  ok(count_files("blobs") == blobs, "no content file left");
}

static void deletes(void) {
  ux_obj_meta m, s;
  put("d/x", "one", 3, 10, NULL, &m);
  int blobs = count_files("blobs");
  ok(ux_objstore_delete(os, B, "d/x", 0) == UX_OBJ_OK, "delete adds a marker");
  ok(ux_objstore_stat(os, B, "d/x", &s) == UX_OBJ_ENOENT, "a deleted object is not found");
  int fd;
  ok(ux_objstore_open_read(os, B, "d/x", &fd, &s) == UX_OBJ_ENOENT, "nor readable");
  ok(ux_objstore_delete(os, B, "d/x", 0) == UX_OBJ_ENOENT, "deleting it again: not found");
  ux_obj_meta *v;
  size_t n;
  ok(ux_objstore_versions(os, B, "d/x", &v, &n) == UX_OBJ_OK && n == 2 && v[0].delete_marker &&
     v[0].is_latest && v[0].ordinal == 2 && !v[1].delete_marker, "history: marker on top of the version");
  free(v);
  ok(count_files("blobs") == blobs, "the history keeps its content");
  ok(put("d/x", "two", 3, 10, NULL, &m) == UX_OBJ_OK && m.ordinal == 3, "a put after a delete: ordinal 3");
  ok(ux_objstore_delete(os, B, "d/x", 1) == UX_OBJ_OK, "purge");
  ok(ux_objstore_versions(os, B, "d/x", &v, &n) == UX_OBJ_ENOENT, "no version left");
  ok(count_files("blobs") == blobs - 1, "the content files are gone");
  ok(ux_objstore_delete(os, B, "d/x", 1) == UX_OBJ_ENOENT, "purging nothing: not found");
  ok(ux_objstore_delete(os, B, "d/never", 0) == UX_OBJ_ENOENT, "deleting a missing key: not found");
  put("d/y", "y", 1, 10, NULL, &m);
  ux_objstore_delete(os, B, "d/y", 0);
  ok(ux_objstore_delete(os, B, "d/y", 1) == UX_OBJ_OK, "a deleted object's history can be purged");
}

static int visit_key(void *ctx, const char *key, size_t key_len, unsigned long long bytes,
                     long long last_modified) {
  char *seen = ctx;
  size_t used = strlen(seen);
  (void)last_modified;
  snprintf(seen + used, 128 - used, "%.*s:%llu,", (int)key_len, key, bytes);
  return 0;
}

static void listing(void) {
  const char *keys[] = { "l/base", "l/base/a", "l/base/b/c", "l/basex", "l/base-", "l/bas", NULL };
  ux_obj_meta m, *v;
  size_t n;
  for (int i = 0; keys[i]; i++) put(keys[i], "x", 1, 1, NULL, &m);
  put("l/base/gone", "x", 1, 1, NULL, &m);
  ux_objstore_delete(os, B, "l/base/gone", 0);
  put("l/base/a", "xy", 2, 2, NULL, &m);
  /* deleted, then put again: live, with a delete marker below its latest */
  put("l/base/back", "x", 1, 1, NULL, &m);
  ux_objstore_delete(os, B, "l/base/back", 0);
  put("l/base/back", "xyz", 3, 3, NULL, &m);
  ok(ux_objstore_list(os, B, "l/base", 100, &v, &n) == UX_OBJ_OK && n == 4, "four live objects under l/base");
  ok(n == 4 && !strcmp(v[0].key, "l/base") && !strcmp(v[1].key, "l/base/a") && !strcmp(v[2].key, "l/base/b/c") &&
     !strcmp(v[3].key, "l/base/back"), "by key; siblings sharing the prefix and the deleted one left out");
  ok(n == 4 && v[1].bytes == 2 && v[3].bytes == 3, "the latest version is listed");
  ok(n == 4 && v[3].delete_marker == 0 && v[3].is_latest, "a key put again after its delete is its new version");
  int same = n == 4;
  for (size_t i = 0; i < n && same; i++) {
    ux_obj_meta sm;
    same = ux_objstore_stat(os, B, v[i].key, &sm) == UX_OBJ_OK && !strcmp(sm.bucket, v[i].bucket) &&
           !strcmp(sm.version_id, v[i].version_id) && !strcmp(sm.sha256, v[i].sha256) &&
           !strcmp(sm.etag, v[i].etag) && !strcmp(sm.content_type, v[i].content_type) &&
           sm.ordinal == v[i].ordinal && sm.bytes == v[i].bytes && sm.last_modified == v[i].last_modified;
  }
  ok(same, "each listed version is what a stat of its key says, field by field");
  ok(n == 4 && v[3].ordinal == 3, "the key put again is at its third ordinal (put, marker, put)");
  free(v);
  ok(ux_objstore_list(os, B, "l/base", 2, &v, &n) == UX_OBJ_OK && n == 2, "max is honoured");
  free(v);
  ok(ux_objstore_list(os, B, "l/base", 0, &v, &n) == UX_OBJ_OK && n == 0 && !v, "max 0: an empty list");
  ok(ux_objstore_list(os, B, "l/nothing", 100, &v, &n) == UX_OBJ_OK && n == 0 && !v, "empty list");
  ok(ux_objstore_list(os, "user-uploads", "l/base", 100, &v, &n) == UX_OBJ_OK && n == 0, "other bucket empty");
  char seen[128] = "";
  ok(ux_objstore_list_each(os, B, "l/base", 100, visit_key, seen) == UX_OBJ_OK &&
     !strcmp(seen, "l/base:1,l/base/a:2,l/base/b/c:1,l/base/back:3,"), "each hands the same rows, one at a time (%s)",
     seen);
  seen[0] = '\0';
  ok(ux_objstore_list_each(os, B, "l/base", 1, visit_key, seen) == UX_OBJ_OK && !strcmp(seen, "l/base:1,"),
     "each honours max");
  seen[0] = '\0';
  ok(ux_objstore_list_each(os, B, "l/base", 0, visit_key, seen) == UX_OBJ_OK && !seen[0], "each with max 0 hands nothing");
}

static void corrupt(void) {
  ux_obj_meta m, s;
  put("c/x", "content", 7, 10, NULL, &m);
  char path[512];
  snprintf(path, sizeof path, "%s/objects/blobs/%s", data, m.version_id);
  ok(truncate(path, 3) == 0, "truncate the content behind the store's back");
  int fd = -1;
  ok(ux_objstore_open_read(os, B, "c/x", &fd, &s) == UX_OBJ_EIO && fd == -1, "a size mismatch is EIO");
  unlink(path);
  ok(ux_objstore_open_read(os, B, "c/x", &fd, &s) == UX_OBJ_ENOENT, "content gone (purged meanwhile): ENOENT");
}

static void leftovers(void) {
  ux_obj_meta m;
  put("r/keep", "keep", 4, 10, NULL, &m);
  char path[512];
  snprintf(path, sizeof path, "%s/objects/tmp/up-crashed.part", data);
  FILE *f = fopen(path, "w");
  fputs("half", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/objects/blobs/0123456789abcdef0123456789abcdef", data);
  f = fopen(path, "w");
  fputs("orphan", f);
  fclose(f);
  int blobs = count_files("blobs");
  ux_objstore_close(os);
  os = ux_objstore_open(st, data, err, sizeof err);
  ok(os != NULL, "reopens (%s)", os ? "ok" : err);
  ok(count_files("tmp") == 0, "a crashed upload's temporary file is removed");
  ok(count_files("blobs") == blobs - 1 && access(path, F_OK) != 0, "a blob without a version is removed");
  size_t len;
  char *got = read_all("r/keep", &len);
  ok(got && len == 4 && !memcmp(got, "keep", 4), "committed content survives the reopen");
  free(got);
}

/* ------------------------------------------------------------------
** Parallel puts of one key
** ---------------------------------------------------------------- */

#define THREADS 8
#define PUTS 6

static int put_rc[THREADS][PUTS];

static void *putter(void *arg) {
  int t = (int)(long)arg;
  for (int i = 0; i < PUTS; i++) {
    char body[64];
    int n = snprintf(body, sizeof body, "thread %d put %d", t, i);
    put_rc[t][i] = put("p/same", body, (size_t)n, 100, NULL, NULL);
  }
  return NULL;
}

static void sha_hex(const char *s, size_t n, char out[65]) {
  unsigned char d[32];
  unsigned len;
  EVP_Digest(s, n, d, &len, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void parallel_puts(void) {
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, putter, (void *)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  int all_ok = 1;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PUTS; i++) all_ok &= put_rc[t][i] == UX_OBJ_OK;
  ok(all_ok, "every parallel put committed");
  ux_obj_meta *v;
  size_t n;
  ok(ux_objstore_versions(os, B, "p/same", &v, &n) == UX_OBJ_OK && n == THREADS * PUTS,
     "%d versions, none lost", THREADS * PUTS);
  int ordered = 1, found = 0;
  for (size_t k = 0; k < n; k++) ordered &= v[k].ordinal == (long long)(n - k);
  ok(ordered, "ordinals are exactly %zu..1, newest first", n);
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PUTS; i++) {
      char body[64], sha[65];
      int len = snprintf(body, sizeof body, "thread %d put %d", t, i);
      sha_hex(body, (size_t)len, sha);
      for (size_t k = 0; k < n; k++) if (!strcmp(v[k].sha256, sha)) { found++; break; }
    }
  ok(found == THREADS * PUTS, "every put's content is one of the versions");
  free(v);
}

/* ------------------------------------------------------------------
** The jti ledger, the gate, streaming from an fd, a broken store
** ---------------------------------------------------------------- */

static int burn_rc[THREADS];

static void *burner(void *arg) {
  int t = (int)(long)arg;
  burn_rc[t] = ux_objstore_burn(os, "feedfacefeedfacefeedfacefeedface", ux_now() + 60, ux_now());
  return NULL;
}

static void ledger(void) {
  long now = ux_now();
  ok(ux_objstore_burn(os, "0123456789abcdef0123456789abcdef", now + 60, now) == UX_OBJ_OK, "first burn wins");
  ok(ux_objstore_burn(os, "0123456789abcdef0123456789abcdef", now + 60, now) == UX_OBJ_ENOENT, "a replay loses");
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, burner, (void *)t);
  int wins = 0, losses = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    wins += burn_rc[t] == UX_OBJ_OK;
    losses += burn_rc[t] == UX_OBJ_ENOENT;
  }
  ok(wins == 1 && losses == THREADS - 1, "%d parallel burns of one jti: exactly one wins", THREADS);
  ok(ux_objstore_burn(os, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", now - 7200, now) == UX_OBJ_OK, "burn an old jti");
  ok(ux_objstore_burn(os, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", now + 60, now) == UX_OBJ_OK, "another burn prunes");
  json_t *row = ux_db_row(st, "SELECT COUNT(*) AS n FROM cp_ticket_jtis WHERE jti = ?1", "s",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  ok(json_integer_value(json_object_get(row, "n")) == 0, "a jti an hour past its expiry is forgotten");
  json_decref(row);
  row = ux_db_row(st, "SELECT COUNT(*) AS n FROM cp_ticket_jtis WHERE jti = ?1", "s",
                  "0123456789abcdef0123456789abcdef");
  ok(json_integer_value(json_object_get(row, "n")) == 1, "a live jti is kept");
  json_decref(row);
}

static void gate(void) {
  ux_objstore_set_max_transfers(os, 2, 0);
  ok(ux_objstore_transfer_begin(os, "t") == UX_OBJ_OK && ux_objstore_transfer_begin(os, "t") == UX_OBJ_OK,
     "two transfers under a cap of 2");
  ok(ux_objstore_transfer_begin(os, "u") == UX_OBJ_EBUSY, "the third is refused (queue full)");
  ok(ux_objstore_transfers(os) == 2, "two in progress");
  ux_objstore_transfer_end(os, "t");
  ok(ux_objstore_transfer_begin(os, "t") == UX_OBJ_OK, "one ends, the next fits");
  ux_objstore_transfer_end(os, "t");
  ux_objstore_transfer_end(os, "t");
  ux_objstore_transfer_end(os, "t");   /* one too many: never negative */
  ok(ux_objstore_transfers(os) == 0, "none in progress, never below zero");
  ux_objstore_set_max_transfers(os, 0, 0);
  ok(ux_objstore_transfer_begin(os, "t") == UX_OBJ_EBUSY, "cap 0 refuses everything");
  /* a party's share: 3 of 4, and the fourth stays for another party */
  ux_objstore_set_max_transfers(os, 4, 3);
  int took = 1;
  for (int i = 0; i < 3; i++) took &= ux_objstore_transfer_begin(os, "greedy") == UX_OBJ_OK;
  ok(took, "a party takes its share of 3");
  ok(ux_objstore_transfer_begin(os, "greedy") == UX_OBJ_ESHARE, "its fourth is over its share");
  ok(ux_objstore_transfer_begin(os, NULL) == UX_OBJ_OK, "another party takes the last slot");
  ok(ux_objstore_transfer_begin(os, "third") == UX_OBJ_EBUSY, "then the gate is full for everyone");
  ok(ux_objstore_transfer_begin(os, "greedy") == UX_OBJ_ESHARE, "a party at its share hears so first");
  ux_objstore_transfer_end(os, "greedy");
  ok(ux_objstore_transfer_begin(os, "third") == UX_OBJ_OK, "a slot given back is anybody's");
  ux_objstore_transfer_end(os, "third");
  ux_objstore_transfer_end(os, NULL);
  for (int i = 0; i < 2; i++) ux_objstore_transfer_end(os, "greedy");
  ok(ux_objstore_transfers(os) == 0, "all given back");
  ux_objstore_set_max_transfers(os, 1, 1);
  ok(ux_objstore_transfer_begin(os, "t") == UX_OBJ_OK, "a gate of one: its slot is anybody's");
  ok(ux_objstore_transfer_begin(os, "t") == UX_OBJ_EBUSY, "and then full, for its holder too");
  ux_objstore_transfer_end(os, "t");
  ux_objstore_set_max_transfers(os, UX_OBJ_TRANSFERS, 0);
}

typedef struct { int fd; size_t bytes; } feeder;

static void *feed(void *arg) {
  feeder *f = arg;
  char buf[4096];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)(i * 7);
  for (size_t done = 0; done < f->bytes;) {
    size_t n = f->bytes - done < sizeof buf ? f->bytes - done : sizeof buf;
    ssize_t w = write(f->fd, buf, n);
    if (w <= 0) break;        /* the reader stopped: EPIPE */
    done += (size_t)w;
  }
  close(f->fd);
  return NULL;
}

static int put_from_pipe(size_t bytes, unsigned long long max, ux_obj_meta *m) {
  int p[2];
  if (pipe(p) < 0) return -1;
  feeder f = { p[1], bytes };
  pthread_t th;
  pthread_create(&th, NULL, feed, &f);
  ux_objput *put;
  ux_objput_begin(os, "tenant/t", B, "f/piped", NULL, max, 0, NULL, &put);
  int rc = ux_objput_from_fd(put, p[0]);
  close(p[0]);
  pthread_join(th, NULL);
  if (rc != UX_OBJ_OK) { ux_objput_abort(put); return rc; }
  return ux_objput_commit(put, m);
}

static void from_fd(void) {
  signal(SIGPIPE, SIG_IGN);
  ux_obj_meta m;
  ok(put_from_pipe(3 << 20, 4 << 20, &m) == UX_OBJ_OK && m.bytes == (3u << 20), "3 MiB from a pipe");
  ok(put_from_pipe(3 << 20, 1 << 20, &m) == UX_OBJ_ETOOBIG, "over max_bytes from a pipe is refused");
  ok(count_files("tmp") == 0, "nothing left of it");
}

static void broken_store(void) {
  int blobs = count_files("blobs");
  ok(ux_db_exec(st, "PRAGMA query_only = 1", "") >= 0, "the store goes read-only");
  ux_obj_meta m;
  ok(put("b/x", "data", 4, 10, NULL, &m) == UX_OBJ_ESTORE, "a commit the store refuses: ESTORE");
  ok(ux_db_unavailable(st), "reported as a broken store, not a constraint");
  ok(count_files("blobs") == blobs && count_files("tmp") == 0, "and its content is removed");
  ok(ux_objstore_burn(os, "cccccccccccccccccccccccccccccccc", ux_now() + 9, ux_now()) == UX_OBJ_ESTORE,
     "a burn the store refuses: ESTORE, never a win");
  ok(ux_objstore_delete(os, B, "k/hello", 0) == UX_OBJ_ESTORE, "a delete the store refuses: ESTORE");
  ux_db_exec(st, "PRAGMA query_only = 0", "");
}

int main(void) {
  snprintf(data, sizeof data, "/tmp/objstore-test-XXXXXX");
  if (!mkdtemp(data)) return 1;
  st = ux_store_open(data, err, sizeof err);
  os = st ? ux_objstore_open(st, data, err, sizeof err) : NULL;
  ok(os != NULL, "store opens (%s)", os ? "ok" : err);
  if (!os) return tap_done();
  round_trip();
  refused_uploads();
  deletes();
  listing();
  corrupt();
  leftovers();
  parallel_puts();
  ledger();
  gate();
  from_fd();
  broken_store();
  ux_objstore_close(os);
  ux_store_close(st);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", data);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", data);
  return tap_done();
}
