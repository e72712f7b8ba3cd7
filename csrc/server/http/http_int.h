/*
** The transport's private state, shared by its files: http.c (listener,
** start, stop), exchange.c (libmicrohttpd's request callback and handler
** threads), threads.c (who gets a handler thread), respond.c (replies to libmicrohttpd responses), stream.c
** (streamed bodies both ways), sweeper.c (the connection registry and
** its deadlines) and upgrade.c (HTTP 101 upgrades).
**
** One mutex per listener (h->mu) guards all of it: the registry, every
** exchange's flags and rings, and every call of MHD_suspend_connection
** and MHD_resume_connection, so "suspended" here always matches
** libmicrohttpd's view. Lock order: h->mu, then libmicrohttpd's internal
** mutexes (suspend/resume take them); libmicrohttpd never calls us with
** one of its own connection-list mutexes held, but for one case: the
** completion notice of an upgraded connection given back comes with its
** cleanup mutex held, so that notice never takes h->mu (upgrade.c does
** its work before the give-back). A response's content
** reader is called with that response's mutex held and takes h->mu, so
** responses are created, queued and destroyed only without h->mu.
*/
#ifndef UX_HTTP_INT_H
#define UX_HTTP_INT_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>

#include "server/http/http.h"
#include "server/http/limits.h"
#include "server/http/reply.h"

typedef struct ux_conn ux_conn;
typedef struct ux_xchg ux_xchg;

/* Where a connection is, for the sweeper. */
enum { C_HEADERS, C_BODY, C_BUSY };

/* One accepted socket, from libmicrohttpd's STARTED to CLOSED notice. */
struct ux_conn {
  ux_conn *prev, *next;
  int fd;                     /* valid until CLOSED: closed after it */
  char peer[INET6_ADDRSTRLEN];
  int phase;
  int kept_alive;             /* a request was already answered on it */
  long since_ms;              /* C_HEADERS: when the deadline started, 0 = not yet */
  unsigned long long tcp_base;  /* kept-alive: bytes received by the last request's end */
  long body_t0, paused_ms, paused_since;   /* C_BODY: rate bookkeeping */
  unsigned long long body_bytes;
  int killed;
  int authed;                 /* its last request was authenticated */
  long idle_since;            /* when it last had no request in progress */
  ux_xchg *x;                 /* the request in progress, or NULL */
};

/* What an exchange is waiting for. */
enum {
  X_BODY,          /* buffered body arriving */
  X_AUTH,          /* headers in, their check (router.authorize) running */
  X_STREAM_WAIT,   /* streaming body: headers in, handler not reading yet */
  X_STREAM_BODY,   /* streaming body flowing into the ring */
  X_RUNNING,       /* handler running, connection suspended until its reply */
  X_QUEUED,        /* response handed to libmicrohttpd */
};

/* One request/response, shared by libmicrohttpd's side and the handler
** thread (and the streamed response); freed by the last of them. */
struct ux_xchg {
  ux_http *h;
  struct MHD_Connection *mc;  /* NULL once libmicrohttpd completed it */
  ux_conn *cn;                /* NULL once completed */
  int refs;
  int phase;
  /* flags: each its own byte, never bitfields, so a flag written under
  ** h->mu never shares a memory location with one read without it
  ** (streaming is set before the handler thread starts and then fixed) */
  unsigned char suspended;    /* suspended by us (under h->mu) */
  unsigned char head_ready;   /* reply or stream head may be queued */
  unsigned char handler_done;
  unsigned char gone;         /* client gone or request over: no more I/O */
  unsigned char streaming;    /* streaming-body route */
  unsigned char probe;        /* may use UX_HTTP_PROBE_RESERVE */
  unsigned char waiting;      /* in h's line for a handler thread */
  unsigned char no_thread;    /* it waited in vain: 503 server_busy */
  long wait_since;
  ux_xchg *wait_next;
  unsigned char want_body;    /* the handler started reading */
  unsigned char body_done;    /* the whole body was received */
  unsigned char auth_done;    /* X_AUTH: the header check has decided */
  unsigned char discard;      /* the buffered body is counted, never kept */
  unsigned char stream_open, stream_closed, stream_aborted;
  long t0;
  char request_id[128];
  ux_req req;
  char *arena;                /* method, path, peer and headers of req */
  ux_kv *hdrs;
  unsigned long long limit, received, discarded;
  unsigned long long unseen;  /* body bytes thrown away in discard mode */
  char *body;                 /* buffered body */
  size_t len, cap, read_pos;
  ux_ring in, out;            /* streaming body; streamed reply */
  long long out_length;       /* -1 = chunked */
  unsigned long long out_written;
  pthread_cond_t cv;          /* handler side waits here (body, stream, upgrade) */
  /* a protocol upgrade (upgrade.c): the 101 is queued like a reply, then
  ** libmicrohttpd hands the socket over on its event thread */
  unsigned char upgrade;      /* the reply is a 101 upgrade */
  unsigned char up_state;     /* UP_* below */
  int up_fd;                  /* the socket, once handed over */
  int up_stop;                /* eventfd the transport signals when it stops */
  char *up_extra;             /* bytes libmicrohttpd read past the headers */
  size_t up_extra_len;
  struct MHD_UpgradeResponseHandle *urh;
  ux_xchg *up_prev, *up_next; /* in h->upgraded while handed over */
  void **con_slot;            /* libmicrohttpd's con_cls of this request */
};

