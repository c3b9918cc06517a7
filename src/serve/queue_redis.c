/* queue_redis.c: the Redis Streams engine of queue.h, for `temper serve --redis URL` and `temper
 * worker --redis URL` on many machines. Job ids go on one stream read by one consumer group; each
 * job's body, state and outcome live in a hash; every change of state is one Lua script, which
 * Redis runs atomically, so that a crash of any process at any point leaves each job either
 * before or after the change, never half way (docs/queue-redis.md lists the keys and the order).
 * Needs one Redis server (not Redis Cluster: the scripts touch keys they compute), 6.2 or later
 * (XAUTOCLAIM). Threads: each call borrows a connection from a small pool, so that a blocking
 * take or get holds only its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/queue_redis.h"
#include "temper/error.h"
#include "temper/result.h"

/* The states as stored in a job's hash (the API's names). */
static const char *const state_names[] = {"queued", "running", "done", "cancelled", "failed"};

static const char *state_name(enum temper_job_state s)
{
    return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "unknown";
}

static int state_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++)
        if (!strcmp(name, state_names[i]))
            return (int)i;
    return -1;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void key(const struct redis_queue *q, char *out, size_t size, const char *what, const char *id)
{
    snprintf(out, size, "%s:%s%s%s", q->prefix, what, id ? ":" : "", id ? id : "");
}

static int id_ok(const char *id, char *msg, size_t msg_size)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 128)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a job id must have 1 to 128 characters");
    return 0;
}

static char *i64(char *buf, int64_t v)
{
    sprintf(buf, "%lld", (long long)v);
    return buf;
}

/* ---- the operations ---- */

static int r_submit(struct temper_queue *base, const struct temper_job *jobs, int n, int *existing, char *msg,
                    size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    for (int i = 0; i < n; i++) {
        existing[i] = 0;
        if (id_ok(jobs[i].id, msg, msg_size))
            return TEMPER_EINVALID;
        if (!jobs[i].item)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "job %s has no item", jobs[i].id);
    }
    /* One script for the whole request: all or none. Items are compared as text, so each is
     * written one way (keys sorted). */
    const char **a = calloc((size_t)n * 6 + 3, sizeof(*a));
    char **owned = calloc((size_t)n * 3 + 1, sizeof(*owned)), depth[24], now[24], keep[24];
    int err = a && owned ? 0 : temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    if (!err) {
        a[0] = i64(depth, base->config.max_depth);
        a[1] = i64(now, now_us());
        a[2] = i64(keep, base->config.keep_done_s);
    }
    for (int i = 0; i < n && !err; i++) {
        const struct temper_job *job = &jobs[i];
        char *item = json_dumps(job->item, JSON_COMPACT | JSON_SORT_KEYS);
        char *result = job->result ? json_dumps(job->result, JSON_COMPACT) : strdup("");
        char *sub = malloc(24);
        owned[3 * i] = item;
        owned[3 * i + 1] = result;
        owned[3 * i + 2] = sub;
        if (!item || !result || !sub) {
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
            break;
        }
        const char **b = a + 3 + 6 * i;
        b[0] = job->id;
        b[1] = job->batch;
        b[2] = job->cache_key;
        b[3] = item;
        b[4] = i64(sub, job->submitted_us ? job->submitted_us : now_us());
        b[5] = result;
    }
    redisReply *r = NULL;
    if (!err)
        err = redis_run(q, SCRIPT_SUBMIT, 3 + 6 * n, a, &r, msg, msg_size);
    for (int i = 0; owned && i < 3 * n; i++)
        free(owned[i]);
    free(owned);
    free(a);
    if (err)
        return err;
    long long code = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 ? r->element[0]->integer : -1;
    if (code == 0 && r->elements == (size_t)n + 1) {
        for (int i = 0; i < n; i++)
            existing[i] = r->element[i + 1]->integer == 1;
    } else if (code == 2) {
        err = temper_fail(msg, msg_size, TEMPER_ERANGE,
                          "the queue would hold more than %lld unfinished jobs, its limit: try again later",
                          (long long)base->config.max_depth);
    } else if (code == 3 && r->elements == 2 && r->element[1]->integer >= 0 && r->element[1]->integer < n) {
        int i = (int)r->element[1]->integer;
        existing[i] = 2;
        err = temper_fail(msg, msg_size, TEMPER_EINVALID,
                          "the id '%s' names a job with another item (source, options or lineage)", jobs[i].id);
    } else {
        err = temper_fail(msg, msg_size, TEMPER_EIO, "redis: the submit script answered something unexpected");
    }
    freeReplyObject(r);
    return err;
}

