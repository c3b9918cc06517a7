/* queue_local_take.c: the SQLite engine's taken jobs (queue.h): taking (jobs that must run alone
 * first, and only by a take that may run them), completing, reports, and a consumer's death.
 *
 * A consumer is dead when a take finds one of its jobs idle past claim_idle_ms, when it has not
 * reported for LOCAL_DEAD_CONSUMER_S (on one machine a consumer that stopped reporting died with
 * its process: a server killed and started again gets its jobs back without waiting for the job
 * limit), or when a new instance of its name starts (release). Each job it held is then re-queued
 * to run alone (alone = 1), and charged the death (deaths + 1) only when it was running alone; a
 * job charged max_deliveries deaths gets its dead letter instead. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/queue_local.h"
#include "temper/error.h"

/* Reads the job at rowid into a new struct temper_job. */
static int load_job(struct local_queue *lq, int64_t rowid, struct temper_job **job, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = local_prep(lq, "SELECT id, batch, cache_key, item, submitted_us, deliveries, alone FROM "
                                      "serve_jobs WHERE rowid = ?1", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_int64(st, 1, rowid);
    int err = 0;
    if (sqlite3_step(st) != SQLITE_ROW) {
        err = local_db_fail(lq, msg, msg_size, "reading a job");
    } else {
        struct temper_job *j = calloc(1, sizeof(*j));
        json_error_t jerr;
        if (!j) {
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
        } else {
            snprintf(j->id, sizeof(j->id), "%s", (const char *)sqlite3_column_text(st, 0));
            snprintf(j->batch, sizeof(j->batch), "%s", (const char *)sqlite3_column_text(st, 1));
            snprintf(j->cache_key, sizeof(j->cache_key), "%s", (const char *)sqlite3_column_text(st, 2));
            j->item = json_loads((const char *)sqlite3_column_text(st, 3), 0, &jerr);
            j->submitted_us = sqlite3_column_int64(st, 4);
            j->deliveries = sqlite3_column_int(st, 5);
            j->alone = sqlite3_column_int(st, 6) != 0;
            if (!j->item) {
                err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: job %s: its item is not JSON: %s", lq->path,
                                  j->id, jerr.text);
                temper_job_free(j);
            } else {
                *job = j;
            }
        }
    }
    sqlite3_finalize(st);
    return err;
}

/* Puts a job on the dead letters, with its runtime_error result for the task its item (borrowed;
 * NULL: none) names. */
static int dead_letter(struct local_queue *lq, int64_t rowid, const char *id, const json_t *item, int deaths,
                       int deliveries, char *msg, size_t msg_size)
{
    json_t *r = temper_job_dead_result(id, item, deaths, deliveries);
    char *rt = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    if (!rt)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    int64_t now = local_now_us();
    const char *t[] = {rt};
    int64_t v[] = {now, deaths, rowid};
    int err = local_exec(lq, "UPDATE serve_jobs SET state = 'done', outcome = ?1, finished_us = ?2, deaths = ?3 "
                             "WHERE rowid = ?4", t, 1, v, 3, msg, msg_size);
    if (!err) {
        const char *t2[] = {id, rt};
        int64_t v2[] = {deliveries, now};
        err = local_exec(lq, "INSERT OR REPLACE INTO serve_dead_letters(id, result, deliveries, created_us) "
                             "VALUES (?1, ?2, ?3, ?4)", t2, 2, v2, 2, msg, msg_size);
    }
    free(rt);
    return err ? err : local_counter_add(lq, "dead_letters", 1, msg, msg_size);
}

/* The consumer holding the running job at rowid died (inside a transaction): the job is re-queued
 * to run alone, charged the death if it ran alone, or dead-lettered at max_deliveries deaths. */
