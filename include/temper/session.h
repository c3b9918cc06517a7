/* session.h: the one way in to temper's evaluations, shared by the command line, a service, an
 * agent and an MCP server. A session opens the store, finds the task folders and starts a worker
 * for one device; clients submit evaluation requests from any thread and receive each result
 * exactly once, through a callback or by waiting on its id; tunes run through begin/step/finish
 * with one progress event per evaluation. Every result is recorded in the store inside the
 * session, with its lineage, and carries its store row id. The library never prints: notices and
 * warnings come as events.
 *
 * Threads: one dispatcher thread owns the worker. It takes the queued requests in order into one
 * stream (temper_eval_stream: compilation runs ahead of device runs, and a request submitted
 * while others run joins them), records each result and delivers it. Every function here may be called from any thread, except that a
 * session's callbacks must not call temper_session_close nor wait for a result (they may submit
 * and cancel). */
#ifndef TEMPER_SESSION_H
#define TEMPER_SESSION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "temper/error.h"
#include "temper/eval.h"
#include "temper/request.h"
#include "temper/search.h"

struct temper_session; /* opaque: a store, a device worker and a dispatcher thread */

/* What a session tells its client besides results. */
enum temper_session_event_kind {
    TEMPER_SESSION_NOTICE,  /* something people may want to know ("calibrating the device once") */
    TEMPER_SESSION_WARNING, /* something went wrong that did not stop the work */
    TEMPER_SESSION_TUNE,    /* a tune scored one configuration (tune is set) */
};

/* One event. Everything in it is borrowed for the duration of the callback. */
struct temper_session_event {
    enum temper_session_event_kind kind;  /* what happened */
    const char *message;                  /* a notice's or warning's text; NULL for a tune event */
    const struct temper_tune_event *tune; /* a tune event's point, verdict, time and best so far */
    json_t *result;                       /* a tune event's result, NULL otherwise */
};

/* Receives events; called on the thread doing the work (the dispatcher, or the tune's caller). */
typedef void (*temper_session_event_cb)(void *user, const struct temper_session_event *ev);

/* How to open a session. Zero (all NULL and 0) means every default. */
struct temper_session_config {
    const char *device;                  /* "cuda[:N]" or "opencl[:N]"; NULL: the first CUDA device, else OpenCL */
    const char *store_path;              /* the store; NULL: $TEMPER_HOME/temper.db */
    int no_store;                        /* 1: open no store; nothing is recorded or looked up */
    const char *tasks_dir;               /* where tasks are looked up; NULL: the default folders */
    const struct temper_limits *limits;  /* limits on the worker; NULL: temper_limits_default */
    int jobs;                            /* compile processes at a time; 0: one per core */
    int max_batch;                       /* requests the running stream takes ahead of their results
                                          * (compiling ahead), at most; 0: 32 */
    const char *deep_exe;                /* the temper binary deep checks run under their tool; NULL:
                                          * none, and a request for deep checks gets an error there */
    temper_session_event_cb on_event;    /* notices and warnings; NULL: dropped */
    void *event_user;                    /* passed to on_event */
};

/* Opens the store, starts a worker on the device and asks it for the device's description (so a
 * missing device fails here, with TEMPER_ENODEVICE), then starts the dispatcher. Caller closes
 * with temper_session_close. */
int temper_session_open(const struct temper_session_config *config, struct temper_session **s, char *msg,
                        size_t msg_size);
/* Cancels what is still queued (each gets a cancelled result), waits for the running batch,
 * delivers every result not yet delivered, then stops the worker and closes the store. Results
 * not waited for are dropped. Called once, when no other call on the session is in progress
 * (no thread waiting, no tune between begin and finish); NULL is ignored. */
void temper_session_close(struct temper_session *s);

/* The device's description (borrowed; lives as long as the session). */
json_t *temper_session_device_info(struct temper_session *s);
/* Lists every device of every backend without opening a session (`temper devices`, `temper serve`
 * choosing what to serve): starts a worker on the default device with the default limits, asks it
 * for its list ({"devices": [...], "unavailable": {...}, "sandbox": {...}}) and stops it before
 * returning. The caller decrefs *devices. On failure (no worker, or no answer) returns the error
 * and fills msg; *devices is left NULL. */
int temper_session_list_devices(json_t **devices, char *msg, size_t msg_size);
/* The device's measured ceilings, from the store, or measured now (and stored) when there are
 * none or with measure_again; *ceilings is the caller's to decref. */
int temper_session_ceilings(struct temper_session *s, int measure_again, json_t **ceilings, char *msg,
                            size_t msg_size);

