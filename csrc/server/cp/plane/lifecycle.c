/*
** The Control Plane's life: made after the store (its tables and keys
** live there), listening on its own port next to the execution API, put
** into shutdown mode when the server drains, freed last.
*/
#include "server/cp/cp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "core/digest.h"
#include "server/http/counters.h"
#include "server/cp/plane/router.h"
#include "server/cp/sandboxes/sandboxes.h"
#include "server/cp/store.h"
#include "server/cp/objects/store.h"
#include "server/runtime/runtime.h"
#include "server/http/http.h"
#include "server/share.h"

#define START_TIMEOUT_S 110

ux_cp *ux_cp_new(ux_server *srv, char *err, size_t errlen) {
  ux_cp *cp = calloc(1, sizeof *cp);
  if (!cp) { snprintf(err, errlen, "out of memory"); return NULL; }
  cp->srv = srv;
  cp->registries = srv->cfg.registries;
  cp->token_ttl_s = srv->cfg.cp_token_ttl_s;
  cp->idle_ttl_s = srv->cfg.cp_idle_ttl_s;
  cp->hard_ttl_s = srv->cfg.cp_hard_ttl_s;
  atomic_init(&cp->shutting_down, 0);
  unsigned char raw[32];
  if (ux_cp_store_init(cp, err, errlen) != 0) goto fail;
  if (RAND_bytes(raw, sizeof raw) != 1) { snprintf(err, errlen, "no random bytes"); goto fail; }
  memcpy(cp->break_glass, "bg_", 3);                 /* no '.': never taken for a scoped token */
  unsb_hex(raw, sizeof raw, cp->break_glass + 3);
  OPENSSL_cleanse(raw, sizeof raw);
  if (!(cp->objects = ux_objstore_open(srv->store, srv->cfg.data, err, errlen))) goto fail;
  ux_objstore_set_max_transfers(cp->objects, srv->cfg.cp_object_transfers,
                                srv->cfg.cp_tenant_transfers);
  int lost = ux_cp_store_recover(cp);
  if (lost > 0) fprintf(stderr, "unsandboxd: %d sandbox(es) of the last run marked released\n", lost);
  ux_rt_config rc;
  memset(&rc, 0, sizeof rc);
  rc.idle_ttl_s = cp->idle_ttl_s;
  rc.hard_ttl_s = cp->hard_ttl_s;
  rc.start_timeout_s = START_TIMEOUT_S;
  rc.max_live = srv->cfg.cp_max_runtimes;
  rc.on_end = ux_cp_sandbox_ended;
  rc.ctx = cp;
  cp->agent_calls = ux_shares_new((unsigned)srv->cfg.cp_tenant_calls);
  if (!(cp->metrics = ux_counters_new()) || !(cp->rts = ux_runtimes_new(&rc))) {
    snprintf(err, errlen, "cannot start the runtimes registry");
    goto fail;
  }
  return cp;
fail:
  ux_cp_free(cp);
  return NULL;
}

ux_http *ux_cp_listen(ux_cp *cp, unsigned long long nofile, char *url, size_t urllen,
                      char *err, size_t errlen) {
  ux_http_config hc;
  ux_http_config_default(&hc, nofile, 2);
  ux_http_config_connections(&hc, cp->srv->cfg.max_connections);
  hc.listen = cp->srv->cfg.cp_listen;
  hc.max_body = UX_CP_MAX_BODY;
  ux_cp_router(cp, &hc.router);
  return ux_http_start(&hc, url, urllen, err, errlen);
}

void ux_cp_shutting_down(ux_cp *cp) {
  if (cp) atomic_store(&cp->shutting_down, 1);
}

const char *ux_cp_break_glass(const ux_cp *cp) { return cp->break_glass; }

void ux_cp_free(ux_cp *cp) {
  if (!cp) return;
  ux_runtimes_free(cp->rts);
  ux_counters_free(cp->metrics);
  ux_objstore_close(cp->objects);
  ux_shares_free(cp->agent_calls);
  OPENSSL_cleanse(cp->signing_key, sizeof cp->signing_key);
  OPENSSL_cleanse(cp->ws_key, sizeof cp->ws_key);
  OPENSSL_cleanse(cp->break_glass, sizeof cp->break_glass);
  free(cp);
}
