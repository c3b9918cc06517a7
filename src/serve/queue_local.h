/* queue_local.h: what the SQLite engine's files share (internal to src/serve): the queue object and
 * the helpers around its connection (queue_local_db.c). queue_local.c holds opening, submitting,
 * reading, cancelling, the cache, reports and counts; queue_local_take.c holds taking, completing,
 * and what a consumer's death does to its jobs. */
#ifndef TEMPER_SERVE_QUEUE_LOCAL_H
#define TEMPER_SERVE_QUEUE_LOCAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "serve/queue.h"

#define LOCAL_DEAD_CONSUMER_S 10  /* a consumer silent this long is dead */
#define LOCAL_POLL_MS 250         /* waits look at the file again this often */

/* The engine's queue object. */
struct local_queue {
    struct temper_queue base; /* ops and config: first, so a temper_queue * is one of these */
    sqlite3 *db;              /* its own connection to the store */
    char path[4096];          /* the store file, for messages */
    pthread_mutex_t lock;     /* held around every use of db */
    pthread_cond_t changed;   /* broadcast when a job is queued, finished or cancelled */
    int64_t purged_us;        /* when finished jobs past keep_done_s were last removed */
};

/* CLOCK_REALTIME in microseconds. */
int64_t local_now_us(void);
/* TEMPER_ESTORE with the store, what failed and SQLite's message. */
int local_db_fail(struct local_queue *lq, char *msg, size_t msg_size, const char *what);
/* Prepares sql; NULL on failure (msg filled). */
sqlite3_stmt *local_prep(struct local_queue *lq, const char *sql, char *msg, size_t msg_size);
/* Runs a statement that returns no rows; binds text args (NULL: SQL NULL) then int64 args. */
int local_exec(struct local_queue *lq, const char *sql, const char *const *texts, int ntexts, const int64_t *ints,
               int nints, char *msg, size_t msg_size);
/* Runs sql (statements without parameters); TEMPER_ESTORE naming it on failure. */
int local_exec_sql(struct local_queue *lq, const char *sql, char *msg, size_t msg_size);
/* BEGIN IMMEDIATE. */
int local_begin(struct local_queue *lq, char *msg, size_t msg_size);
/* Commits after err == 0, else rolls back; returns err or the commit's failure. */
int local_end(struct local_queue *lq, int err, char *msg, size_t msg_size);
/* Adds n to the counter name (serve_counters). */
int local_counter_add(struct local_queue *lq, const char *name, int64_t n, char *msg, size_t msg_size);
/* Column 0 of the first row of sql (one optional text parameter), or -1. */
int64_t local_query_i64(struct local_queue *lq, const char *sql, const char *arg);
/* Waits on the condition until it changes, LOCAL_POLL_MS passes or deadline_us (monotonic) comes;
 * 0 once the deadline has passed. Called with the lock held. */
int local_wait_change(struct local_queue *lq, int64_t deadline_us);
/* The monotonic time wait_ms from now, in microseconds. */
int64_t local_deadline_after(int wait_ms);

/* queue_local_take.c: the operations on taken jobs. */
int local_take(struct temper_queue *q, const char *consumer, int wait_ms, int flags, struct temper_job **job,
               char *msg, size_t msg_size);
int local_release(struct temper_queue *q, const char *consumer, char *msg, size_t msg_size);
int local_complete(struct temper_queue *q, const char *consumer, const char *id, enum temper_job_state state,
                   json_t *outcome, char *msg, size_t msg_size);
int local_beat(struct temper_queue *q, const struct temper_worker_status *w, char *msg, size_t msg_size);

#endif