/* Builds the job handed over from MARK's reply {item, batch, cache_key, submitted_us, alone,
 * deliveries}. */
static int job_make(const char *id, redisReply *r, struct temper_job **out, char *msg, size_t msg_size)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 6 || r->element[0]->type != REDIS_REPLY_STRING)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "redis: job %s has no item", id);
    struct temper_job *j = calloc(1, sizeof(*j));
    if (!j)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    json_error_t jerr;
    j->item = json_loads(r->element[0]->str, 0, &jerr);
    if (!j->item) {
        free(j);
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "redis: job %s: its item is not JSON: %s", id, jerr.text);
    }
    snprintf(j->id, sizeof(j->id), "%s", id);
    if (r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(j->batch, sizeof(j->batch), "%s", r->element[1]->str);
    if (r->element[2]->type == REDIS_REPLY_STRING)
        snprintf(j->cache_key, sizeof(j->cache_key), "%s", r->element[2]->str);
    if (r->element[3]->type == REDIS_REPLY_STRING)
        j->submitted_us = strtoll(r->element[3]->str, NULL, 10);
    j->alone = r->element[4]->type == REDIS_REPLY_STRING && !strcmp(r->element[4]->str, "1");
    j->deliveries = (int)r->element[5]->integer;
    *out = j;
    return 0;
}

/* Records the dead letter of an entry RECOVER or RELEASE found due for it: d is {sid, id, stream,
 * deaths, deliveries}; the entry is pending under the caller. */
static int dead_letter(struct redis_queue *q, redisContext *c, redisReply *d, char *msg, size_t msg_size)
{
    if (d->type != REDIS_REPLY_ARRAY || d->elements != 5)
        return temper_fail(msg, msg_size, TEMPER_EIO, "redis: a dead entry came in an unexpected form");
    const char *sid = d->element[0]->str, *id = d->element[1]->str, *stream = d->element[2]->str;
    int deaths = (int)d->element[3]->integer, deliveries = (int)d->element[4]->integer;
    /* One more read, on this rare path: the item names the job's task, for its result. */
    char jk[200];
    key(q, jk, sizeof(jk), "job", id);
    const char *h[] = {"HGET", jk, "item"};
    redisReply *ir = redis_command(c, 3, h, NULL, msg, msg_size);
    if (!ir)
        return TEMPER_EIO;
    json_t *item = ir->type == REDIS_REPLY_STRING ? json_loads(ir->str, 0, NULL) : NULL; /* none: no task */
    freeReplyObject(ir);
    json_t *res = temper_job_dead_result(id, item, deaths, deliveries);
    json_decref(item);
    char *text = res ? json_dumps(res, JSON_COMPACT) : NULL;
    json_decref(res);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    char nd[24], nv[24], now[24], keep[24];
    const char *a[] = {id, sid, stream, i64(nd, deaths), i64(nv, deliveries), text, i64(now, now_us()),
                       i64(keep, q->base.config.keep_done_s)};
    redisReply *r = redis_script(q, c, SCRIPT_DEAD, 8, a, msg, msg_size);
    free(text);
    if (!r)
        return TEMPER_EIO;
    freeReplyObject(r);
    return 0;
}

/* Reads one new entry of stream name ("jobs" or "alone") for consumer, blocking up to block_ms (0:
 * not at all), and hands its job over (MARK). *got is 1 when an entry came (handed over or not). */
