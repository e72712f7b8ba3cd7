/*
** Workspace ids (see cp/workspaces/ids.h).
*/
#include "server/cp/workspaces/ids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Appends s with '\' and ':' escaped; returns the new end. */
static char *put_escaped(char *o, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == ':') *o++ = '\\';
    *o++ = *s;
  }
  return o;
}

char *ux_workspace_material(const char *tenant, const char *kind, const char *principal,
                            const char *session_id) {
  if (!tenant) {
    size_t n = strlen(session_id) + sizeof "workspace:";
    char *m = malloc(n);
    if (m) snprintf(m, n, "workspace:%s", session_id);
    return m;
  }
  size_t n = 2 * (strlen(tenant) + strlen(kind) + strlen(principal) + strlen(session_id)) + 16;
  char *m = malloc(n), *o = m;
  if (!m) return NULL;
  o += sprintf(o, "ws:v2:");
  o = put_escaped(o, tenant); *o++ = ':';
  o = put_escaped(o, kind); *o++ = ':';
  o = put_escaped(o, principal); *o++ = ':';
  o = put_escaped(o, session_id);
  *o = '\0';
  return m;
}

int ux_workspace_id(const unsigned char *key, size_t keylen, const char *material,
                    char out[UX_WS_ID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char mac[32];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)material, strlen(material),
            mac, &n) || n != 32) return -1;
  memcpy(out, "ws-", 3);
  for (int i = 0; i < 6; i++) {
    out[3 + 2 * i] = hex[mac[i] >> 4];
    out[4 + 2 * i] = hex[mac[i] & 15];
  }
  out[UX_WS_ID_LEN] = '\0';
  return 0;
}
