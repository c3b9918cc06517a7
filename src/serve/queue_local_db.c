/* queue_local_db.c: the SQLite engine's connection helpers (queue_local.h), which both its files
 * call: the clock, errors naming the store, statements, transactions, counters, and waiting for a
 * change. queue_local.c (whose operations table points into queue_local_take.c) and
 * queue_local_take.c both depend on this file, and it on neither. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <time.h>

#include "serve/queue_local.h"
#include "temper/error.h"

int64_t local_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int local_db_fail(struct local_queue *lq, char *msg, size_t msg_size, const char *what)
{
    return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: %s", lq->path, what, sqlite3_errmsg(lq->db));
}

sqlite3_stmt *local_prep(struct local_queue *lq, const char *sql, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(lq->db, sql, -1, &st, NULL) != SQLITE_OK) {
        local_db_fail(lq, msg, msg_size, "preparing a queue statement");
        return NULL;
    }
    return st;
}

int local_exec(struct local_queue *lq, const char *sql, const char *const *texts, int ntexts, const int64_t *ints,
               int nints, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = local_prep(lq, sql, msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    for (int i = 0; i < ntexts; i++)
        sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_TRANSIENT);
    for (int i = 0; i < nints; i++)
        sqlite3_bind_int64(st, ntexts + i + 1, ints[i]);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : local_db_fail(lq, msg, msg_size, "writing the queue");
}

int local_exec_sql(struct local_queue *lq, const char *sql, char *msg, size_t msg_size)
{
    return sqlite3_exec(lq->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : local_db_fail(lq, msg, msg_size, sql);
}

int local_begin(struct local_queue *lq, char *msg, size_t msg_size)
{
    return local_exec_sql(lq, "BEGIN IMMEDIATE", msg, msg_size);
}

int local_end(struct local_queue *lq, int err, char *msg, size_t msg_size)
{
    if (err) {
        sqlite3_exec(lq->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    return local_exec_sql(lq, "COMMIT", msg, msg_size);
}

int local_counter_add(struct local_queue *lq, const char *name, int64_t n, char *msg, size_t msg_size)
{
    const char *t[] = {name};
    int64_t v[] = {n};
    return local_exec(lq,
                     "INSERT INTO serve_counters(name, value) VALUES (?1, ?2) "
                     "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                     t, 1, v, 1, msg, msg_size);
}

int64_t local_query_i64(struct local_queue *lq, const char *sql, const char *arg)
{
    sqlite3_stmt *st = local_prep(lq, sql, NULL, 0);
    if (!st)
        return -1;
    if (arg)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

int local_wait_change(struct local_queue *lq, int64_t deadline_us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    if (now >= deadline_us)
        return 0;
    int64_t until = now + LOCAL_POLL_MS * 1000 < deadline_us ? now + LOCAL_POLL_MS * 1000 : deadline_us;
    ts.tv_sec = until / 1000000;
    ts.tv_nsec = (until % 1000000) * 1000;
    pthread_cond_timedwait(&lq->changed, &lq->lock, &ts);
    return 1;
}

int64_t local_deadline_after(int wait_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + (int64_t)(wait_ms > 0 ? wait_ms : 0) * 1000;
}