static int read_one(struct redis_queue *q, redisContext *c, const char *consumer, const char *name, int block_ms,
                    struct temper_job **job, int *got, char *msg, size_t msg_size)
{
    char stream[160], block[24];
    key(q, stream, sizeof(stream), name, NULL);
    const char *x[] = {"XREADGROUP", "GROUP", REDIS_GROUP, consumer, "COUNT", "1", "BLOCK", i64(block, block_ms),
                       "STREAMS", stream, ">"};
    const char *y[] = {"XREADGROUP", "GROUP", REDIS_GROUP, consumer, "COUNT", "1", "STREAMS", stream, ">"};
    redisReply *r = block_ms > 0 ? redis_command(c, 11, x, NULL, msg, msg_size) : redis_command(c, 9, y, NULL, msg, msg_size);
    if (!r)
        return TEMPER_EIO;
    int err = 0;
    *got = 0;
    /* [[stream, [[sid, [field, value, ...]]]]] */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->elements == 2 &&
        r->element[0]->element[1]->elements >= 1) {
        redisReply *e = r->element[0]->element[1]->element[0];
        const char *id = NULL;
        if (e->elements == 2 && e->element[1]->type == REDIS_REPLY_ARRAY)
            for (size_t i = 0; i + 1 < e->element[1]->elements; i += 2)
                if (!strcmp(e->element[1]->element[i]->str, "id"))
                    id = e->element[1]->element[i + 1]->str;
        *got = 1;
        if (id) {
            const char *a[] = {id, e->element[0]->str, consumer, name};
            redisReply *m = redis_script(q, c, SCRIPT_MARK, 4, a, msg, msg_size);
            if (!m)
                err = TEMPER_EIO;
            else if (m->type != REDIS_REPLY_NIL)
                err = job_make(id, m, job, msg, msg_size);
            if (m)
                freeReplyObject(m);
        }
    }
    freeReplyObject(r);
    return err;
}

/* One attempt: re-queues what dead consumers held (RECOVER), then a job that must run alone when
 * flags allow it, else a new one, waiting up to block_ms for it. *got is 1 when an entry was found
 * (handed over or not), or a dead letter recorded. */
static int take_once(struct redis_queue *q, redisContext *c, const char *consumer, int flags, int block_ms,
                     struct temper_job **job, int *got, char *msg, size_t msg_size)
{
    char idle[24], max[24];
    const char *a[] = {consumer, i64(idle, q->base.config.claim_idle_ms), i64(max, q->base.config.max_deliveries)};
    redisReply *r = redis_script(q, c, SCRIPT_RECOVER, 3, a, msg, msg_size);
    if (!r)
        return TEMPER_EIO;
    int err = 0;
    long long waiting = 0;
    *got = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_ARRAY) {
        *got = 1;
        err = dead_letter(q, c, r->element[0], msg, msg_size);
        freeReplyObject(r);
        return err;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        waiting = r->element[1]->integer;
    freeReplyObject(r);
    if (waiting > 0 && (flags & TEMPER_TAKE_ALONE)) {
        err = read_one(q, c, consumer, "alone", 0, job, got, msg, msg_size);
        if (err || *got)
            return err;
    } else if (waiting > 0) {
        /* a job waits to run alone: this consumer takes nothing beside, so that one drains */
        struct timespec ts = {block_ms / 1000, (long)(block_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        return 0;
    }
    return read_one(q, c, consumer, "jobs", block_ms, job, got, msg, msg_size);
}

static int r_take(struct temper_queue *base, const char *consumer, int wait_ms, int flags, struct temper_job **job,
                  char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *job = NULL;
    if (!consumer || !*consumer || strlen(consumer) > TEMPER_CONSUMER_MAX)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a consumer name must have 1 to %d characters",
                           TEMPER_CONSUMER_MAX);
    redisContext *c;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    /* Block in slices so that entries becoming idle while nothing new comes are seen. */
    int slice = base->config.claim_idle_ms / 2;
    slice = slice < 50 ? 50 : slice > 1000 ? 1000 : slice;
    int64_t deadline = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    for (;;) {
        int64_t left = deadline - mono_ms();
        int got = 0;
        err = take_once(q, c, consumer, flags, left <= 0 ? 0 : (int)(left < slice ? left : slice), job, &got, msg,
                        msg_size);
        if (err || *job || (!got && mono_ms() >= deadline))
            break;
    }
    redis_conn_put(q, c, err == TEMPER_EIO);
    return err;
}

static int r_release(struct temper_queue *base, const char *consumer, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    const char *at = strrchr(consumer, '@');
    if (strlen(consumer) > TEMPER_CONSUMER_MAX || !at || !temper_consumer_of(consumer, consumer, (size_t)(at - consumer)))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "'%s' is not a consumer name NAME@INSTANCE", consumer);
    redisContext *c;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    char max[24];
    const char *a[] = {consumer, i64(max, base->config.max_deliveries)};
    redisReply *r = redis_script(q, c, SCRIPT_RELEASE, 2, a, msg, msg_size);
    if (!r)
        err = TEMPER_EIO;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements && !err; i++)
        err = dead_letter(q, c, r->element[i], msg, msg_size);
    if (r)
        freeReplyObject(r);
    redis_conn_put(q, c, err == TEMPER_EIO);
    return err;
}

