/*
** unsandboxd's validation of execute-shaped request bodies (exec_spec.c):
** any bytes as the body of POST /execute. Every input gets either a spec
** or a 400-class reply, never both, never neither.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/exec/exec_spec.h"
#include "server/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) { ux_mem_init(); init = 1; }
  char *body = malloc(size + 1);
  if (!body) return 0;
  memcpy(body, data, size);
  body[size] = '\0';
  ux_req r;
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/execute";
  r.body = body;
  r.body_len = size;
  r.content_length = (long long)size;
  json_t *j = ux_body_object(&r, 0);
  ux_exec_spec *s = j ? ux_exec_spec_from_json(&r, j, 60) : NULL;
  if (!s && (r.reply.status < 400 || r.reply.status >= 500)) abort();
  if (s && r.reply.status) abort();
  if (s && s->run.n_env > 256) abort();
  ux_exec_spec_free(s);
  json_decref(j);
  ux_reply_clear(&r.reply);
  free(body);
  return 0;
}
