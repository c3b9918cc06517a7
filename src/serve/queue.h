/* queue.h: where the gym's evaluation jobs wait and where their outcomes land. One interface, two
 * engines behind it: the SQLite store on one machine (queue_local.c, `temper serve` without
 * --redis) and Redis Streams with a consumer group across many machines (queue_redis.c, `temper
 * serve --redis URL` with `temper worker --redis URL` on each GPU machine). The HTTP front end
 * (submit, get, cancel, batches, metrics) and the consumer loop (consumer.h: take, evaluate,
 * complete) use only this interface, and one conformance test runs against both engines.
 *
 * Delivery: at least once, with the outcome recorded exactly once. A consumer takes a job, and
 * the job stays pending under that consumer until complete() has recorded its outcome and then
 * acknowledged it; a consumer that dies leaves it pending, and after claim_idle_ms any live
 * consumer's take() claims it (XAUTOCLAIM on Redis). A live consumer's beats keep its jobs (on
 * Redis each beat resets their idle time; the SQLite engine also claims at once a job whose
 * consumer has not reported for 10 s), so claim_idle_ms need only exceed a few beats, not the
 * longest job. Each hand-over counts a delivery; a job
 * handed over more than max_deliveries times (a kernel that kills whoever runs it) is not handed
 * over again: the engine records a runtime_error result for it, saying so, and puts it on the
 * dead letters. complete() of a job whose outcome is already recorded changes nothing.
 *
 * Every function returns 0 or a TEMPER_E* code and fills msg; all may be called from any thread
 * (an engine serialises what it must). */
#ifndef TEMPER_SERVE_QUEUE_H
#define TEMPER_SERVE_QUEUE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Where a job is. The names are the API's `status` strings (temper_job_state_name). */
enum temper_job_state {
    TEMPER_JOB_QUEUED,    /* waiting for a consumer */
    TEMPER_JOB_RUNNING,   /* taken by a consumer, outcome not recorded yet */
    TEMPER_JOB_DONE,      /* evaluated: the outcome is the result record (any verdict) */
    TEMPER_JOB_CANCELLED, /* cancelled by a client before its outcome was recorded */
    TEMPER_JOB_FAILED,    /* temper or its machine failed it: the outcome is an error object
                           * {"kind", "message", "retryable"}, never a verdict */
};

/* The state's API name ("queued", ...); a static string. */
const char *temper_job_state_name(enum temper_job_state s);

/* One job. Owned by whoever made it; temper_job_free frees what take() returns. */
struct temper_job {
    char id[129];          /* the client's id or one made at submission: [A-Za-z0-9._:-]{1,128} */
    char batch[129];       /* the batch it was submitted in; "" for none */
    char cache_key[65];    /* content key without the device (temper_job_content_key); "" for none */
    json_t *item;          /* the request item as the API validated it: source, lang, task?, knobs?,
                            * options?, parent?, origin?; task is the candidate's own when its
                            * `@temper task` line parses (owned by the job) */
    int64_t submitted_us;  /* when it was submitted (CLOCK_REALTIME, microseconds) */
    int deliveries;        /* times handed to a consumer so far, this hand-over included (take) */
    json_t *result;        /* submit only: a result known already (a cache hit at submission); the
                            * job is recorded done with it and never handed over. NULL: none (owned
                            * by the job) */
};

void temper_job_free(struct temper_job *job);

/* Settings shared by both engines. Zero means the default in brackets. */
struct temper_queue_config {
    int64_t max_depth;     /* unfinished jobs (queued + running) above which submit refuses [10000] */
    int claim_idle_ms;     /* a job pending this long under a consumer that no longer beats is claimed
                            * by another [60000] */
    int max_deliveries;    /* hand-overs after which a job goes to the dead letters [3] */
    int64_t keep_done_s;   /* finished jobs and their outcomes are kept this long [86400] */
};

/* Counts for /metrics and admission control. */
struct temper_queue_stats {
    int64_t queued;        /* jobs waiting */
    int64_t running;       /* jobs taken, outcome not recorded */
    int64_t done;          /* outcomes recorded (kept ones) */
    int64_t failed;        /* jobs failed by temper or its machines (kept ones) */
    int64_t cancelled;     /* jobs cancelled (kept ones) */
    int64_t redeliveries;  /* hand-overs beyond the first, since the queue was created */
    int64_t dead_letters;  /* jobs put on the dead letters, since the queue was created */
};

/* A consumer's last report of itself, for GET /v1/workers. */
struct temper_worker_status {
    char consumer[129];    /* the consumer's name, unique among live consumers (host:pid:device) */
    char device[64];       /* the device it runs ("cuda:0") */
    char device_key[256];  /* the device's stable identity (temper_store_device_key) */
    int busy;              /* 1 while it holds a job */
    int64_t jobs_done;     /* outcomes it recorded */
    int64_t seen_us;       /* when it last reported (CLOCK_REALTIME, microseconds) */
};

struct temper_queue;

