/* session_impl.h: what the session's files share: the session itself, its requests, and the
 * internal ways in that tunes use (a request recorded with a run). */
#ifndef TEMPER_SESSION_IMPL_H
#define TEMPER_SESSION_IMPL_H

#include <pthread.h>

#include "eval/eval_internal.h"
#include "temper/session.h"
#include "temper/store.h"

/* Where a request stands. */
enum pending_state {
    PENDING_QUEUED,  /* waiting for the dispatcher */
    PENDING_RUNNING, /* taken by the running stream (temper_eval_stream) */
    PENDING_DONE,    /* its result waits for temper_session_wait */
};

/* One submitted request, from submission until its result is received. Owns copies of every
 * string the client gave. */
struct pending {
    int64_t id;                        /* the request's id */
    enum pending_state state;          /* where it stands */
    struct temper_session_request req; /* the request: own, with path, source and lang from the fields
                                        * below (lang a literal "cuda" or "opencl", or NULL) */
    char *path;                        /* the candidate's file, or the name of its text (with its
                                        * language's extension) */
    char *source;                      /* its text (read at submission), NULL if it could not be read;
                                        * NUL-terminated, and it may hold NUL bytes before source_len */
    size_t source_len;                 /* its length in bytes */
    struct temper_request own;         /* the client's request, copied (its path, source and lang
                                        * NULL: those are the fields above) */
    int from_text;                     /* 1: the source came as text, not from a file */
    int early_err;                     /* nonzero: it cannot be evaluated (unreadable file, bad language) */
    char *early_msg;                   /* why, with early_err */
    int64_t run_id;                    /* the tune run it is recorded with, 0 if none */
    const char *tune_phase;            /* "screen" or "retime" for a tune's evaluation, else NULL */
    int cancel_word;                   /* enum temper_eval_cancel, changed atomically: how a cancel reaches
                                        * the running stream (its request's cancel points here) */
    json_t *result;                    /* the result, once done and not yet received */
    struct temper_eval_request eval;   /* what the stream evaluates, once taken (points into this) */
    struct pending *prev, *next;       /* the session's list, in submission order */
};

/* A session. Locks are taken in the order worker_lock, lock, store_lock, never the other way. */
struct temper_session {
    struct temper_session_config config; /* as opened, strings pointing at the copies below */
    char *device;                        /* config.device's copy */
    char *tasks_dir;                     /* config.tasks_dir's copy */
    char *deep_exe;                      /* the binary deep checks run, or NULL when unknown */
    struct temper_limits limits;         /* the worker's limits */
    struct temper_store *store;          /* NULL with no_store */
    struct temper_worker *worker;        /* owned by the dispatcher (and worker_lock's holder) */
    json_t *info;                        /* the device's description */
    const char *device_id;               /* its "id", borrowed from info */
    char device_key[1024];               /* its stable identity in the store (temper_store_device_key) */
    json_t *ceilings;                    /* its measured ceilings once known, under worker_lock */
    pthread_t dispatcher;                /* the thread that runs batches */
    int dispatcher_started;              /* 1 once it runs */
    pthread_mutex_t lock;                /* the list, ids, states, closing */
    pthread_cond_t work;                 /* signalled when a request is queued or the session closes */
    pthread_cond_t done;                 /* broadcast when a result waits to be received */
    pthread_mutex_t worker_lock;         /* held while the worker is in use */
    pthread_mutex_t store_lock;          /* held around every store call */
    struct pending *first, *last;        /* requests not yet received, in submission order */
    int64_t next_id;                     /* the next request's id */
    int closing;                         /* 1: no more submissions; the dispatcher ends when idle */
};

/* Queues a request recorded with a tune run (run_id, phase "screen" or "retime"). */
int session_submit(struct temper_session *s, const struct temper_session_request *req, int64_t run_id,
                   const char *tune_phase, int64_t *id, char *msg, size_t msg_size);
/* Tells the client something (kind NOTICE or WARNING) through config.on_event. */
void session_notify(struct temper_session *s, enum temper_session_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes *r the result of a request that was never evaluated: verdict invalid, the error and its
 * message, or cancelled; in the one form once written (temper_result_to_json). Caller frees r. */
struct temper_result;
void session_result_unevaluated(struct temper_result *r, const char *path, int err, const char *message,
                                int cancelled);

#endif
