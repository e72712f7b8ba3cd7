/*
** Audit rows (see cp/audit.h). The de-duplication of denials is a small
** in-memory table of recent (actor, action, target) keys; losing it on a
** restart only means one more row. Denials of distinct targets are not
** de-duplicated, so the table keeps its newest --cp-audit-rows rows
** (cp/tables/audit.h), and the log never grows past it.
*/
#include "server/cp/audit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/fsutil.h"
#include "server/cp/tables/audit.h"

#define DEDUP_SLOTS 256
#define DEDUP_S 60

static struct {
  pthread_mutex_t lock;
  char key[DEDUP_SLOTS][200];
  long at[DEDUP_SLOTS];
} recent = { PTHREAD_MUTEX_INITIALIZER, {{0}}, {0} };

/* 1 when the same denial was written less than DEDUP_S ago. */
static int seen_lately(const char *key, long now) {
  int dup = 0, oldest = 0;
  pthread_mutex_lock(&recent.lock);
  for (int i = 0; i < DEDUP_SLOTS && !dup; i++) {
    if (!strcmp(recent.key[i], key) && now - recent.at[i] < DEDUP_S) dup = 1;
    if (recent.at[i] < recent.at[oldest]) oldest = i;
  }
  if (!dup) {
    snprintf(recent.key[oldest], sizeof recent.key[oldest], "%s", key);
    recent.at[oldest] = now;
  }
  pthread_mutex_unlock(&recent.lock);
  return dup;
}

static const char *actor_id(const ux_identity *id) {
  if (!id) return NULL;
  if (id->kind == UX_ID_BREAK_GLASS) return "break-glass";
  if (id->kind == UX_ID_SCOPED) return id->sub;
  return id->key_id;
}

void ux_cp_audit(ux_cp *cp, const ux_identity *id, const char *action,
                 const char *target, const char *outcome) {
  long now = ux_now();
  const char *actor = actor_id(id);
  if (!strcmp(outcome, "denied")) {
    char key[200];
    snprintf(key, sizeof key, "%s|%s|%s", actor ? actor : "", action, target ? target : "");
    if (seen_lately(key, now)) return;
  }
  const char *tenant = id && id->tenant[0] ? id->tenant : NULL;
  if (ux_audit_add(cp->srv->store, tenant, id ? ux_id_kind_name(id) : NULL, actor, action, target,
                   outcome, (long long)now, (long long)cp->srv->cfg.cp_audit_rows) < 0)
    fprintf(stderr, "unsandboxd: audit row for %s not written\n", action);
}
