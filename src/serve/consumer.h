/* consumer.h: the loop that turns queued jobs into results on one device: used by `temper serve`
 * (one consumer thread per local device) and by `temper worker --redis URL` (one per process).
 * It takes jobs from a queue (queue.h), answers repeats from the content cache, evaluates the
 * rest through a libtemper session (several in flight, so compiles overlap the device's runs),
 * and completes each: a candidate's failure is a result with its verdict (DONE); a failure of
 * temper or its machine (the session could not evaluate it: temper_session_result_error) is
 * FAILED with {"kind", "message", "retryable"}. */
#ifndef TEMPER_SERVE_CONSUMER_H
#define TEMPER_SERVE_CONSUMER_H

#include <stdatomic.h>

#include "serve/queue.h"
#include "temper/session.h"

/* What a consumer needs. */
struct temper_consumer_config {
    struct temper_queue *queue;      /* where jobs come from (borrowed) */
    struct temper_session *session;  /* the device's session (borrowed) */
    const char *consumer;            /* its name (host:pid:device, or --name), at most 128 characters: in
                                      * the queue it is NAME@INSTANCE (temper_consumer_instance) */
    const char *device;              /* the device spec the session opened ("cuda:0") */
    int in_flight;                   /* jobs submitted to the session at once [32] */
    int beat_ms;                     /* how often it reports itself [2000] */
    atomic_int *stop;                /* set to 1 to stop: jobs in flight finish and are completed */
    const char *tasks_dir;           /* the session's task path (NULL: the default, temper_tasks_root) */
};

/* Buckets of a duration histogram: upper bounds in seconds (temper_histogram_bounds_s), then +Inf. */
#define TEMPER_HISTOGRAM_BUCKETS 14

/* A duration histogram for /metrics (Prometheus: cumulative when printed). */
struct temper_histogram {
    atomic_llong bucket[TEMPER_HISTOGRAM_BUCKETS + 1]; /* observations per bucket, not cumulative; last: +Inf */
    atomic_llong sum_us;                               /* their sum, microseconds */
    atomic_llong count;                                /* observations */
};

/* The buckets' upper bounds, seconds; a static array of TEMPER_HISTOGRAM_BUCKETS. */
const double *temper_histogram_bounds_s(void);
void temper_histogram_observe(struct temper_histogram *h, double seconds);

/* Verdicts counted per consumer, in this order (the last: a result without one). */
#define TEMPER_CONSUMER_VERDICTS 7
const char *temper_consumer_verdict_name(int i);

/* Counts a consumer keeps, read by /metrics (updated atomically while it runs). */
struct temper_consumer_counts {
    atomic_llong taken;              /* jobs taken */
    atomic_llong cache_hits;         /* answered from the cache */
    atomic_llong completed;          /* outcomes recorded */
    atomic_llong failed;             /* FAILED outcomes */
    atomic_int busy;                 /* jobs in flight now */
    atomic_llong verdicts[TEMPER_CONSUMER_VERDICTS]; /* DONE outcomes by verdict (temper_consumer_verdict_name) */
    struct temper_histogram queue_wait; /* submission to take, seconds */
    struct temper_histogram evaluate;   /* the session's evaluation: submit to result, seconds */
    struct temper_histogram total;      /* submission to outcome recorded, seconds */
};

/* This process's instance: 16 hex digits drawn once per process; a consumer is NAME@INSTANCE in
 * the queue, so that a new process of the same name releases what an earlier one held. */
const char *temper_consumer_instance(void);

/* Releases what earlier instances of its name held (queue.h), then runs until *config->stop;
 * returns 0, or an error that stopped it (the queue went away). Jobs that must run alone run
 * with nothing else in this process (consumer.c). */
int temper_consumer_run(const struct temper_consumer_config *config, struct temper_consumer_counts *counts,
                        char *msg, size_t msg_size);

#endif