static int r_complete(struct temper_queue *base, const char *consumer, const char *id, enum temper_job_state state,
                      json_t *outcome, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    (void)consumer; /* whoever holds the entry: an outcome recorded by any is the one */
    if (id_ok(id, msg, msg_size))
        return TEMPER_EINVALID;
    if (state != TEMPER_JOB_DONE && state != TEMPER_JOB_FAILED)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "job %s: an outcome is done or failed, not %s", id,
                           state_name(state));
    char *text = outcome ? json_dumps(outcome, JSON_COMPACT) : strdup("null");
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    char now[24], keep[24];
    const char *a[] = {id, state_name(state), text, i64(now, now_us()), i64(keep, base->config.keep_done_s)};
    redisReply *r;
    int err = redis_run(q, SCRIPT_COMPLETE, 5, a, &r, msg, msg_size);
    free(text);
    if (err)
        return err;
    long long v = r->integer;
    freeReplyObject(r);
    return v < 0 ? temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "job %s is unknown (or expired)", id) : 0;
}

/* The view of a job from HMGET {state, batch, outcome}; NULL if it is unknown. */
static json_t *view_make(const char *id, redisReply *r, int *finished)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING)
        return NULL;
    int st = state_parse(r->element[0]->str);
    *finished = st == TEMPER_JOB_DONE || st == TEMPER_JOB_FAILED || st == TEMPER_JOB_CANCELLED;
    json_t *v = json_pack("{s:s, s:s}", "id", id, "status", r->element[0]->str);
    if (r->element[1]->type == REDIS_REPLY_STRING && r->element[1]->str[0])
        json_object_set_new(v, "batch", json_string(r->element[1]->str));
    if ((st == TEMPER_JOB_DONE || st == TEMPER_JOB_FAILED) && r->element[2]->type == REDIS_REPLY_STRING) {
        json_t *o = json_loads(r->element[2]->str, JSON_DECODE_ANY, NULL);
        if (o)
            json_object_set_new(v, st == TEMPER_JOB_DONE ? "result" : "error", o);
    }
    return v;
}

static int r_get(struct temper_queue *base, const char *id, int wait_ms, json_t **view, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *view = NULL;
    if (id_ok(id, msg, msg_size))
        return TEMPER_EINVALID;
    char jk[200], nk[200];
    key(q, jk, sizeof(jk), "job", id);
    key(q, nk, sizeof(nk), "notify", id);
    redisContext *c;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    int64_t deadline = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    for (;;) {
        const char *a[] = {"HMGET", jk, "state", "batch", "outcome"};
        redisReply *r = redis_command(c, 5, a, NULL, msg, msg_size);
        if (!r) {
            err = TEMPER_EIO;
            break;
        }
        int finished = 0;
        json_t *v = view_make(id, r, &finished);
        freeReplyObject(r);
        if (!v) {
            err = temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "job %s is unknown (or expired)", id);
            break;
        }
        int64_t left = deadline - mono_ms();
        if (finished || left <= 0) {
            *view = v;
            break;
        }
        json_decref(v);
        /* Wait for the finish token. Rotating it (pop from the tail, push to the head of the same
         * list) leaves it for every other waiter, and a token pushed before this wait still counts. */
        char secs[32];
        snprintf(secs, sizeof(secs), "%.3f", (double)(left < REDIS_BLOCK_MS ? left : REDIS_BLOCK_MS) / 1000.0);
        const char *b[] = {"BRPOPLPUSH", nk, nk, secs};
        if (!(r = redis_command(c, 4, b, NULL, msg, msg_size))) {
            err = TEMPER_EIO;
            break;
        }
        freeReplyObject(r);
    }
    redis_conn_put(q, c, err == TEMPER_EIO);
    return err;
}

static int r_cancel(struct temper_queue *base, const char *id, enum temper_job_state *was, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    if (id_ok(id, msg, msg_size))
        return TEMPER_EINVALID;
    char now[24], keep[24];
    const char *a[] = {id, i64(now, now_us()), i64(keep, base->config.keep_done_s)};
    redisReply *r;
    int err = redis_run(q, SCRIPT_CANCEL, 3, a, &r, msg, msg_size);
    if (err)
        return err;
    int st = r->type == REDIS_REPLY_STRING ? state_parse(r->str) : -1;
    freeReplyObject(r);
    if (st < 0)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "job %s is unknown (or expired)", id);
    if (was)
        *was = (enum temper_job_state)st;
    return 0;
}

