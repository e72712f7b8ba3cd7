/*
** libwebsockets on first use (see lazy.h): the terminal of a session
** (core/ws_client.c) is the one user, so `require "unsandbox"` and every
** script that never attaches a terminal never map libwebsockets.so.17 (nor
** the libraries it pulls in). Same X-macro shape as curl.c, so the names,
** the table and the forwarders cannot drift apart; the prototypes of
** libwebsockets.h are in scope, so the compiler checks each signature.
** Should the library be missing, lws_create_context returns NULL, which
** ws_client.c reports as "libwebsockets.so.17 could not be loaded".
*/
#include <libwebsockets.h>

#include "lazy/lazy.h"

/* Functions with a result: type, name, parameters, arguments, and the
** result when libwebsockets is missing. */
#define LWS_FUNCS(X) \
  X(struct lws_context *, lws_create_context, (const struct lws_context_creation_info *i), (i), \
    NULL) \
  X(struct lws *, lws_client_connect_via_info, (const struct lws_client_connect_info *i), (i), \
    NULL) \
  X(int, lws_service, (struct lws_context *c, int ms), (c, ms), -1) \
  X(int, lws_service_adjust_timeout, (struct lws_context *c, int ms, int tsi), (c, ms, tsi), ms) \
  X(int, lws_callback_on_writable, (struct lws *w), (w), -1) \
  X(int, lws_write, (struct lws *w, unsigned char *b, size_t n, enum lws_write_protocol p), \
    (w, b, n, p), -1) \
  X(int, lws_is_final_fragment, (struct lws *w), (w), 1) \
  X(int, lws_frame_is_binary, (struct lws *w), (w), 0) \
  X(size_t, lws_remaining_packet_payload, (struct lws *w), (w), 0) \
  X(int, lws_rx_flow_control, (struct lws *w, int on), (w, on), -1) \
  X(void *, lws_context_user, (struct lws_context *c), (c), NULL) \
  X(struct lws_context *, lws_get_context, (const struct lws *w), (w), NULL) \
  X(lws_sockfd_type, lws_get_socket_fd, (struct lws *w), (w), -1) \
  X(int, lws_partial_buffered, (struct lws *w), (w), 0) \
  X(unsigned int, lws_http_client_http_response, (struct lws *w), (w), 0) \
  X(int, lws_add_http_header_by_name, (struct lws *w, const unsigned char *n, \
                                       const unsigned char *v, int len, unsigned char **p, \
                                       unsigned char *end), (w, n, v, len, p, end), 1)

/* Functions without one: name, parameters, arguments. */
#define LWS_PROCS(X) \
  X(lws_set_log_level, (int level, void (*emit)(int level, const char *line)), (level, emit)) \
  X(lws_context_destroy, (struct lws_context *c), (c)) \
  X(lws_close_reason, (struct lws *w, enum lws_close_status s, unsigned char *b, size_t n), \
    (w, s, b, n))

enum { LWS_FUNCS(UNSB_LAZY_IDX_F) LWS_PROCS(UNSB_LAZY_IDX_P) N_FUNCS };
static const char *const names[N_FUNCS + 1] = { LWS_FUNCS(UNSB_LAZY_NAME_F) LWS_PROCS(UNSB_LAZY_NAME_P) NULL };
static void *slot[N_FUNCS];
static unsb_lazy lib = { "libwebsockets.so.17", names, slot, PTHREAD_ONCE_INIT, 0 };

LWS_FUNCS(UNSB_LAZY_FORWARD_F)
LWS_PROCS(UNSB_LAZY_FORWARD_P)
