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
    const char *consumer;            /* its name in the queue (host:pid:device) */
    const char *device;              /* the device spec the session opened ("cuda:0") */
    int in_flight;                   /* jobs submitted to the session at once [8] */
    int beat_ms;                     /* how often it reports itself [2000] */
    atomic_int *stop;                /* set to 1 to stop: jobs in flight finish and are completed */
};

/* Counts a consumer keeps, read by /metrics (updated atomically while it runs). */
struct temper_consumer_counts {
    atomic_llong taken;              /* jobs taken */
    atomic_llong cache_hits;         /* answered from the cache */
    atomic_llong completed;          /* outcomes recorded */
    atomic_llong failed;             /* FAILED outcomes */
    atomic_int busy;                 /* jobs in flight now */
};

/* Runs until *config->stop; returns 0, or an error that stopped it (the queue went away). */
int temper_consumer_run(const struct temper_consumer_config *config, struct temper_consumer_counts *counts,
                        char *msg, size_t msg_size);

#endif