static int r_batch(struct temper_queue *base, const char *batch, json_t **ids, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *ids = NULL;
    if (id_ok(batch, msg, msg_size))
        return TEMPER_EINVALID;
    char bk[200];
    key(q, bk, sizeof(bk), "batch", batch);
    const char *a[] = {"LRANGE", bk, "0", "-1"};
    redisReply *r;
    int err = redis_simple(q, 4, a, &r, msg, msg_size);
    if (err)
        return err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        freeReplyObject(r);
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "batch %s is unknown (or expired)", batch);
    }
    *ids = json_array();
    for (size_t i = 0; i < r->elements; i++)
        json_array_append_new(*ids, json_string(r->element[i]->str));
    freeReplyObject(r);
    return 0;
}

static int r_cache_get(struct temper_queue *base, const char *k, json_t **result, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *result = NULL;
    char ck[200];
    key(q, ck, sizeof(ck), "cache", k);
    const char *a[] = {"GET", ck};
    redisReply *r;
    int err = redis_simple(q, 2, a, &r, msg, msg_size);
    if (err)
        return err;
    if (r->type == REDIS_REPLY_STRING)
        *result = json_loads(r->str, 0, NULL); /* a damaged entry is a miss */
    freeReplyObject(r);
    return 0;
}

static int r_cache_put(struct temper_queue *base, const char *k, json_t *result, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    char ck[200], ttl[24];
    key(q, ck, sizeof(ck), "cache", k);
    char *text = json_dumps(result, JSON_COMPACT);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    const char *a[] = {"SET", ck, text, "EX", i64(ttl, q->cache_ttl_s)};
    redisReply *r;
    int err = redis_simple(q, 5, a, &r, msg, msg_size);
    free(text);
    if (!err)
        freeReplyObject(r);
    return err;
}

static int r_beat(struct temper_queue *base, const struct temper_worker_status *w, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    if (!w->consumer[0] || strlen(w->consumer) > TEMPER_CONSUMER_MAX)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a consumer name must have 1 to %d characters",
                           TEMPER_CONSUMER_MAX);
    int64_t now = w->seen_us ? w->seen_us : now_us();
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:I, s:I}", "consumer", w->consumer, "device", w->device, "device_key",
                          w->device_key, "busy", w->busy != 0, "jobs_done", (json_int_t)w->jobs_done, "seen_us",
                          (json_int_t)now);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    char nb[24], keep[24];
    const char *a[] = {w->consumer, text, i64(nb, now), i64(keep, REDIS_WORKER_KEEP_S)};
    redisReply *r;
    int err = redis_run(q, SCRIPT_BEAT, 4, a, &r, msg, msg_size);
    free(text);
    if (err)
        return err;
    freeReplyObject(r);
    return 0;
}

static int r_workers(struct temper_queue *base, int max_age_s, json_t **list, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *list = NULL;
    char zk[160], since[24];
    key(q, zk, sizeof(zk), "workers", NULL);
    const char *a[] = {"ZRANGEBYSCORE", zk, i64(since, now_us() - (int64_t)max_age_s * 1000000), "+inf"};
    redisContext *c;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    redisReply *r = redis_command(c, 4, a, NULL, msg, msg_size);
    json_t *out = json_array();
    for (size_t i = 0; r && i < r->elements; i++) {
        char wk[200];
        key(q, wk, sizeof(wk), "worker", r->element[i]->str);
        const char *g[] = {"GET", wk};
        redisReply *w = redis_command(c, 2, g, NULL, msg, msg_size);
        if (!w) {
            freeReplyObject(r);
            r = NULL;
            break;
        }
        json_t *o = w->type == REDIS_REPLY_STRING ? json_loads(w->str, 0, NULL) : NULL;
        if (o)
            json_array_append_new(out, o);
        freeReplyObject(w);
    }
    redis_conn_put(q, c, !r);
    if (!r) {
        json_decref(out);
        return TEMPER_EIO;
    }
    freeReplyObject(r);
    *list = out;
    return 0;
}

static int r_stats(struct temper_queue *base, struct temper_queue_stats *st, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    memset(st, 0, sizeof(*st));
    char now[24], keep[24];
    const char *a[] = {i64(now, now_us()), i64(keep, base->config.keep_done_s)};
    redisReply *r;
    int err = redis_run(q, SCRIPT_STATS, 2, a, &r, msg, msg_size);
    if (err)
        return err;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 7) {
        int64_t *f[] = {&st->queued, &st->running, &st->done, &st->failed, &st->cancelled, &st->redeliveries,
                        &st->dead_letters};
        for (int i = 0; i < 7; i++)
            *f[i] = r->element[i]->integer;
    }
    freeReplyObject(r);
    return 0;
}