/* An engine's functions. */
struct temper_queue_ops {
    const char *engine; /* "sqlite" or "redis" */
    /* Queues a job (the queue copies it). An id the queue knows already (any state, until it
     * expires) is not queued again: *existing = 1 and nothing changes. TEMPER_ERANGE when the
     * queue holds max_depth unfinished jobs (the caller answers 429). */
    int (*submit)(struct temper_queue *q, const struct temper_job *job, int *existing, char *msg, size_t msg_size);
    /* Hands a job to consumer: one idle past claim_idle_ms under another consumer first, else the
     * oldest queued; waits up to wait_ms for one. *job is NULL when there is none (caller frees it
     * with temper_job_free). Cancelled jobs are never handed over. */
    int (*take)(struct temper_queue *q, const char *consumer, int wait_ms, struct temper_job **job, char *msg,
                size_t msg_size);
    /* Records a taken job's outcome (state DONE with the result record, or FAILED with the error
     * object; borrowed), then acknowledges it. A job cancelled meanwhile stays cancelled and its
     * outcome is dropped; an outcome recorded already stays. */
    int (*complete)(struct temper_queue *q, const char *consumer, const char *id, enum temper_job_state state,
                    json_t *outcome, char *msg, size_t msg_size);
    /* The job's view for the API, {"id", "status", "batch"?, "result"? | "error"?} (caller decrefs),
     * waiting up to wait_ms for it to be done, cancelled or failed. TEMPER_ENOTFOUND if unknown. */
    int (*get)(struct temper_queue *q, const char *id, int wait_ms, json_t **view, char *msg, size_t msg_size);
    /* Cancels a queued or running job; TEMPER_ENOTFOUND if unknown, 0 with *was (optional) set to
     * the state it had (a finished job keeps its state and outcome). */
    int (*cancel)(struct temper_queue *q, const char *id, enum temper_job_state *was, char *msg, size_t msg_size);
    /* The ids of a batch's jobs in submission order (caller decrefs the array); TEMPER_ENOTFOUND if
     * no job has that batch. */
    int (*batch)(struct temper_queue *q, const char *batch, json_t **ids, char *msg, size_t msg_size);
    /* A cached result for a content key on a device (temper_job_cache_key), or *result NULL. */
    int (*cache_get)(struct temper_queue *q, const char *key, json_t **result, char *msg, size_t msg_size);
    int (*cache_put)(struct temper_queue *q, const char *key, json_t *result, char *msg, size_t msg_size);
    /* A consumer reports itself (at least every few seconds while it lives). */
    int (*beat)(struct temper_queue *q, const struct temper_worker_status *w, char *msg, size_t msg_size);
    /* Consumers that reported within the last max_age_s seconds, as a JSON array of objects with
     * the fields of struct temper_worker_status (caller decrefs). */
    int (*workers)(struct temper_queue *q, int max_age_s, json_t **list, char *msg, size_t msg_size);
    int (*stats)(struct temper_queue *q, struct temper_queue_stats *st, char *msg, size_t msg_size);
    /* The dead letters, oldest first: [{"id", "deliveries", "result"}] (caller decrefs). */
    int (*dead_letters)(struct temper_queue *q, json_t **list, char *msg, size_t msg_size);
    void (*close)(struct temper_queue *q);
};

/* The part every engine's queue object begins with. */
struct temper_queue {
    const struct temper_queue_ops *ops;  /* the engine */
    struct temper_queue_config config;   /* its settings, defaults filled in */
};

/* Opens the engine named by url: "redis://host:port[/db]" (queue_redis.c), else the SQLite queue
 * in the store file at url (NULL: the default store, $TEMPER_HOME/temper.db). config NULL: the
 * defaults. Caller closes with q->ops->close(q). */
int temper_queue_open(const char *url, const struct temper_queue_config *config, struct temper_queue **q,
                      char *msg, size_t msg_size);
int temper_queue_open_local(const char *store_path, const struct temper_queue_config *config,
                            struct temper_queue **q, char *msg, size_t msg_size);
int temper_queue_open_redis(const char *url, const struct temper_queue_config *config, struct temper_queue **q,
                            char *msg, size_t msg_size);

/* The result a job gets when it goes to the dead letters: a runtime_error record in the one form
 * of a result (temper_result_normalize) for the job's task (its item's "task", which the API sets
 * from the candidate's `@temper task` line; "" when the item has none; item borrowed, may be
 * NULL), saying the job was handed to a worker `deliveries` times (the limit is max_deliveries)
 * and each time the worker died before recording its outcome. Caller decrefs; NULL when out of
 * memory. */
json_t *temper_job_dead_result(const char *id, const json_t *item, int deliveries, int max_deliveries);

/* The content key of an item without the device: a hash (hex) of the task's content hash, the
 * source, the knobs (sorted), the options and temper's version. */
int temper_job_content_key(const json_t *item, const char *task_hash, char out[65], char *msg, size_t msg_size);
/* The cache key of a content key on a device: a hash (hex) of both. */
void temper_job_cache_key(const char *content_key, const char *device_key, char out[65]);

#endif
