/* queue_local.c: the gym's job queue in the SQLite store on one machine (queue.h's "sqlite"
 * engine), for `temper serve` without --redis. Its own connection to the store file (WAL, busy
 * timeout), one lock around it, and a condition variable broadcast on every change so that a
 * long poll (get) or a waiting take wakes at once; they also look again every 250 ms, for changes
 * made by another process on the same file. This file: opening, submitting (one transaction for
 * a whole request), reading, cancelling, the cache, reports and counts; taking and what a
 * consumer's death does are in queue_local_take.c. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/queue_local.h"
#include "temper/error.h"
#include "temper/store.h"

#define LOCAL_PURGE_EVERY_S 60    /* expired jobs are removed at most this often */

static enum temper_job_state state_parse(const char *s)
{
    static const enum temper_job_state all[] = {TEMPER_JOB_QUEUED, TEMPER_JOB_RUNNING, TEMPER_JOB_DONE,
                                                TEMPER_JOB_CANCELLED, TEMPER_JOB_FAILED};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (s && !strcmp(s, temper_job_state_name(all[i])))
            return all[i];
    return TEMPER_JOB_FAILED;
}

static void purge_expired(struct local_queue *lq)
{
    int64_t now = local_now_us();
    if (now - lq->purged_us < (int64_t)LOCAL_PURGE_EVERY_S * 1000000)
        return;
    lq->purged_us = now;
    int64_t cut[] = {now - lq->base.config.keep_done_s * 1000000};
    local_exec(lq, "DELETE FROM serve_jobs WHERE state IN ('done', 'failed', 'cancelled') AND finished_us < ?1", NULL,
              0, cut, 1, NULL, 0);
    local_exec(lq, "DELETE FROM serve_workers WHERE seen_us < ?1", NULL, 0, cut, 1, NULL, 0); /* long gone */
}

/* Whether the job stored under job->id (if any) is job: *known 0 when the id is unknown, 1 when it
 * holds the same item and content key, 2 when it holds another. */