/* Receives one result, owned by the callee (json_decref it when done), on the dispatcher thread;
 * a request cancelled while queued gets its result on the thread that cancelled it. */
typedef void (*temper_session_result_cb)(void *user, int64_t id, json_t *result);

/* One evaluation: a request (request.h), held whole as .request and member by member (.path,
 * .seed, ...), and where its result goes. Strings and arrays are copied at submission. A request
 * with source text is named path (NULL: "<source>") with its language's extension. */
struct temper_session_request {
    union {
        struct temper_request request; /* the request, whole */
        struct {
            TEMPER_REQUEST_MEMBERS
        }; /* the same members, by name */
    };
    temper_session_result_cb on_result; /* receives the result; NULL: wait for it with temper_session_wait */
    void *user;                         /* passed to on_result */
};

/* Queues a request; *id (from 1, never reused in a session) names it. Returns nonzero only for a
 * request that cannot be queued (out of memory, a session closing); a candidate that cannot be
 * read or parsed is queued and gets an `invalid` result. */
int temper_session_submit(struct temper_session *s, const struct temper_session_request *req, int64_t *id,
                          char *msg, size_t msg_size);
/* Waits for the result of a request submitted without a callback; *result is the caller's to
 * decref. TEMPER_ENOTFOUND if no such request is waiting (unknown, or already received). */
int temper_session_wait(struct temper_session *s, int64_t id, json_t **result, char *msg, size_t msg_size);
/* Cancels a request; its result says "cancelled" (temper_session_result_cancelled), is delivered
 * once, as any result, and is not stored. Queued: dropped, and it gets its result at once.
 * In the running batch: skipped there if the worker has not started it, else its job is killed
 * (the next request gets a fresh worker); its result comes on the dispatcher thread. Returns 0
 * when it was cancelled; TEMPER_ENOTFOUND when there is nothing to cancel: unknown, delivered,
 * cancelled already, or its result decided already (it comes as usual). */
int temper_session_cancel(struct temper_session *s, int64_t id);

/* ---- results: the few accessors clients use, so that the record's form can change ---- */

/* The verdict's name ("correct", ...; borrowed), or NULL. */
const char *temper_session_result_verdict(json_t *result);
/* 1 if the request was cancelled (before it ran, or while it ran). */
int temper_session_result_cancelled(json_t *result);
/* The error (a TEMPER_E* code) that kept the request from being evaluated at all (an unreadable
 * file, an unknown knob, a task that does not load, a candidate for another device); 0 if it
 * was evaluated. Such a result has verdict `invalid` and is not stored. */
int temper_session_result_error(json_t *result);
/* The task's own error that kept the request from being evaluated (its reference crashed or ran
 * past its limit, its baseline is wrong, failed, crashed or hung; the message begins
 * TEMPER_TASK_ERROR_PREFIX), borrowed; NULL otherwise. Every other candidate of that task would
 * meet it again. */
const char *temper_session_result_task_error(json_t *result);
/* The store row id of the result, 0 if it was not stored. */
int64_t temper_session_result_store_id(json_t *result);
/* Why recording it failed (borrowed), or NULL. */
const char *temper_session_result_store_error(json_t *result);

/* ---- tunes ---- */

struct temper_session_tune; /* opaque: a tune in progress in a session */

/* Starts a tune: continues the candidate's unfinished run on this device with req->resume, else
 * records a new run. Each evaluation is looked up in the store first, else submitted (batched
 * with other clients' requests) and recorded with the run. on_event receives one
 * TEMPER_SESSION_TUNE event per evaluation, on the caller's thread during temper_session_tune_step.
 * Caller ends it with temper_session_tune_finish. */
int temper_session_tune_begin(struct temper_session *s, const struct temper_tune_request *req,
                              temper_session_event_cb on_event, void *user, struct temper_session_tune **t,
                              char *msg, size_t msg_size);
/* Runs one batch of the tune and waits for it: 1 while there is more, 0 when it is over (or was
 * stopped), negative on an error. */
int temper_session_tune_step(struct temper_session_tune *t, char *msg, size_t msg_size);
/* Stops a tune from any thread: its evaluations still to come are cancelled (queued, or running:
 * their jobs are killed) and the step returns. The run stays unfinished in the store, so that it
 * can be resumed; a cancelled evaluation is not stored, so a resume runs it again. */
void temper_session_tune_stop(struct temper_session_tune *t);
/* The summary (caller decrefs): the best point, its times and the convergence history. A tune
 * that ran to its end is recorded as finished; a stopped one gets "interrupted": true, its best
 * screening point, and stays resumable. Frees t. */
int temper_session_tune_finish(struct temper_session_tune *t, json_t **summary, char *msg, size_t msg_size);

#endif