static int r_dead_letters(struct temper_queue *base, json_t **list, char *msg, size_t msg_size)
{
    struct redis_queue *q = (struct redis_queue *)base;
    *list = NULL;
    char dk[160];
    key(q, dk, sizeof(dk), "dead", NULL);
    const char *a[] = {"XRANGE", dk, "-", "+"};
    redisReply *r;
    int err = redis_simple(q, 4, a, &r, msg, msg_size);
    if (err)
        return err;
    json_t *out = json_array();
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        json_t *o = json_object();
        for (size_t k = 0; k + 1 < f->elements; k += 2) {
            const char *name = f->element[k]->str, *val = f->element[k + 1]->str;
            if (!strcmp(name, "id"))
                json_object_set_new(o, "id", json_string(val));
            else if (!strcmp(name, "deliveries"))
                json_object_set_new(o, "deliveries", json_integer(strtoll(val, NULL, 10)));
            else if (!strcmp(name, "result"))
                json_object_set_new(o, "result", json_loads(val, 0, NULL));
        }
        json_array_append_new(out, o);
    }
    freeReplyObject(r);
    *list = out;
    return 0;
}

static void r_close(struct temper_queue *base)
{
    struct redis_queue *q = (struct redis_queue *)base;
    if (!q)
        return;
    for (int i = 0; i < q->n_idle; i++)
        redisFree(q->idle[i]);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

static const struct temper_queue_ops redis_ops = {
    .engine = "redis",
    .submit = r_submit,
    .take = r_take,
    .release = r_release,
    .complete = r_complete,
    .get = r_get,
    .cancel = r_cancel,
    .batch = r_batch,
    .cache_get = r_cache_get,
    .cache_put = r_cache_put,
    .beat = r_beat,
    .workers = r_workers,
    .stats = r_stats,
    .dead_letters = r_dead_letters,
    .close = r_close,
};

int temper_queue_open_redis(const char *url, const struct temper_queue_config *config, struct temper_queue **out,
                            char *msg, size_t msg_size)
{
    *out = NULL;
    struct redis_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    pthread_mutex_init(&q->lock, NULL);
    q->base.ops = &redis_ops;
    if (config)
        q->base.config = *config;
    int err = redis_url_parse(q, url, msg, msg_size);
    struct temper_queue_config *cf = &q->base.config;
    cf->max_depth = cf->max_depth > 0 ? cf->max_depth : 10000;
    cf->claim_idle_ms = cf->claim_idle_ms > 0 ? cf->claim_idle_ms : 60000;
    cf->max_deliveries = cf->max_deliveries > 0 ? cf->max_deliveries : 3;
    cf->keep_done_s = cf->keep_done_s > 0 ? cf->keep_done_s : 86400;
    if (!q->cache_ttl_s)
        q->cache_ttl_s = cf->keep_done_s;
    redisContext *c = NULL;
    if (err || (err = redis_connect(q, &c, msg, msg_size))) {
        r_close(&q->base);
        return err;
    }
    for (int s = 0; s < SCRIPT_COUNT_ && !err; s++) {
        const char *a[] = {"SCRIPT", "LOAD", redis_scripts[s]};
        redisReply *r = redis_command(c, 3, a, NULL, msg, msg_size);
        if (!r || r->type != REDIS_REPLY_STRING || r->len != 40)
            err = r ? temper_fail(msg, msg_size, TEMPER_EIO, "redis: SCRIPT LOAD gave no SHA1") : TEMPER_EIO;
        else
            memcpy(q->sha[s], r->str, 41);
        freeReplyObject(r);
    }
    /* The group reads each stream from its beginning: jobs queued before any consumer existed count. */
    for (int k = 0; k < 2 && !err; k++) {
        char stream[160];
        key(q, stream, sizeof(stream), k ? "alone" : "jobs", NULL);
        const char *g[] = {"XGROUP", "CREATE", stream, REDIS_GROUP, "0", "MKSTREAM"};
        redisReply *r = redisCommandArgv(c, 6, g, NULL);
        if (!r || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9)))
            err = temper_fail(msg, msg_size, TEMPER_EIO, "redis: cannot create the consumer group on %s: %s", stream,
                              r ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
    }
    redis_conn_put(q, c, err != 0);
    if (err) {
        r_close(&q->base);
        return err;
    }
    *out = &q->base;
    return 0;
}
