/* server_impl.h: what server.c (the protocol) and call.c (what a tool call may do) share: the
 * server's state and one tool call's. Internal to src/mcp. */
#ifndef TEMPER_MCP_SERVER_IMPL_H
#define TEMPER_MCP_SERVER_IMPL_H

#include <pthread.h>

#include "mcp.h"

struct batch; /* a JSON-RPC batch being answered (server.c) */

struct mcp_server {
    const struct mcp_config *config; /* how it was started */
    int out_fd;                      /* where messages go */
    pthread_mutex_t out_lock;        /* one message at a time on out_fd */
    int out_broken;                  /* 1: a write failed (the client went away); nothing more is written */
    pthread_mutex_t lock;            /* everything below */
    pthread_cond_t calls_done;       /* signalled when a call ends */
    char version[16];                /* the legacy version initialize negotiated; "" before it */
    int ending;                      /* 1: the input ended; tunes are stopped as they start */
    int ncalls;                      /* calls in flight */
    struct mcp_call *calls;          /* the calls in flight, a list */
    pthread_mutex_t session_lock;    /* the session and its device */
    struct temper_session *session;  /* opened on first use; NULL before */
};

struct mcp_call {
    struct mcp_server *server;         /* its server */
    const struct mcp_tool *tool;       /* the tool called */
    json_t *id;                        /* the request's id (own copy) */
    json_t *args;                      /* the checked arguments (own copy) */
    json_t *progress_token;            /* params._meta.progressToken (own copy), or NULL */
    char version[16];                  /* the protocol version the call is served under */
    int modern;                        /* 1: 2026-07-28 style (resultType, per-request _meta) */
    struct batch *batch;               /* the batch it answers into, or NULL */
    int cancelled;                     /* 1: notifications/cancelled named it; it is never answered */
    struct temper_session *eval_session; /* the session of eval_id */
    int64_t eval_id;                   /* the evaluation running for it, 0: none */
    struct temper_session_tune *tune;  /* the tune running for it, NULL: none */
    struct mcp_call *next;             /* the next call in flight */
};

/* Writes one message on the server's output as one line, under its write lock; takes message's
 * reference. After a failed write (the client has gone) nothing more is written. */
void mcp_send(struct mcp_server *srv, json_t *message);

#endif
