/*
** libcurl on first use (see lazy.h): each function the core calls,
** forwarding to the real one once libcurl.so.4 is loaded. The list is
** an X-macro so the names, the table and the forwarders cannot drift
** apart; the two variadic ones are written out. curl.h's prototypes are
** in scope, so the compiler checks every signature against libcurl's.
*/
#define CURL_DISABLE_TYPECHECK      /* the real functions, not the macros */
#include <curl/curl.h>
#include <stdarg.h>

#include "lazy/lazy.h"

/* Functions with a result: type, name, parameters, arguments, and the
** result when libcurl is missing. */
#define CURL_FUNCS(X) \
  X(CURLcode, curl_global_init, (long f), (f), CURLE_FAILED_INIT) \
  X(CURL *, curl_easy_init, (void), (), NULL) \
  X(CURLcode, curl_easy_pause, (CURL *h, int mask), (h, mask), CURLE_FAILED_INIT) \
  X(CURLcode, curl_easy_send, (CURL *h, const void *b, size_t n, size_t *sent), (h, b, n, sent), \
    CURLE_FAILED_INIT) \
  X(CURLcode, curl_easy_recv, (CURL *h, void *b, size_t n, size_t *got), (h, b, n, got), \
    CURLE_FAILED_INIT) \
  X(const char *, curl_easy_strerror, (CURLcode c), (c), "libcurl.so.4 could not be loaded") \
  X(time_t, curl_getdate, (const char *s, const time_t *u), (s, u), -1) \
  X(struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s), (l, s), NULL) \
  X(CURLM *, curl_multi_init, (void), (), NULL) \
  X(CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *h), (m, h), CURLM_INTERNAL_ERROR) \
  X(CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *h), (m, h), CURLM_INTERNAL_ERROR) \
  X(CURLMcode, curl_multi_perform, (CURLM *m, int *n), (m, n), CURLM_INTERNAL_ERROR) \
  X(CURLMcode, curl_multi_poll, (CURLM *m, struct curl_waitfd e[], unsigned int ne, int ms, \
                                 int *n), (m, e, ne, ms, n), CURLM_INTERNAL_ERROR) \
  X(CURLMcode, curl_multi_socket_action, (CURLM *m, curl_socket_t s, int ev, int *n), \
    (m, s, ev, n), CURLM_INTERNAL_ERROR) \
  X(CURLMsg *, curl_multi_info_read, (CURLM *m, int *n), (m, n), NULL) \
  X(CURLMcode, curl_multi_cleanup, (CURLM *m), (m), CURLM_INTERNAL_ERROR) \
  X(const char *, curl_multi_strerror, (CURLMcode c), (c), "libcurl.so.4 could not be loaded") \
  X(CURLU *, curl_url, (void), (), NULL) \
  X(CURLUcode, curl_url_get, (CURLU *u, CURLUPart w, char **p, unsigned int f), (u, w, p, f), \
    CURLUE_OUT_OF_MEMORY) \
  X(CURLUcode, curl_url_set, (CURLU *u, CURLUPart w, const char *p, unsigned int f), \
    (u, w, p, f), CURLUE_OUT_OF_MEMORY)

/* Functions without one: name, parameters, arguments. */
#define CURL_PROCS(X) \
  X(curl_easy_cleanup, (CURL *h), (h)) \
  X(curl_easy_reset, (CURL *h), (h)) \
  X(curl_free, (void *p), (p)) \
  X(curl_slist_free_all, (struct curl_slist *l), (l)) \
  X(curl_url_cleanup, (CURLU *u), (u))

enum { CURL_FUNCS(UNSB_LAZY_IDX_F) CURL_PROCS(UNSB_LAZY_IDX_P) I_setopt, I_getinfo, I_msetopt, N_FUNCS };
static const char *const names[N_FUNCS + 1] = {
  CURL_FUNCS(UNSB_LAZY_NAME_F) CURL_PROCS(UNSB_LAZY_NAME_P) "curl_easy_setopt", "curl_easy_getinfo",
  "curl_multi_setopt", NULL
};
static void *slot[N_FUNCS];
static unsb_lazy lib = { "libcurl.so.4", names, slot, PTHREAD_ONCE_INIT, 0 };

CURL_FUNCS(UNSB_LAZY_FORWARD_F)
CURL_PROCS(UNSB_LAZY_FORWARD_P)

typedef CURLcode (*setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*getinfo_fn)(CURL *, CURLINFO, ...);
typedef CURLMcode (*msetopt_fn)(CURLM *, CURLMoption, ...);

/* The third argument's type follows from the option number's range, as
** in libcurl itself. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...) {
  va_list ap;
  CURLcode rc = CURLE_FAILED_INIT;
  va_start(ap, opt);
  setopt_fn f = unsb_lazy_load(&lib) ? (setopt_fn)slot[I_setopt] : NULL;
  if (!f) { /* rc stays */ }
  else if (opt < CURLOPTTYPE_OBJECTPOINT) rc = f(h, opt, va_arg(ap, long));
  else if (opt < CURLOPTTYPE_FUNCTIONPOINT) rc = f(h, opt, va_arg(ap, void *));
  else if (opt < CURLOPTTYPE_OFF_T) rc = f(h, opt, va_arg(ap, void (*)(void)));
  else if (opt < CURLOPTTYPE_BLOB) rc = f(h, opt, va_arg(ap, curl_off_t));
  else rc = f(h, opt, va_arg(ap, void *));
  va_end(ap);
  return rc;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...) {
  va_list ap;
  CURLcode rc = CURLE_FAILED_INIT;
  va_start(ap, info);
  if (unsb_lazy_load(&lib)) rc = ((getinfo_fn)slot[I_getinfo])(h, info, va_arg(ap, void *));
  va_end(ap);
  return rc;
}

/* The multi options the core sets are longs, callbacks and pointers;
** the type follows from the option number's range, as for the easy ones. */
CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...) {
  va_list ap;
  CURLMcode rc = CURLM_INTERNAL_ERROR;
  va_start(ap, opt);
  msetopt_fn f = unsb_lazy_load(&lib) ? (msetopt_fn)slot[I_msetopt] : NULL;
  if (!f) { /* rc stays */ }
  else if (opt < CURLOPTTYPE_OBJECTPOINT) rc = f(m, opt, va_arg(ap, long));
  else if (opt < CURLOPTTYPE_FUNCTIONPOINT) rc = f(m, opt, va_arg(ap, void *));
  else if (opt < CURLOPTTYPE_OFF_T) rc = f(m, opt, va_arg(ap, void (*)(void)));
  else rc = f(m, opt, va_arg(ap, curl_off_t));
  va_end(ap);
  return rc;
}
