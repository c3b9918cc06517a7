/* server.h: the gym's HTTP/JSON front end (`temper serve`, docs/openapi.yaml) on libmicrohttpd:
 * http.c (the daemon, bearer tokens, bodies, routing, replies), api.c (the endpoints) and
 * metrics.c (/metrics). It only queues and reads jobs through queue.h; consumers run elsewhere
 * (threads of the same process, or `temper worker` processes on a Redis queue). */
#ifndef TEMPER_SERVE_SERVER_H
#define TEMPER_SERVE_SERVER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "serve/consumer.h"
#include "serve/queue.h"

/* Limits on what a client may send; zero: the default in brackets. */
struct temper_server_limits {
    size_t max_body_bytes;   /* a request body larger is refused with 413 [16 MiB] */
    size_t max_source_bytes; /* an item's source larger is refused with 413 [1 MiB, TEMPER_SOURCE_MAX] */
    int max_items;           /* items in one request, ids in one evaluations:get [1000] */
    int max_wait_s;          /* a request's wait_s is cut to this [60] */
    int max_connections;     /* connections at once (each has a thread) [256] */
    int max_client_connections; /* connections at once from one client address [64] */
    int request_timeout_s;   /* a request (headers and body) must arrive whole within this [30] */
};

/* How to start the server. */
struct temper_server_config {
    const char *listen;                     /* "HOST:PORT" ("127.0.0.1:8787"; "[::1]:0"); port 0: any free one */
    const char *token;                      /* the bearer token clients must send; NULL: none (loopback only) */
    struct temper_queue *queue;             /* where jobs go (borrowed) */
    const char *tasks_dir;                  /* where tasks are looked up (NULL: the default folders) */
    struct temper_server_limits limits;     /* what a client may send */
    int ndevices;                           /* local consumers (0 with Redis) */
    const char *const *devices;             /* their device specs */
    struct temper_consumer_counts *const *counts; /* their counts, for /metrics */
};

struct temper_server; /* opaque: a running daemon */

/* Starts the daemon; refuses a non-loopback address without a token (TEMPER_EINVALID). Caller
 * stops it with temper_server_stop. */
int temper_server_start(const struct temper_server_config *config, struct temper_server **s, char *msg,
                        size_t msg_size);
/* The port it listens on (the one chosen when asked for 0). */
int temper_server_port(struct temper_server *s);
void temper_server_stop(struct temper_server *s);

/* ---- inside the front end (http.c, api.c, metrics.c) ---- */

/* A reply being made by an endpoint. */
struct server_reply {
    unsigned status;          /* HTTP status */
    json_t *json;             /* the body as JSON (owned), or NULL */
    char *text;               /* the body as text (owned; /metrics), or NULL */
    int retry_after_s;        /* > 0: a Retry-After header */
    const char *allow;        /* a 405's Allow header, or NULL */
};

/* What the front end keeps. */
struct server_state {
    struct temper_server_config config;   /* as started, limits filled in */
    atomic_llong submitted;               /* new jobs queued */
    atomic_llong submit_cache_hits;       /* new jobs answered from the cache at submission */
    atomic_llong requests;                /* requests answered */
    atomic_llong client_errors;           /* 4xx answered */
    atomic_llong server_errors;           /* 5xx answered */
};

/* Fills r with the error body {"error": {"kind", "message"}} and status; returns 0. */
int server_error(struct server_reply *r, unsigned status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 1 if id is a valid job or batch id: [A-Za-z0-9._:-]{1,128}, not only dots. */
int server_id_ok(const char *id);
/* The longest wait_s a request may name; longer than the server's max_wait_s is cut to it. */
#define SERVER_MAX_WAIT_S 3600

/* Parses a wait_s value (text from a query, or NULL: 0) into seconds, refusing what is not a number
 * from 0 to SERVER_MAX_WAIT_S and cutting it to max_wait_s; 0 or a 400 in r. */
int server_parse_wait(struct server_state *st, const char *text, double *wait_s, struct server_reply *r);
/* The same for a JSON body's wait_s (NULL: 0). */
int server_json_wait(struct server_state *st, json_t *wait, double *wait_s, struct server_reply *r);

/* The endpoints (api.c); path is the part after the route's prefix where it has one. */
void api_submit(struct server_state *st, const char *body, size_t len, struct server_reply *r);
void api_get(struct server_state *st, const char *id, const char *wait, struct server_reply *r);
void api_get_many(struct server_state *st, const char *body, size_t len, struct server_reply *r);
void api_cancel(struct server_state *st, const char *id, struct server_reply *r);
void api_batch(struct server_state *st, const char *id, struct server_reply *r);
void api_tasks(struct server_state *st, struct server_reply *r);
void api_workers(struct server_state *st, struct server_reply *r);
void api_ready(struct server_state *st, struct server_reply *r);
/* /metrics (metrics.c). */
void api_metrics(struct server_state *st, struct server_reply *r);

/* Consumers seen within this many seconds are live (workers, readiness, cache at submission). */
#define SERVER_LIVE_S 30

#endif