static int died(struct local_queue *lq, int64_t rowid, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = local_prep(lq, "SELECT id, item, alone, deaths, deliveries FROM serve_jobs WHERE rowid = ?1 AND "
                                      "state = 'running'", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_int64(st, 1, rowid);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return 0;
    }
    char id[129];
    snprintf(id, sizeof(id), "%s", (const char *)sqlite3_column_text(st, 0));
    const char *text = (const char *)sqlite3_column_text(st, 1);
    json_t *item = text ? json_loads(text, 0, NULL) : NULL; /* not JSON: a result without its task */
    int deaths = sqlite3_column_int(st, 3) + (sqlite3_column_int(st, 2) != 0), deliveries = sqlite3_column_int(st, 4);
    sqlite3_finalize(st);
    int err;
    if (deaths >= lq->base.config.max_deliveries) {
        err = dead_letter(lq, rowid, id, item, deaths, deliveries, msg, msg_size);
    } else {
        int64_t v[] = {deaths, rowid};
        err = local_exec(lq, "UPDATE serve_jobs SET state = 'queued', consumer = NULL, taken_us = NULL, alone = 1, "
                             "deaths = ?1 WHERE rowid = ?2", NULL, 0, v, 2, msg, msg_size);
    }
    json_decref(item);
    return err;
}

/* Re-queues the jobs of consumers found dead (inside a transaction); consumer's own are kept. */
static int recover(struct local_queue *lq, const char *consumer, char *msg, size_t msg_size)
{
    int64_t now = local_now_us();
    for (int n = 0; n < 100000; n++) {
        sqlite3_stmt *st = local_prep(lq,
                                      "SELECT rowid FROM serve_jobs WHERE state = 'running' AND consumer IS NOT ?1 "
                                      "AND (taken_us < ?2 OR consumer NOT IN (SELECT consumer FROM serve_workers "
                                      "WHERE seen_us >= ?3)) ORDER BY rowid LIMIT 1",
                                      msg, msg_size);
        if (!st)
            return TEMPER_ESTORE;
        sqlite3_bind_text(st, 1, consumer, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, now - (int64_t)lq->base.config.claim_idle_ms * 1000);
        sqlite3_bind_int64(st, 3, now - (int64_t)LOCAL_DEAD_CONSUMER_S * 1000000);
        int rc = sqlite3_step(st);
        int64_t rowid = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
            return 0;
        if (rc != SQLITE_ROW)
            return local_db_fail(lq, msg, msg_size, "looking for jobs of dead consumers");
        int err = died(lq, rowid, msg, msg_size);
        if (err)
            return err;
    }
    return 0;
}