static int known_as(struct local_queue *lq, const struct temper_job *job, int *known, char *msg, size_t msg_size)
{
    *known = 0;
    sqlite3_stmt *st = local_prep(lq, "SELECT item, cache_key FROM serve_jobs WHERE id = ?1", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_text(st, 1, job->id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0), *key = (const char *)sqlite3_column_text(st, 1);
        json_t *item = text ? json_loads(text, 0, NULL) : NULL;
        *known = item && json_equal(item, job->item) && key && !strcmp(key, job->cache_key) ? 1 : 2;
        json_decref(item);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : local_db_fail(lq, msg, msg_size, "reading the queue");
}

/* Inserts one new job (inside the caller's transaction). */
static int insert_job(struct local_queue *lq, const struct temper_job *job, char *msg, size_t msg_size)
{
    char *item = json_dumps(job->item, JSON_COMPACT);
    char *result = job->result ? json_dumps(job->result, JSON_COMPACT) : NULL;
    int err = 0;
    if (!item || (job->result && !result)) {
        err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory queueing job %s", job->id);
    } else {
        int64_t now = local_now_us();
        const char *t[] = {job->id, job->batch, job->cache_key, item, result ? "done" : "queued", result};
        int64_t v[] = {job->submitted_us ? job->submitted_us : now, result ? now : 0};
        err = local_exec(lq,
                         "INSERT INTO serve_jobs(id, batch, cache_key, item, state, outcome, submitted_us, "
                         "finished_us, deliveries) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, nullif(?8, 0), 0)",
                         t, 6, v, 2, msg, msg_size);
    }
    free(item);
    free(result);
    return err;
}

/* All or none in one transaction: a failure at any job (a full disk) rolls every one back. */
static int local_submit(struct temper_queue *q, const struct temper_job *jobs, int n, int *existing, char *msg,
                        size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    for (int i = 0; i < n; i++)
        existing[i] = 0;
    pthread_mutex_lock(&lq->lock);
    purge_expired(lq);
    int err = local_begin(lq, msg, msg_size);
    if (!err) {
        int64_t unfinished = local_query_i64(lq, "SELECT count(*) FROM serve_jobs WHERE state IN ('queued', 'running')",
                                             NULL), before = unfinished;
        if (unfinished < 0)
            err = local_db_fail(lq, msg, msg_size, "counting jobs");
        for (int i = 0; i < n && !err; i++) {
            err = known_as(lq, &jobs[i], &existing[i], msg, msg_size);
            if (err || existing[i] == 1)
                continue;
            if (existing[i] == 2) {
                err = temper_fail(msg, msg_size, TEMPER_EINVALID,
                                  "the id '%s' names a job with another item (source, options or lineage)", jobs[i].id);
                break;
            }
            if (!jobs[i].result && unfinished++ >= q->config.max_depth)
                err = temper_fail(msg, msg_size, TEMPER_ERANGE,
                                  "the queue holds %lld unfinished jobs; the new ones of this request would pass its "
                                  "limit of %lld", (long long)before, (long long)q->config.max_depth);
            if (!err)
                err = insert_job(lq, &jobs[i], msg, msg_size);
        }
        err = local_end(lq, err, msg, msg_size);
    }
    if (!err)
        pthread_cond_broadcast(&lq->changed);
    pthread_mutex_unlock(&lq->lock);
    return err;
}

/* The job's view and whether it is final; *view NULL when unknown. */
static int read_view(struct local_queue *lq, const char *id, json_t **view, int *final, char *msg, size_t msg_size)
{
    *view = NULL;
    *final = 0;
    sqlite3_stmt *st = local_prep(lq, "SELECT state, batch, outcome FROM serve_jobs WHERE id = ?1", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st), err = 0;
    if (rc == SQLITE_ROW) {
        enum temper_job_state s = state_parse((const char *)sqlite3_column_text(st, 0));
        const char *batch = (const char *)sqlite3_column_text(st, 1);
        const char *outcome = (const char *)sqlite3_column_text(st, 2);
        json_t *v = json_pack("{s:s, s:s}", "id", id, "status", temper_job_state_name(s));
        if (v && batch && *batch)
            json_object_set_new(v, "batch", json_string(batch));
        if (v && outcome && (s == TEMPER_JOB_DONE || s == TEMPER_JOB_FAILED)) {
            json_t *o = json_loads(outcome, 0, NULL);
            if (o)
                json_object_set_new(v, s == TEMPER_JOB_DONE ? "result" : "error", o);
        }
        if (!v)
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
        *view = v;
        *final = s == TEMPER_JOB_DONE || s == TEMPER_JOB_FAILED || s == TEMPER_JOB_CANCELLED;
    } else if (rc != SQLITE_DONE) {
        err = local_db_fail(lq, msg, msg_size, "reading a job");
    }
    sqlite3_finalize(st);
    return err;
}

static int local_get(struct temper_queue *q, const char *id, int wait_ms, json_t **view, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    int64_t deadline = local_deadline_after(wait_ms);
    int err, final;
    pthread_mutex_lock(&lq->lock);
    for (;;) {
        err = read_view(lq, id, view, &final, msg, msg_size);
        if (err || !*view || final || !local_wait_change(lq, deadline))
            break;
        json_decref(*view);
        *view = NULL;
    }
    pthread_mutex_unlock(&lq->lock);
    if (!err && !*view)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation has the id '%s'", id);
    return err;
}

static int local_cancel(struct temper_queue *q, const char *id, enum temper_job_state *was, char *msg,
                        size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    pthread_mutex_lock(&lq->lock);
    int err = local_begin(lq, msg, msg_size);
    sqlite3_stmt *st = err ? NULL : local_prep(lq, "SELECT state FROM serve_jobs WHERE id = ?1", msg, msg_size);
    if (!err && !st)
        err = TEMPER_ESTORE;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            enum temper_job_state s = state_parse((const char *)sqlite3_column_text(st, 0));
            if (was)
                *was = s;
            sqlite3_finalize(st);
            st = NULL;
            if (s == TEMPER_JOB_QUEUED || s == TEMPER_JOB_RUNNING) {
                const char *t[] = {id};
                int64_t v[] = {local_now_us()};
                err = local_exec(lq, "UPDATE serve_jobs SET state = 'cancelled', finished_us = ?2 WHERE id = ?1", t,
                                1, v, 1, msg, msg_size);
            }
        } else {
            err = temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation has the id '%s'", id);
        }
        sqlite3_finalize(st);
    }
    if (!err || err == TEMPER_ENOTFOUND) {
        int e2 = local_end(lq, err, msg, msg_size);
        err = err ? err : e2;
        if (!err)
            pthread_cond_broadcast(&lq->changed);
    } else {
        local_end(lq, err, NULL, 0);
    }
    pthread_mutex_unlock(&lq->lock);
    return err;
}

