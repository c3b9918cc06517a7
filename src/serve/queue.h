/* queue.h: where the gym's evaluation jobs wait and where their outcomes land. One interface, two
 * engines behind it: the SQLite store on one machine (queue_local.c, `temper serve` without
 * --redis) and Redis Streams with a consumer group across many machines (queue_redis.c, `temper
 * serve --redis URL` with `temper worker --redis URL` on each GPU machine). The HTTP front end
 * (submit, get, cancel, batches, metrics) and the consumer loop (consumer.h: take, evaluate,
 * complete) use only this interface, and one conformance test runs against both engines.
 *
 * Delivery: at least once, with the outcome recorded exactly once. A consumer takes a job, and
 * the job stays pending under that consumer until complete() has recorded its outcome and then
 * acknowledged it. A consumer is one instance of a named worker: its name in the queue is
 * "NAME@INSTANCE", INSTANCE 16 hex digits drawn by each process (consumer.c).
 *
 * Deaths: a consumer that dies leaves its jobs pending; they are re-queued (never handed to
 * another consumer as they are) when any consumer's take() finds them idle past claim_idle_ms, or
 * held by a consumer that has not reported for a while (the SQLite engine: 10 s), or when a new
 * instance of the same NAME starts (release(): the old instance died, a name being unique among
 * live workers). A live consumer's beats keep its jobs (each beat resets their idle time), so
 * claim_idle_ms need only exceed a few beats. A job re-queued after a death must run alone: it is
 * handed over only to a take() that says its process runs nothing else (TEMPER_TAKE_ALONE), and
 * such a take gets jobs that must run alone first; a take without that flag gets none while one
 * waits, so that busy consumers drain and one runs it. The death that re-queues a job is charged
 * to it only when it ran alone (so a kernel that kills its process takes no honest neighbour to
 * the dead letters: they are re-run alone, not charged); a job charged max_deliveries deaths is
 * not handed over again: the engine records a runtime_error result for it, saying so, and puts
 * it on the dead letters. complete() of a job whose outcome is already recorded changes nothing.
 *
 * Ids: an id names one item and one content key. Submitting a known id with the same item is
 * answered with the existing job; with another item (another source, options or lineage) it is
 * refused, so that no client is ever answered with a result of what another client sent.
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
    int alone;             /* take: 1 when the job must run alone (its holder died before); the
                            * consumer's process runs nothing else until its outcome is recorded */
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
    int max_deliveries;    /* deaths of its holder while it ran alone after which a job goes to the
                            * dead letters [3] */
    int64_t keep_done_s;   /* finished jobs and their outcomes are kept this long [86400] */
};

/* Counts for /metrics and admission control. */
struct temper_queue_stats {
    int64_t queued;        /* jobs waiting */
    int64_t running;       /* jobs taken, outcome not recorded */
    int64_t done;          /* outcomes recorded (kept ones) */
    int64_t failed;        /* jobs failed by temper or its machines (kept ones) */
    int64_t cancelled;     /* jobs cancelled (kept ones) */
    int64_t redeliveries;  /* hand-overs beyond the first (after a death), since the queue was created */
    int64_t dead_letters;  /* jobs put on the dead letters, since the queue was created */
};

/* The longest consumer name: a worker's NAME (128) then '@' and its instance's 16 hex digits. */
#define TEMPER_CONSUMER_MAX 145

/* take()'s flags. */
#define TEMPER_TAKE_ALONE 1 /* the caller's process runs nothing now: a job that must run alone may come */

/* A consumer's last report of itself, for GET /v1/workers. */
struct temper_worker_status {
    char consumer[TEMPER_CONSUMER_MAX + 1]; /* NAME@INSTANCE (NAME: host:pid:device, or --name) */
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
    /* Queues n jobs (the queue copies them), all or none: on any error nothing is queued. For
     * each, existing[i] is 0 when it was queued now, or 1 when the queue knows its id already
     * (any state, until it expires) with the same item and content key: nothing changes for it
     * (a second job of one id in the same call counts alike). TEMPER_EINVALID when a known id
     * (or an earlier one in the call) has another item or content key: existing[i] is 2 for the
     * first such job. TEMPER_ERANGE when the new jobs would put more than max_depth unfinished
     * jobs in the queue (the caller answers 429). */
    int (*submit)(struct temper_queue *q, const struct temper_job *jobs, int n, int *existing, char *msg,
                  size_t msg_size);
    /* Hands a job to consumer, after re-queueing the jobs of consumers found dead (above): with
     * TEMPER_TAKE_ALONE in flags one that must run alone first, else the oldest queued; without
     * it, the oldest queued that may run beside others, and none while one waits to run alone.
     * Waits up to wait_ms for one. *job is NULL when there is none (caller frees it with
     * temper_job_free). Cancelled jobs are never handed over. */
    int (*take)(struct temper_queue *q, const char *consumer, int wait_ms, int flags, struct temper_job **job,
                char *msg, size_t msg_size);
    /* consumer ("NAME@INSTANCE") starts: the jobs held by every other instance of NAME are
     * re-queued at once, as after its death, and those instances are forgotten. */
    int (*release)(struct temper_queue *q, const char *consumer, char *msg, size_t msg_size);
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
    /* The dead letters, oldest first: [{"id", "deliveries", "result"}] (caller decrefs);
     * deliveries counts every hand-over. */
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
 * NULL), saying that its worker died `deaths` times while it ran alone (the limit), in
 * `deliveries` hand-overs. Caller decrefs; NULL when out of memory. */
json_t *temper_job_dead_result(const char *id, const json_t *item, int deaths, int deliveries);

/* 1 when consumer is an instance of name: name, '@', then 16 hex digits. */
int temper_consumer_of(const char *consumer, const char *name, size_t name_len);

/* For tests only: with TEMPER_TEST_WORKER_DIE_ON=TEXT in the environment, a consumer that takes a
 * job whose source contains TEXT kills its own process with SIGKILL, as a kernel that brings its
 * machine down would (consumer.c calls this after each take). */
void temper_job_test_die(const struct temper_job *job);

/* The content key of an item without the device: a hash (hex) of the task's content hash, the
 * source, the knobs (sorted), the options and temper's version. */
int temper_job_content_key(const json_t *item, const char *task_hash, char out[65], char *msg, size_t msg_size);
/* The cache key of a content key on a device: a hash (hex) of both. */
void temper_job_cache_key(const char *content_key, const char *device_key, char out[65]);

#endif