/* One attempt at taking a job, inside a transaction: *rowid 0 when none. */
static int take_once(struct local_queue *lq, const char *consumer, int flags, int64_t *rowid, char *msg,
                     size_t msg_size)
{
    *rowid = 0;
    int err = recover(lq, consumer, msg, msg_size);
    if (err)
        return err;
    /* A job that must run alone comes first; while one waits, a take that may not run it gets none. */
    int64_t r = local_query_i64(lq, "SELECT rowid FROM serve_jobs WHERE state = 'queued' AND alone = 1 ORDER BY "
                                    "rowid LIMIT 1", NULL);
    if (r > 0 && !(flags & TEMPER_TAKE_ALONE))
        return 0;
    if (r <= 0)
        r = local_query_i64(lq, "SELECT rowid FROM serve_jobs WHERE state = 'queued' AND alone = 0 ORDER BY rowid "
                                "LIMIT 1", NULL);
    if (r <= 0)
        return 0;
    *rowid = r;
    sqlite3_stmt *st = local_prep(lq, "SELECT deliveries FROM serve_jobs WHERE rowid = ?1", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_int64(st, 1, r);
    int again = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0; /* a hand-over after a death */
    sqlite3_finalize(st);
    const char *t[] = {consumer};
    int64_t v[] = {local_now_us(), r};
    err = local_exec(lq, "UPDATE serve_jobs SET state = 'running', consumer = ?1, taken_us = ?2, "
                         "deliveries = deliveries + 1 WHERE rowid = ?3", t, 1, v, 2, msg, msg_size);
    return err || !again ? err : local_counter_add(lq, "redeliveries", 1, msg, msg_size);
}

int local_take(struct temper_queue *q, const char *consumer, int wait_ms, int flags, struct temper_job **job,
               char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    *job = NULL;
    int64_t deadline = local_deadline_after(wait_ms);
    int err = 0;
    pthread_mutex_lock(&lq->lock);
    for (;;) {
        int64_t rowid = 0;
        err = local_begin(lq, msg, msg_size);
        if (err)
            break;
        err = local_end(lq, take_once(lq, consumer, flags, &rowid, msg, msg_size), msg, msg_size);
        if (err)
            break;
        if (rowid) {
            err = load_job(lq, rowid, job, msg, msg_size);
            break;
        }
        if (!local_wait_change(lq, deadline))
            break;
    }
    pthread_mutex_unlock(&lq->lock);
    return err;
}

int local_release(struct temper_queue *q, const char *consumer, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    const char *at = strrchr(consumer, '@');
    if (!at || !temper_consumer_of(consumer, consumer, (size_t)(at - consumer)))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "'%s' is not a consumer name NAME@INSTANCE", consumer);
    size_t name_len = (size_t)(at - consumer);
    json_t *held = NULL, *x;
    pthread_mutex_lock(&lq->lock);
    int err = local_begin(lq, msg, msg_size);
    sqlite3_stmt *st = err ? NULL : local_prep(lq, "SELECT rowid, consumer FROM serve_jobs WHERE state = 'running' AND "
                                                   "consumer IS NOT ?1", msg, msg_size);
    if (!err && !st)
        err = TEMPER_ESTORE;
    if (st) {
        held = json_array();
        sqlite3_bind_text(st, 1, consumer, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(st, 1);
            if (c && temper_consumer_of(c, consumer, name_len))
                json_array_append_new(held, json_integer(sqlite3_column_int64(st, 0)));
        }
        sqlite3_finalize(st);
    }
    size_t i;
    json_array_foreach(held, i, x) if (!err) err = died(lq, json_integer_value(x), msg, msg_size);
    json_decref(held);
    /* the earlier instances' reports go too: they are not live workers */
    st = err ? NULL : local_prep(lq, "SELECT consumer FROM serve_workers WHERE consumer IS NOT ?1", msg, msg_size);
    if (!err && !st)
        err = TEMPER_ESTORE;
    json_t *gone = st ? json_array() : NULL;
    if (st) {
        sqlite3_bind_text(st, 1, consumer, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(st, 0);
            if (c && temper_consumer_of(c, consumer, name_len))
                json_array_append_new(gone, json_string(c));
        }
        sqlite3_finalize(st);
    }
    json_array_foreach(gone, i, x) if (!err) {
        const char *t[] = {json_string_value(x)};
        err = local_exec(lq, "DELETE FROM serve_workers WHERE consumer = ?1", t, 1, NULL, 0, msg, msg_size);
    }
    json_decref(gone);
    err = local_end(lq, err, msg, msg_size);
    if (!err)
        pthread_cond_broadcast(&lq->changed);
    pthread_mutex_unlock(&lq->lock);
    return err;
}

int local_complete(struct temper_queue *q, const char *consumer, const char *id, enum temper_job_state state,
                   json_t *outcome, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    (void)consumer; /* whoever records first wins: a re-queued job's first consumer may still finish */
    if (state != TEMPER_JOB_DONE && state != TEMPER_JOB_FAILED)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "job %s: an outcome is done or failed, not %s", id,
                           temper_job_state_name(state));
    char *text = json_dumps(outcome, JSON_COMPACT);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory recording job %s", id);
    const char *t[] = {temper_job_state_name(state), text, id};
    int64_t v[] = {local_now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = local_exec(lq, "UPDATE serve_jobs SET state = ?1, outcome = ?2, finished_us = ?4 "
                             "WHERE id = ?3 AND state IN ('queued', 'running')", t, 3, v, 1, msg, msg_size);
    if (!err)
        pthread_cond_broadcast(&lq->changed);
    pthread_mutex_unlock(&lq->lock);
    free(text);
    return err;
}

int local_beat(struct temper_queue *q, const struct temper_worker_status *w, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    const char *t[] = {w->consumer, w->device, w->device_key};
    int64_t v[] = {w->busy, w->jobs_done, w->seen_us ? w->seen_us : local_now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = local_exec(lq, "INSERT OR REPLACE INTO serve_workers(consumer, device, device_key, busy, jobs_done, "
                             "seen_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", t, 3, v, 3, msg, msg_size);
    /* A live consumer keeps its jobs: their idle time starts again (queue.h), as on Redis. */
    if (!err)
        err = local_exec(lq, "UPDATE serve_jobs SET taken_us = ?2 WHERE consumer = ?1 AND state = 'running'", t, 1,
                         v + 2, 1, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    return err;
}