/* Where an upgrade is. */
enum { UP_NONE, UP_WAITING, UP_HANDED, UP_FAILED, UP_CLOSED };

struct ux_http {
  struct MHD_Daemon *d;
  ux_http_config cfg;
  char listen[300];
  pthread_mutex_t mu;
  pthread_cond_t drain_cv;    /* live or running went down */
  pthread_cond_t sweep_cv;
  pthread_t sweeper;
  int sweeper_started, sweeper_stop;
  int stopping;               /* 0 serving, 1 draining, 2 abandoning */
  unsigned running;           /* handler threads alive */
  ux_xchg *wait_head, *wait_tail;   /* requests waiting for one (threads.c) */
  unsigned waiting;
  unsigned long long waiting_bytes; /* their buffered bodies */
  unsigned live;              /* exchanges libmicrohttpd still holds */
  ux_conn *conns;
  unsigned conns_open;        /* in conns and not being closed by us */
  unsigned budget;            /* past it, an idle one is closed (sweeper.c) */
  unsigned long long evicted, evicted_logged;
  ux_xchg *upgraded;          /* sockets handed over to handlers (upgrade.c) */
  unsigned up_closing;        /* MHD_upgrade_action calls in progress */
  int mhd_stopping;           /* MHD_stop_daemon is next: no more of them */
};

/* exchange.c */
enum MHD_Result ux_x_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls);
void ux_x_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe);
void ux_x_release(ux_xchg *x);
/* Resumes x's connection when we suspended it; under h->mu. */
void ux_x_wake_locked(ux_xchg *x);
/* Suspends x's connection (from a libmicrohttpd callback); under h->mu. */
void ux_x_suspend_locked(ux_xchg *x);
/* Frees x (refs reached 0). */
void ux_x_free(ux_xchg *x);
/* Starts x's handler thread (h->running already counts it): 0, or -1. */
int ux_x_spawn(ux_xchg *x);

/* workers.c: runs fn(arg) on a thread of its own, one left waiting by an
** earlier piece when there is one, else a new one. 0, or -1 when no
** thread could be made. */
int ux_http_thread_run(void *(*fn)(void *), void *arg);

/* threads.c: who gets a handler thread. 0 x's handler started, 1 x waits
** in line for a thread (its connection is suspended by decide, the line
** holds a reference), -1 refused (503 server_busy). */
int ux_x_admit_handler(ux_http *h, ux_xchg *x);
/* A handler thread ends (under h->mu): the first of the line takes its
** place (returned, to be started with ux_x_start_next once h->mu is
** released), or running goes down. */
ux_xchg *ux_x_handler_ended_locked(ux_http *h);
void ux_x_start_next(ux_xchg *x);
/* The requests that waited UX_HTTP_WAIT_MS leave the line for their 503
** (the sweeper, under h->mu). */
void ux_x_wait_expire_locked(ux_http *h, long now);
/* Empties the line (shutdown, under h->mu): the exchanges, linked by
** wait_next, each with the line's reference for ux_x_release. */
ux_xchg *ux_x_wait_take_all_locked(ux_http *h);

/* respond.c: queues x's reply (or stream head) and logs the request. */
enum MHD_Result ux_respond(ux_http *h, ux_xchg *x, struct MHD_Connection *c);
/* Queues a JSON error {error, message} built here, not by the handler. */
enum MHD_Result ux_respond_error(ux_http *h, ux_xchg *x, struct MHD_Connection *c,
                                 int status, const char *code, const char *msg);
/* The request log line (also used for the sweeper's notes). */
void ux_log_request(const char *method, const char *path, int status, long ms, const char *rid);

/* stream.c: the content reader of a streamed reply. */
struct MHD_Response *ux_stream_response(ux_xchg *x);
/* The body ring: puts what fits; under h->mu. */
size_t ux_stream_feed_locked(ux_xchg *x, const char *data, size_t n);

/* upgrade.c: what a given-back upgraded request's con_cls is set to: its
** completion notice, which libmicrohttpd sends with one of its own mutexes
** held, must then not take h->mu (ux_req_upgrade_close did its work). */
extern char ux_upgrade_done;
/* upgrade.c: the 101 response of x (x->upgrade), or NULL. */
struct MHD_Response *ux_upgrade_response(ux_xchg *x);
/* The server stops: every upgraded socket's owner is told (its stop
** eventfd); with `cut`, the sockets are shut down too. Under h->mu. */
void ux_upgrade_stop_locked(ux_http *h, int cut);
/* Waits (under h->mu, until deadline_ms) until no upgraded socket is
** still held by its owner, so libmicrohttpd is never stopped under one. */
void ux_upgrade_drain_locked(ux_http *h, long deadline_ms);
/* Bars further MHD_upgrade_action calls and waits (bounded) for those in
** progress, right before MHD_stop_daemon; under h->mu. */
void ux_upgrade_bar_locked(ux_http *h);

/* sweeper.c */
void ux_conn_on_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);
int ux_sweeper_start(ux_http *h);
void ux_sweeper_stop(ux_http *h);
/* Bytes the kernel received on fd, or -1 (not TCP). */
long long ux_tcp_bytes_received(int fd);
/* C_BODY begins on cn; under h->mu. */
void ux_conn_body_start(ux_conn *cn, long now);

#endif