/* Runs sql (one text parameter, optional) and collects column 0 of each row: text as strings, or
 * each row as parsed JSON when json is set. */
static int collect(struct local_queue *lq, const char *sql, const char *arg, json_t **out, char *msg,
                   size_t msg_size)
{
    *out = json_array();
    sqlite3_stmt *st = local_prep(lq, sql, msg, msg_size);
    if (!st || !*out) {
        json_decref(*out);
        *out = NULL;
        return st ? temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory") : TEMPER_ESTORE;
    }
    if (arg)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(*out, json_string((const char *)sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(*out);
        *out = NULL;
        return local_db_fail(lq, msg, msg_size, "reading the queue");
    }
    return 0;
}

static int local_batch(struct temper_queue *q, const char *batch, json_t **ids, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    pthread_mutex_lock(&lq->lock);
    int err = collect(lq, "SELECT id FROM serve_jobs WHERE batch = ?1 ORDER BY rowid", batch, ids, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    if (!err && json_array_size(*ids) == 0) {
        json_decref(*ids);
        *ids = NULL;
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no batch has the id '%s'", batch);
    }
    return err;
}

static int local_cache_get(struct temper_queue *q, const char *key, json_t **result, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    json_t *rows = NULL;
    pthread_mutex_lock(&lq->lock);
    int err = collect(lq, "SELECT result FROM serve_cache WHERE key = ?1", key, &rows, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    *result = NULL;
    if (!err && json_array_size(rows))
        *result = json_loads(json_string_value(json_array_get(rows, 0)), 0, NULL);
    json_decref(rows);
    return err;
}

static int local_cache_put(struct temper_queue *q, const char *key, json_t *result, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    char *text = json_dumps(result, JSON_COMPACT);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory caching a result");
    const char *t[] = {key, text};
    int64_t v[] = {local_now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = local_exec(lq, "INSERT OR REPLACE INTO serve_cache(key, result, created_us) VALUES (?1, ?2, ?3)", t, 2,
                        v, 1, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    free(text);
    return err;
}

static int local_workers(struct temper_queue *q, int max_age_s, json_t **list, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    *list = json_array();
    if (!*list)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    pthread_mutex_lock(&lq->lock);
    sqlite3_stmt *st = local_prep(lq, "SELECT consumer, device, device_key, busy, jobs_done, seen_us FROM serve_workers "
                                "WHERE seen_us >= ?1 ORDER BY consumer", msg, msg_size);
    int rc = SQLITE_ERROR;
    if (st) {
        sqlite3_bind_int64(st, 1, local_now_us() - (int64_t)max_age_s * 1000000);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            json_array_append_new(
                *list, json_pack("{s:s, s:s, s:s, s:b, s:I, s:I}", "consumer", sqlite3_column_text(st, 0), "device",
                                 sqlite3_column_text(st, 1), "device_key", sqlite3_column_text(st, 2), "busy",
                                 sqlite3_column_int(st, 3), "jobs_done", (json_int_t)sqlite3_column_int64(st, 4),
                                 "seen_us", (json_int_t)sqlite3_column_int64(st, 5)));
        sqlite3_finalize(st);
    }
    int err = rc == SQLITE_DONE ? 0 : st ? local_db_fail(lq, msg, msg_size, "reading the workers") : TEMPER_ESTORE;
    pthread_mutex_unlock(&lq->lock);
    if (err) {
        json_decref(*list);
        *list = NULL;
    }
    return err;
}

static int local_stats(struct temper_queue *q, struct temper_queue_stats *s, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    memset(s, 0, sizeof(*s));
    pthread_mutex_lock(&lq->lock);
    sqlite3_stmt *st = local_prep(lq, "SELECT state, count(*) FROM serve_jobs GROUP BY state", msg, msg_size);
    int rc = SQLITE_ERROR;
    if (st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t n = sqlite3_column_int64(st, 1);
            switch (state_parse((const char *)sqlite3_column_text(st, 0))) {
            case TEMPER_JOB_QUEUED: s->queued = n; break;
            case TEMPER_JOB_RUNNING: s->running = n; break;
            case TEMPER_JOB_DONE: s->done = n; break;
            case TEMPER_JOB_CANCELLED: s->cancelled = n; break;
            case TEMPER_JOB_FAILED: s->failed = n; break;
            }
        }
        sqlite3_finalize(st);
    }
    int err = rc == SQLITE_DONE ? 0 : st ? local_db_fail(lq, msg, msg_size, "counting jobs") : TEMPER_ESTORE;
    if (!err) {
        int64_t r = local_query_i64(lq, "SELECT value FROM serve_counters WHERE name = 'redeliveries'", NULL);
        int64_t d = local_query_i64(lq, "SELECT value FROM serve_counters WHERE name = 'dead_letters'", NULL);
        s->redeliveries = r > 0 ? r : 0;
        s->dead_letters = d > 0 ? d : 0;
    }
    pthread_mutex_unlock(&lq->lock);
    return err;
}

static int local_dead_letters(struct temper_queue *q, json_t **list, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    json_t *rows = NULL;
    pthread_mutex_lock(&lq->lock);
    int err = collect(lq, "SELECT json_object('id', id, 'deliveries', deliveries, 'result', json(result)) "
                          "FROM serve_dead_letters ORDER BY created_us, id", NULL, &rows, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    *list = NULL;
    if (err)
        return err;
    *list = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) json_array_append_new(*list, json_loads(json_string_value(row), 0, NULL));
    json_decref(rows);
    return 0;
}

static void local_close(struct temper_queue *q)
{
    struct local_queue *lq = (struct local_queue *)q;
    if (!lq)
        return;
    sqlite3_close(lq->db);
    pthread_mutex_destroy(&lq->lock);
    pthread_cond_destroy(&lq->changed);
    free(lq);
}

static const struct temper_queue_ops local_ops = {
    .engine = "sqlite",
    .submit = local_submit,
    .take = local_take,
    .release = local_release,
    .complete = local_complete,
    .get = local_get,
    .cancel = local_cancel,
    .batch = local_batch,
    .cache_get = local_cache_get,
    .cache_put = local_cache_put,
    .beat = local_beat,
    .workers = local_workers,
    .stats = local_stats,
    .dead_letters = local_dead_letters,
    .close = local_close,
};

static void config_defaults(const struct temper_queue_config *in, struct temper_queue_config *out)
{
    struct temper_queue_config c = {0};
    if (in)
        c = *in;
    c.max_depth = c.max_depth > 0 ? c.max_depth : 10000;
    c.claim_idle_ms = c.claim_idle_ms > 0 ? c.claim_idle_ms : 60000;
    c.max_deliveries = c.max_deliveries > 0 ? c.max_deliveries : 3;
    c.keep_done_s = c.keep_done_s > 0 ? c.keep_done_s : 86400;
    *out = c;
}

int temper_queue_open_local(const char *store_path, const struct temper_queue_config *config,
                            struct temper_queue **q, char *msg, size_t msg_size)
{
    *q = NULL;
    /* The store's own open creates the file and runs every owner's schema steps, the gym's among
     * them (serve_schema.c): the queue's tables come from there, never from here. */
    struct temper_store *store = NULL;
    int err = temper_store_open(store_path, &store, msg, msg_size);
    if (err)
        return err;
    struct local_queue *lq = calloc(1, sizeof(*lq));
    if (!lq) {
        temper_store_close(store);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    }
    snprintf(lq->path, sizeof(lq->path), "%s", temper_store_path(store));
    temper_store_close(store);
    lq->base.ops = &local_ops;
    config_defaults(config, &lq->base.config);
    pthread_mutex_init(&lq->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lq->changed, &ca);
    pthread_condattr_destroy(&ca);
    /* The queue's own connection to the same file, not the store's: a long poll or a waiting take
     * sleeps in pthread_cond_timedwait on lq->lock, so the lock around the connection must be the
     * queue's own (the store's lock is taken and given back inside each of its calls); the queue's
     * transactions (BEGIN IMMEDIATE for a whole request) must not share a connection with the
     * evaluations that consumers record through the store meanwhile; and its one lock serializes
     * every use, so SQLite's own mutex is not needed (NOMUTEX). */
    if (sqlite3_open_v2(lq->path, &lq->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        err = local_db_fail(lq, msg, msg_size, "opening the queue");
    } else {
        sqlite3_busy_timeout(lq->db, 10000);
        err = local_exec_sql(lq, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", msg, msg_size);
    }
    if (err) {
        local_close(&lq->base);
        return err;
    }
    *q = &lq->base;
    return 0;
}
