/* queue_local.c: the gym's job queue in the SQLite store on one machine (queue.h's "sqlite"
 * engine), for `temper serve` without --redis. Its own connection to the store file (WAL, busy
 * timeout), one lock around it, and a condition variable broadcast on every change so that a
 * long poll (get) or a waiting take wakes at once; they also look again every 250 ms, for changes
 * made by another process on the same file.
 *
 * Besides claim_idle_ms, a job pending under a consumer whose reports (beat) stopped more than
 * LOCAL_DEAD_CONSUMER_S ago is claimed at once: on one machine a consumer that stopped reporting
 * died with its process (a server killed and started again takes its jobs back without waiting
 * for the job limit). */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/queue.h"
#include "temper/error.h"
#include "temper/store.h"

#define LOCAL_DEAD_CONSUMER_S 10  /* a consumer silent this long is dead */
#define LOCAL_POLL_MS 250         /* waits look at the file again this often */
#define LOCAL_PURGE_EVERY_S 60    /* expired jobs are removed at most this often */

/* The engine's queue object. */
struct local_queue {
    struct temper_queue base; /* ops and config: first, so a temper_queue * is one of these */
    sqlite3 *db;              /* its own connection to the store */
    char path[4096];          /* the store file, for messages */
    pthread_mutex_t lock;     /* held around every use of db */
    pthread_cond_t changed;   /* broadcast when a job is queued, finished or cancelled */
    int64_t purged_us;        /* when finished jobs past keep_done_s were last removed */
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int db_fail(struct local_queue *lq, char *msg, size_t msg_size, const char *what)
{
    return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: %s", lq->path, what, sqlite3_errmsg(lq->db));
}

/* Prepares sql; NULL on failure (msg filled). */
static sqlite3_stmt *prep(struct local_queue *lq, const char *sql, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(lq->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(lq, msg, msg_size, "preparing a queue statement");
        return NULL;
    }
    return st;
}

/* Runs a statement that returns no rows; binds text args (NULL: SQL NULL) then int64 args. */
static int exec_bind(struct local_queue *lq, const char *sql, const char *const *texts, int ntexts,
                     const int64_t *ints, int nints, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = prep(lq, sql, msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    for (int i = 0; i < ntexts; i++)
        sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_TRANSIENT);
    for (int i = 0; i < nints; i++)
        sqlite3_bind_int64(st, ntexts + i + 1, ints[i]);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(lq, msg, msg_size, "writing the queue");
}

static int exec_sql(struct local_queue *lq, const char *sql, char *msg, size_t msg_size)
{
    return sqlite3_exec(lq->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : db_fail(lq, msg, msg_size, sql);
}

static int begin(struct local_queue *lq, char *msg, size_t msg_size)
{
    return exec_sql(lq, "BEGIN IMMEDIATE", msg, msg_size);
}

/* Commits after err == 0, else rolls back; returns err or the commit's failure. */
static int end(struct local_queue *lq, int err, char *msg, size_t msg_size)
{
    if (err) {
        sqlite3_exec(lq->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    return exec_sql(lq, "COMMIT", msg, msg_size);
}

static int counter_add(struct local_queue *lq, const char *name, int64_t n, char *msg, size_t msg_size)
{
    const char *t[] = {name};
    int64_t v[] = {n};
    return exec_bind(lq,
                     "INSERT INTO serve_counters(name, value) VALUES (?1, ?2) "
                     "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                     t, 1, v, 1, msg, msg_size);
}

static int64_t query_i64(struct local_queue *lq, const char *sql, const char *arg)
{
    sqlite3_stmt *st = prep(lq, sql, NULL, 0);
    if (!st)
        return -1;
    if (arg)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

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
    int64_t now = now_us();
    if (now - lq->purged_us < (int64_t)LOCAL_PURGE_EVERY_S * 1000000)
        return;
    lq->purged_us = now;
    int64_t cut[] = {now - lq->base.config.keep_done_s * 1000000};
    exec_bind(lq, "DELETE FROM serve_jobs WHERE state IN ('done', 'failed', 'cancelled') AND finished_us < ?1", NULL,
              0, cut, 1, NULL, 0);
    exec_bind(lq, "DELETE FROM serve_workers WHERE seen_us < ?1", NULL, 0, cut, 1, NULL, 0); /* long gone */
}

static int local_submit(struct temper_queue *q, const struct temper_job *job, int *existing, char *msg,
                        size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    *existing = 0;
    char *item = json_dumps(job->item, JSON_COMPACT);
    char *result = job->result ? json_dumps(job->result, JSON_COMPACT) : NULL;
    if (!item || (job->result && !result)) {
        free(item);
        free(result);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory queueing job %s", job->id);
    }
    pthread_mutex_lock(&lq->lock);
    purge_expired(lq);
    int err = begin(lq, msg, msg_size);
    if (!err) {
        if (query_i64(lq, "SELECT count(*) FROM serve_jobs WHERE id = ?1", job->id) > 0) {
            *existing = 1;
        } else if (!result && query_i64(lq, "SELECT count(*) FROM serve_jobs WHERE state IN ('queued', 'running')",
                                        NULL) >= q->config.max_depth) {
            err = temper_fail(msg, msg_size, TEMPER_ERANGE, "the queue holds %lld unfinished jobs, its limit",
                              (long long)q->config.max_depth);
        } else {
            int64_t now = now_us();
            const char *t[] = {job->id, job->batch, job->cache_key, item, result ? "done" : "queued", result};
            int64_t v[] = {job->submitted_us ? job->submitted_us : now, result ? now : 0};
            err = exec_bind(lq,
                            "INSERT INTO serve_jobs(id, batch, cache_key, item, state, outcome, submitted_us, "
                            "finished_us, deliveries) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, nullif(?8, 0), 0)",
                            t, 6, v, 2, msg, msg_size);
        }
        err = end(lq, err, msg, msg_size);
    }
    if (!err && !*existing)
        pthread_cond_broadcast(&lq->changed);
    pthread_mutex_unlock(&lq->lock);
    free(item);
    free(result);
    return err;
}

/* Reads the job at rowid into a new struct temper_job. */
static int load_job(struct local_queue *lq, int64_t rowid, struct temper_job **job, char *msg, size_t msg_size)
{
    sqlite3_stmt *st = prep(lq, "SELECT id, batch, cache_key, item, submitted_us, deliveries FROM serve_jobs "
                                "WHERE rowid = ?1", msg, msg_size);
    if (!st)
        return TEMPER_ESTORE;
    sqlite3_bind_int64(st, 1, rowid);
    int err = 0;
    if (sqlite3_step(st) != SQLITE_ROW) {
        err = db_fail(lq, msg, msg_size, "reading a job");
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

/* Puts a job handed over too often on the dead letters, with its runtime_error result for the task
 * its item (borrowed; NULL: none) names. */
static int dead_letter(struct local_queue *lq, int64_t rowid, const char *id, const json_t *item, int deliveries,
                       char *msg, size_t msg_size)
{
    json_t *r = temper_job_dead_result(id, item, deliveries, lq->base.config.max_deliveries);
    char *rt = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    if (!rt)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    int64_t now = now_us();
    const char *t[] = {rt};
    int64_t v[] = {now, rowid};
    int err = exec_bind(lq, "UPDATE serve_jobs SET state = 'done', outcome = ?1, finished_us = ?2 WHERE rowid = ?3",
                        t, 1, v, 2, msg, msg_size);
    if (!err) {
        const char *t2[] = {id, rt};
        int64_t v2[] = {deliveries, now};
        err = exec_bind(lq, "INSERT OR REPLACE INTO serve_dead_letters(id, result, deliveries, created_us) "
                            "VALUES (?1, ?2, ?3, ?4)", t2, 2, v2, 2, msg, msg_size);
    }
    free(rt);
    return err ? err : counter_add(lq, "dead_letters", 1, msg, msg_size);
}

/* One attempt at taking a job, inside a transaction: *rowid 0 when none. */
static int take_once(struct local_queue *lq, const char *consumer, int64_t *rowid, char *msg, size_t msg_size)
{
    *rowid = 0;
    int64_t now = now_us();
    for (;;) { /* claims first; a claim over max_deliveries is dead-lettered and the next looked at */
        sqlite3_stmt *st = prep(lq,
                                "SELECT rowid, id, deliveries, item FROM serve_jobs WHERE state = 'running' AND "
                                "consumer IS NOT ?1 AND (taken_us < ?2 OR consumer NOT IN (SELECT consumer FROM "
                                "serve_workers WHERE seen_us >= ?3)) ORDER BY rowid LIMIT 1",
                                msg, msg_size);
        if (!st)
            return TEMPER_ESTORE;
        sqlite3_bind_text(st, 1, consumer, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, now - (int64_t)lq->base.config.claim_idle_ms * 1000);
        sqlite3_bind_int64(st, 3, now - (int64_t)LOCAL_DEAD_CONSUMER_S * 1000000);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
            sqlite3_finalize(st);
            if (rc != SQLITE_DONE)
                return db_fail(lq, msg, msg_size, "looking for jobs to claim");
            break;
        }
        int64_t r = sqlite3_column_int64(st, 0);
        char id[129];
        snprintf(id, sizeof(id), "%s", (const char *)sqlite3_column_text(st, 1));
        int deliveries = sqlite3_column_int(st, 2);
        if (deliveries >= lq->base.config.max_deliveries) {
            const char *text = (const char *)sqlite3_column_text(st, 3);
            json_t *item = text ? json_loads(text, 0, NULL) : NULL; /* not JSON: a result without its task */
            sqlite3_finalize(st);
            int err = dead_letter(lq, r, id, item, deliveries, msg, msg_size);
            json_decref(item);
            if (err)
                return err;
            continue;
        }
        sqlite3_finalize(st);
        *rowid = r;
        int err = counter_add(lq, "redeliveries", 1, msg, msg_size);
        if (err)
            return err;
        break;
    }
    if (!*rowid) {
        int64_t r = query_i64(lq, "SELECT rowid FROM serve_jobs WHERE state = 'queued' ORDER BY rowid LIMIT 1", NULL);
        if (r <= 0)
            return 0;
        *rowid = r;
    }
    const char *t[] = {consumer};
    int64_t v[] = {now, *rowid};
    return exec_bind(lq, "UPDATE serve_jobs SET state = 'running', consumer = ?1, taken_us = ?2, "
                         "deliveries = deliveries + 1 WHERE rowid = ?3", t, 1, v, 2, msg, msg_size);
}

/* Waits on the condition until it changes, LOCAL_POLL_MS passes or deadline_us (monotonic) comes;
 * 0 once the deadline has passed. Called with the lock held. */
static int wait_change(struct local_queue *lq, int64_t deadline_us)
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

static int64_t deadline_after(int wait_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + (int64_t)(wait_ms > 0 ? wait_ms : 0) * 1000;
}

static int local_take(struct temper_queue *q, const char *consumer, int wait_ms, struct temper_job **job, char *msg,
                      size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    *job = NULL;
    int64_t deadline = deadline_after(wait_ms);
    int err = 0;
    pthread_mutex_lock(&lq->lock);
    for (;;) {
        int64_t rowid = 0;
        err = begin(lq, msg, msg_size);
        if (err)
            break;
        err = end(lq, take_once(lq, consumer, &rowid, msg, msg_size), msg, msg_size);
        if (err)
            break;
        if (rowid) {
            err = load_job(lq, rowid, job, msg, msg_size);
            break;
        }
        if (!wait_change(lq, deadline))
            break;
    }
    pthread_mutex_unlock(&lq->lock);
    return err;
}

static int local_complete(struct temper_queue *q, const char *consumer, const char *id, enum temper_job_state state,
                          json_t *outcome, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    (void)consumer; /* whoever records first wins: a claimed job's first consumer may still finish */
    if (state != TEMPER_JOB_DONE && state != TEMPER_JOB_FAILED)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "job %s: an outcome is done or failed, not %s", id,
                           temper_job_state_name(state));
    char *text = json_dumps(outcome, JSON_COMPACT);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory recording job %s", id);
    const char *t[] = {temper_job_state_name(state), text, id};
    int64_t v[] = {now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = exec_bind(lq, "UPDATE serve_jobs SET state = ?1, outcome = ?2, finished_us = ?4 "
                            "WHERE id = ?3 AND state = 'running'", t, 3, v, 1, msg, msg_size);
    if (!err)
        pthread_cond_broadcast(&lq->changed);
    pthread_mutex_unlock(&lq->lock);
    free(text);
    return err;
}

/* The job's view and whether it is final; *view NULL when unknown. */
static int read_view(struct local_queue *lq, const char *id, json_t **view, int *final, char *msg, size_t msg_size)
{
    *view = NULL;
    *final = 0;
    sqlite3_stmt *st = prep(lq, "SELECT state, batch, outcome FROM serve_jobs WHERE id = ?1", msg, msg_size);
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
        err = db_fail(lq, msg, msg_size, "reading a job");
    }
    sqlite3_finalize(st);
    return err;
}

static int local_get(struct temper_queue *q, const char *id, int wait_ms, json_t **view, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    int64_t deadline = deadline_after(wait_ms);
    int err, final;
    pthread_mutex_lock(&lq->lock);
    for (;;) {
        err = read_view(lq, id, view, &final, msg, msg_size);
        if (err || !*view || final || !wait_change(lq, deadline))
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
    int err = begin(lq, msg, msg_size);
    sqlite3_stmt *st = err ? NULL : prep(lq, "SELECT state FROM serve_jobs WHERE id = ?1", msg, msg_size);
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
                int64_t v[] = {now_us()};
                err = exec_bind(lq, "UPDATE serve_jobs SET state = 'cancelled', finished_us = ?2 WHERE id = ?1", t,
                                1, v, 1, msg, msg_size);
            }
        } else {
            err = temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation has the id '%s'", id);
        }
        sqlite3_finalize(st);
    }
    if (!err || err == TEMPER_ENOTFOUND) {
        int e2 = end(lq, err, msg, msg_size);
        err = err ? err : e2;
        if (!err)
            pthread_cond_broadcast(&lq->changed);
    } else {
        end(lq, err, NULL, 0);
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
    sqlite3_stmt *st = prep(lq, sql, msg, msg_size);
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
        return db_fail(lq, msg, msg_size, "reading the queue");
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
    int64_t v[] = {now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = exec_bind(lq, "INSERT OR REPLACE INTO serve_cache(key, result, created_us) VALUES (?1, ?2, ?3)", t, 2,
                        v, 1, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    free(text);
    return err;
}

static int local_beat(struct temper_queue *q, const struct temper_worker_status *w, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    const char *t[] = {w->consumer, w->device, w->device_key};
    int64_t v[] = {w->busy, w->jobs_done, w->seen_us ? w->seen_us : now_us()};
    pthread_mutex_lock(&lq->lock);
    int err = exec_bind(lq, "INSERT OR REPLACE INTO serve_workers(consumer, device, device_key, busy, jobs_done, "
                            "seen_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", t, 3, v, 3, msg, msg_size);
    /* A live consumer keeps its jobs: their idle time starts again (queue.h), as on Redis. */
    if (!err)
        err = exec_bind(lq, "UPDATE serve_jobs SET taken_us = ?2 WHERE consumer = ?1 AND state = 'running'", t, 1,
                        v + 2, 1, msg, msg_size);
    pthread_mutex_unlock(&lq->lock);
    return err;
}

static int local_workers(struct temper_queue *q, int max_age_s, json_t **list, char *msg, size_t msg_size)
{
    struct local_queue *lq = (struct local_queue *)q;
    *list = json_array();
    if (!*list)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    pthread_mutex_lock(&lq->lock);
    sqlite3_stmt *st = prep(lq, "SELECT consumer, device, device_key, busy, jobs_done, seen_us FROM serve_workers "
                                "WHERE seen_us >= ?1 ORDER BY consumer", msg, msg_size);
    int rc = SQLITE_ERROR;
    if (st) {
        sqlite3_bind_int64(st, 1, now_us() - (int64_t)max_age_s * 1000000);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            json_array_append_new(
                *list, json_pack("{s:s, s:s, s:s, s:b, s:I, s:I}", "consumer", sqlite3_column_text(st, 0), "device",
                                 sqlite3_column_text(st, 1), "device_key", sqlite3_column_text(st, 2), "busy",
                                 sqlite3_column_int(st, 3), "jobs_done", (json_int_t)sqlite3_column_int64(st, 4),
                                 "seen_us", (json_int_t)sqlite3_column_int64(st, 5)));
        sqlite3_finalize(st);
    }
    int err = rc == SQLITE_DONE ? 0 : st ? db_fail(lq, msg, msg_size, "reading the workers") : TEMPER_ESTORE;
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
    sqlite3_stmt *st = prep(lq, "SELECT state, count(*) FROM serve_jobs GROUP BY state", msg, msg_size);
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
    int err = rc == SQLITE_DONE ? 0 : st ? db_fail(lq, msg, msg_size, "counting jobs") : TEMPER_ESTORE;
    if (!err) {
        int64_t r = query_i64(lq, "SELECT value FROM serve_counters WHERE name = 'redeliveries'", NULL);
        int64_t d = query_i64(lq, "SELECT value FROM serve_counters WHERE name = 'dead_letters'", NULL);
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
    /* The store's own open creates the file and runs the migrations (the queue's tables are one). */
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
    if (sqlite3_open_v2(lq->path, &lq->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        err = db_fail(lq, msg, msg_size, "opening the queue");
    } else {
        sqlite3_busy_timeout(lq->db, 10000);
        err = exec_sql(lq, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", msg, msg_size);
    }
    if (err) {
        local_close(&lq->base);
        return err;
    }
    *q = &lq->base;
    return 0;
}
