/* api.c: the gym's endpoints (docs/openapi.yaml): submitting evaluations (validated, keyed by
 * content, answered from the cache when a live device has the result), reading them (long polls),
 * cancelling, batches, tasks, workers and readiness. Every refusal is a 4xx with
 * {"error": {"kind", "message"}} saying what and where. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "serve/server.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/request.h"
#include "temper/task.h"
#include "util/util.h"

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A new id: prefix and 24 random hex digits. */
static void new_id(const char *prefix, char out[129])
{
    unsigned char b[12];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        uint64_t t = temper_now_ns();
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(t >> (i % 8 * 8)) ^ (unsigned char)i;
    }
    int n = snprintf(out, 129, "%s", prefix);
    for (size_t i = 0; i < sizeof(b); i++)
        n += snprintf(out + n, (size_t)(129 - n), "%02x", b[i]);
}

/* A queue failure as a reply: 503, retryable. */
static void queue_failed(struct server_reply *r, int err, const char *msg)
{
    if (err == TEMPER_ENOTFOUND)
        server_error(r, 404, "not_found", "%s", msg);
    else {
        server_error(r, 503, "unavailable", "the queue failed: %s", msg);
        r->retry_after_s = 1;
    }
}

/* Parses a JSON body that must be an object; NULL with a 400 in r otherwise. */
static json_t *parse_body(const char *body, size_t len, struct server_reply *r)
{
    json_error_t e;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        server_error(r, 400, "invalid_json", "the body is not JSON: %s at line %d, column %d", e.text, e.line,
                     e.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        server_error(r, 400, "invalid_request", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

/* 1 if every key of obj is in the NULL-terminated list; else a 400 naming the key (where). */
static int keys_known(json_t *obj, const char *const *known, const char *where, struct server_reply *r)
{
    const char *bad;
    if (temper_json_keys_known(obj, known, &bad))
        return 1;
    char shown[80];
    temper_show_bytes(bad, strlen(bad), 60, shown, sizeof(shown));
    server_error(r, 400, "invalid_request", "%s: unknown field '%s'", where, shown);
    return 0;
}

/* Writes an integral real (5.0) at obj's key as the integer it is, so that the queue, the content
 * key and the worker see one form. */
static void normalize_int(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    int64_t n;
    if (json_is_real(v) && temper_json_int64(v, &n))
        json_object_set_new(obj, key, json_integer(n));
}

/* Sets each of the request's knobs on the parsed candidate's defaults: 0, or a 400 naming the knob
 * (a 503 when out of memory) in r. */
static int item_knobs_ok(struct temper_candidate *cand, const struct temper_request *req, const char *where,
                         struct server_reply *r)
{
    char msg[1024];
    struct temper_knobs *kv = calloc(1, sizeof(*kv));
    if (!kv)
        return server_error(r, 503, "unavailable", "out of memory"), 1;
    temper_knobs_default(cand, kv);
    int bad = 0;
    for (int i = 0; i < req->nknobs && !bad; i++) {
        char set[160];
        temper_knob_value_assignment(&req->knobs[i], set, sizeof(set));
        if (temper_knobs_set(cand, kv, set, msg, sizeof(msg))) {
            /* the library's message is the command line's ("--set NAME=VALUE: ..."): here a knob */
            const char *said = strncmp(msg, "--set ", 6) ? msg : msg + 6;
            server_error(r, 400, "unknown_knob", "%s.knobs: %s", where, said);
            bad = 1;
        }
    }
    free(kv);
    return bad;
}

/* The candidate's own task and knobs (phase two of item_ok): task_name gets the task the source
 * names and task_hash that task's content hash, both empty where the source does not parse; a
 * malformed candidate is queued all the same and gets its `invalid` verdict from the worker (its
 * task and knobs are not looked at). 0, or a 4xx (a 503 when out of memory) in r. */
static int item_candidate_ok(struct server_state *st, const struct temper_request *req, const char *where,
                             char task_name[TEMPER_NAME_MAX], char task_hash[17], struct server_reply *r)
{
    task_name[0] = task_hash[0] = 0;
    struct temper_candidate *cand = calloc(1, sizeof(*cand));
    if (!cand)
        return server_error(r, 503, "unavailable", "out of memory"), 1;
    char msg[1024];
    int bad = 0;
    int parsed = !temper_candidate_parse_lang(NULL, req->lang, req->source, req->source_len, cand, msg, sizeof(msg));
    if (parsed)
        snprintf(task_name, TEMPER_NAME_MAX, "%s", cand->task);
    if (req->task && parsed && strcmp(task_name, req->task)) {
        server_error(r, 400, "invalid_request", "%s.task is '%s' but the candidate says '@temper task %s'", where,
                     req->task, task_name);
        bad = 1;
    }
    if (!bad && task_name[0]) {
        int err = temper_task_content_hash_named(temper_tasks_root(st->config.tasks_dir), task_name, task_hash, msg,
                                                 sizeof(msg));
        if (err == TEMPER_ENOTFOUND || err == TEMPER_EINVALID || err == TEMPER_EPARSE) {
            server_error(r, 400, "unknown_task", "%s: task '%s': %s", where, task_name, msg);
            bad = 1;
        } else if (err) {
            server_error(r, 503, "unavailable", "%s: task '%s': %s", where, task_name, msg);
            r->retry_after_s = 1;
            bad = 1;
        }
    }
    if (!bad && parsed && req->nknobs)
        bad = item_knobs_ok(cand, req, where, r);
    temper_candidate_free(cand);
    free(cand);
    return bad;
}

/* Validates item i and works out its content key: its fields, then its candidate, then the item
 * as queued (its task named, its integers as integers); 0 or a 4xx in r. */
static int item_ok(struct server_state *st, json_t *item, int i, char key[65], struct server_reply *r)
{
    char where[32];
    snprintf(where, sizeof(where), "items[%d]", i);
    struct temper_request req;
    const char *kind = "invalid_request";
    char msg[1024];
    int err = temper_request_from_json(item, where, st->config.limits.max_source_bytes, &req, &kind, msg, sizeof(msg));
    char task_name[TEMPER_NAME_MAX], task_hash[17];
    if (err)
        server_error(r, err == TEMPER_ENOMEM ? 503 : err == TEMPER_ERANGE ? 413 : 400,
                     err == TEMPER_ENOMEM ? "unavailable" : kind, "%s", msg);
    else
        err = item_candidate_ok(st, &req, where, task_name, task_hash, r);
    temper_request_free(&req);
    if (err)
        return 1;
    json_t *task = json_object_get(item, "task"), *knobs = json_object_get(item, "knobs");
    json_t *opts = json_object_get(item, "options");
    /* The queued item names the candidate's task, so that an engine that must give the job a
     * result itself (a dead letter) gives it one for its task. */
    if (task_name[0] && !task && json_object_set_new(item, "task", json_string(task_name)))
        return server_error(r, 503, "unavailable", "out of memory"), 1;
    normalize_int(item, "parent");
    normalize_int(opts, "seed");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(knobs, tmp, k, v) normalize_int(knobs, k);
    return temper_job_content_key(item, task_hash, key, msg, sizeof(msg))
               ? (server_error(r, 503, "unavailable", "%s", msg), 1)
               : 0;
}

/* A result for content key from any live device's cache (caller decrefs), or NULL. */
static json_t *cached_anywhere(struct server_state *st, const char *content_key)
{
    struct temper_queue *q = st->config.queue;
    json_t *workers = NULL, *w, *hit = NULL;
    char msg[256];
    if (q->ops->workers(q, SERVER_LIVE_S, &workers, msg, sizeof(msg)))
        return NULL;
    size_t i;
    json_array_foreach(workers, i, w) {
        char key[65];
        temper_job_cache_key(content_key, json_string_value(json_object_get(w, "device_key")), key);
        if (!q->ops->cache_get(q, key, &hit, msg, sizeof(msg)) && hit)
            break;
        hit = NULL;
    }
    json_decref(workers);
    return hit;
}

/* Waits until every id is finished or wait_s passes; the views (caller decrefs), or NULL when
 * some are not finished (then *err may hold a queue failure). */
static json_t *wait_all(struct server_state *st, json_t *ids, double wait_s, int *err, char *msg, size_t msg_size)
{
    struct temper_queue *q = st->config.queue;
    double until = temper_now_s() + wait_s;
    json_t *views = json_array(), *id;
    size_t i;
    *err = 0;
    json_array_foreach(ids, i, id) {
        json_t *v = NULL;
        double left = until - temper_now_s();
        *err = q->ops->get(q, json_string_value(id), left > 0 ? (int)(left * 1000) : 0, &v, msg, msg_size);
        const char *s = json_string_value(json_object_get(v, "status"));
        if (*err || !s || !strcmp(s, "queued") || !strcmp(s, "running")) {
            json_decref(v);
            json_decref(views);
            return NULL;
        }
        json_array_append_new(views, v);
    }
    return views;
}

/* The request's own fields (phase one of api_submit): known keys, items (a non-empty array within
 * the limit), batch and wait_s (into *wait_s); 0 or a 4xx in r. */
static int submit_request_ok(struct server_state *st, json_t *req, double *wait_s, struct server_reply *r)
{
    static const char *const known[] = {"items", "batch", "wait_s", NULL};
    json_t *items = json_object_get(req, "items"), *batch = json_object_get(req, "batch");
    if (!keys_known(req, known, "the request", r))
        return 1;
    if (!json_is_array(items) || json_array_size(items) == 0)
        return server_error(r, 400, "invalid_request", "items must be a non-empty array of evaluations"), 1;
    if (json_array_size(items) > (size_t)st->config.limits.max_items)
        return server_error(r, 400, "too_many_items", "%zu items in one request, over this server's limit of %d",
                            json_array_size(items), st->config.limits.max_items), 1;
    if (batch && (!json_is_string(batch) || !server_id_ok(json_string_value(batch))))
        return server_error(r, 400, "invalid_id", "batch must be 1 to 128 of [A-Za-z0-9._:-] (not only dots)"), 1;
    return server_json_wait(st, json_object_get(req, "wait_s"), wait_s, r);
}

/* Fills jobs[i] for each of items (content keys in keys, all in batch batch_id), answered from any
 * live device's cache where one has the result, and appends each job's id to ids; 0, or a 503 in
 * r. */
static int submit_jobs_make(struct server_state *st, json_t *items, char (*keys)[65], const char *batch_id,
                            struct temper_job *jobs, json_t *ids, struct server_reply *r)
{
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) {
        struct temper_job *job = &jobs[i];
        const char *cid = json_string_value(json_object_get(item, "id"));
        if (cid)
            snprintf(job->id, sizeof(job->id), "%s", cid);
        else
            new_id("ev-", job->id);
        snprintf(job->batch, sizeof(job->batch), "%s", batch_id);
        snprintf(job->cache_key, sizeof(job->cache_key), "%s", keys[i]);
        job->item = json_deep_copy(item);
        json_object_del(job->item, "id");
        job->submitted_us = now_us();
        job->result = cached_anywhere(st, keys[i]);
        if (!job->item || json_array_append_new(ids, json_string(job->id)))
            return server_error(r, 503, "unavailable", "out of memory"), 1;
    }
    return 0;
}

/* One submit for the whole request: all of it is queued, or none (a full disk, a full queue, an id
 * taken by another item), counted where new; 0, or a 409, 429 or 503 in r. */
static int submit_queue(struct server_state *st, struct temper_job *jobs, size_t n, int *existing,
                        struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[1024];
    int err = q->ops->submit(q, jobs, (int)n, existing, msg, sizeof(msg));
    if (err == TEMPER_ERANGE) {
        server_error(r, 429, "queue_full", "nothing of this request was queued: %s", msg);
        r->retry_after_s = 5;
        return 1;
    }
    if (err == TEMPER_EINVALID) {
        size_t k = 0;
        while (k + 1 < n && existing[k] != 2)
            k++;
        server_error(r, 409, "id_conflict",
                     "items[%zu].id: %s; an id names one item, so this one is not answered with that job's result "
                     "(choose another id, or send none); nothing of this request was queued", k, msg);
        return 1;
    }
    if (err) {
        server_error(r, 503, "unavailable", "nothing of this request was queued: the queue failed: %s", msg);
        r->retry_after_s = 1;
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!existing[i]) {
            atomic_fetch_add(&st->submitted, 1);
            if (jobs[i].result)
                atomic_fetch_add(&st->submit_cache_hits, 1);
        }
    return 0;
}

/* The answer to a queued request: every job's view (200) once all are finished within wait_s,
 * else each job's id and status (202); out collects the latter. */
static void submit_answer(struct server_state *st, json_t *ids, const char *batch_id, double wait_s, json_t *out,
                          struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[1024];
    int err = 0;
    json_t *views = wait_s > 0 ? wait_all(st, ids, wait_s, &err, msg, sizeof(msg)) : NULL;
    if (err) {
        json_decref(views);
        queue_failed(r, err, msg);
        return;
    }
    if (views) {
        r->status = 200;
        r->json = json_pack("{s:s, s:o}", "batch", batch_id, "items", views);
        return;
    }
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) {
        json_t *v = NULL;
        err = q->ops->get(q, json_string_value(id), 0, &v, msg, sizeof(msg));
        if (err) {
            queue_failed(r, err, msg);
            return;
        }
        json_array_append_new(out, json_pack("{s:O, s:O}", "id", id, "status", json_object_get(v, "status")));
        json_decref(v);
    }
    r->status = 202;
    r->json = json_pack("{s:s, s:O}", "batch", batch_id, "items", out);
}

void api_submit(struct server_state *st, const char *body, size_t len, struct server_reply *r)
{
    json_t *req = parse_body(body, len, r), *items = json_object_get(req, "items");
    if (!req)
        return;
    json_t *batch = json_object_get(req, "batch");
    json_t *ids = json_array(), *out = json_array();
    char (*keys)[65] = NULL;
    struct temper_job *jobs = NULL;
    int *existing = NULL;
    size_t n = 0, i;
    double wait_s = 0;
    if (submit_request_ok(st, req, &wait_s, r))
        goto done;
    n = json_array_size(items);
    keys = calloc(n, sizeof(*keys));
    if (!keys || !ids || !out) {
        server_error(r, 503, "unavailable", "out of memory");
        goto done;
    }
    json_t *item;
    json_array_foreach(items, i, item) {
        if (item_ok(st, item, (int)i, keys[i], r)) /* an id twice: one job for one item, else a conflict */
            goto done;
    }
    char batch_id[129];
    if (batch)
        snprintf(batch_id, sizeof(batch_id), "%s", json_string_value(batch));
    else
        new_id("b-", batch_id);
    jobs = calloc(n, sizeof(*jobs));
    existing = calloc(n, sizeof(*existing));
    if (!jobs || !existing) {
        server_error(r, 503, "unavailable", "out of memory");
        goto done;
    }
    if (submit_jobs_make(st, items, keys, batch_id, jobs, ids, r) || submit_queue(st, jobs, n, existing, r))
        goto done;
    submit_answer(st, ids, batch_id, wait_s, out, r);
done:
    for (i = 0; jobs && i < n; i++) {
        json_decref(jobs[i].item);
        json_decref(jobs[i].result);
    }
    free(jobs);
    free(existing);
    free(keys);
    json_decref(ids);
    json_decref(out);
    json_decref(req);
}

void api_get(struct server_state *st, const char *id, const char *wait, struct server_reply *r)
{
    double wait_s;
    if (server_parse_wait(st, wait, &wait_s, r))
        return;
    struct temper_queue *q = st->config.queue;
    char msg[512];
    json_t *v = NULL;
    int err = q->ops->get(q, id, (int)(wait_s * 1000), &v, msg, sizeof(msg));
    if (err)
        return queue_failed(r, err, msg);
    r->status = 200;
    r->json = v;
}

void api_get_many(struct server_state *st, const char *body, size_t len, struct server_reply *r)
{
    static const char *const known[] = {"ids", "wait_s", NULL};
    json_t *req = parse_body(body, len, r), *ids = json_object_get(req, "ids"), *wait = json_object_get(req, "wait_s");
    if (!req || !keys_known(req, known, "the request", r))
        goto done;
    if (!json_is_array(ids) || json_array_size(ids) == 0 || json_array_size(ids) > (size_t)st->config.limits.max_items) {
        server_error(r, 400, "invalid_request", "ids must be an array of 1 to %d evaluation ids",
                     st->config.limits.max_items);
        goto done;
    }
    double wait_s;
    if (server_json_wait(st, wait, &wait_s, r))
        goto done;
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) if (!json_is_string(id) || !server_id_ok(json_string_value(id))) {
        server_error(r, 400, "invalid_id", "ids[%zu] is not an evaluation id ([A-Za-z0-9._:-], 1 to 128)", i);
        goto done;
    }
    struct temper_queue *q = st->config.queue;
    double until = temper_now_s() + wait_s;
    json_t *items = json_array(), *missing = json_array();
    json_array_foreach(ids, i, id) {
        json_t *v = NULL;
        char msg[512];
        double left = until - temper_now_s();
        int err = q->ops->get(q, json_string_value(id), left > 0 ? (int)(left * 1000) : 0, &v, msg, sizeof(msg));
        if (err == TEMPER_ENOTFOUND) {
            json_array_append(missing, id);
        } else if (err) {
            json_decref(items);
            json_decref(missing);
            queue_failed(r, err, msg);
            goto done;
        } else {
            json_array_append_new(items, v);
        }
    }
    r->status = 200;
    r->json = json_pack("{s:o, s:o}", "items", items, "not_found", missing);
done:
    json_decref(req);
}

void api_cancel(struct server_state *st, const char *id, struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[512];
    int err = q->ops->cancel(q, id, NULL, msg, sizeof(msg));
    json_t *v = NULL;
    if (!err)
        err = q->ops->get(q, id, 0, &v, msg, sizeof(msg));
    if (err)
        return queue_failed(r, err, msg);
    r->status = 200;
    r->json = v;
}

void api_batch(struct server_state *st, const char *id, struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[512];
    json_t *ids = NULL, *x;
    int err = q->ops->batch(q, id, &ids, msg, sizeof(msg));
    if (err)
        return queue_failed(r, err, msg);
    json_t *items = json_array();
    json_t *counts = json_pack("{s:i, s:i, s:i, s:i, s:i}", "queued", 0, "running", 0, "done", 0, "cancelled", 0,
                               "failed", 0);
    size_t i;
    json_array_foreach(ids, i, x) {
        json_t *v = NULL;
        if (q->ops->get(q, json_string_value(x), 0, &v, msg, sizeof(msg)))
            continue; /* expired meanwhile */
        const char *s = json_string_value(json_object_get(v, "status"));
        json_t *c = json_object_get(counts, s ? s : "");
        if (c)
            json_integer_set(c, json_integer_value(c) + 1);
        json_array_append_new(items, v);
    }
    json_decref(ids);
    r->status = 200;
    r->json = json_pack("{s:s, s:o, s:o}", "id", id, "counts", counts, "items", items);
}

/* One task for GET /v1/tasks. */
static int add_task(void *user, const char *dir)
{
    json_t *list = user;
    struct temper_task *t = calloc(1, sizeof(*t));
    char msg[512], hash[17];
    if (!t)
        return 0;
    if (!temper_task_load(dir, t, msg, sizeof(msg)) && !temper_task_content_hash(t, hash, msg, sizeof(msg))) {
        int have = 0;
        size_t i;
        json_t *x;
        json_array_foreach(list, i, x) have |= !strcmp(json_string_value(json_object_get(x, "name")), t->name);
        if (!have) /* the first folder of the search path holding a name wins, as for evaluations */
            json_array_append_new(list, json_pack("{s:s, s:i, s:s, s:s}", "name", t->name, "level", t->level,
                                                  "summary", t->summary, "content_hash", hash));
    }
    free(t);
    return 0;
}

void api_tasks(struct server_state *st, struct server_reply *r)
{
    json_t *list = json_array();
    temper_task_each(temper_tasks_root(st->config.tasks_dir), add_task, list);
    r->status = 200;
    r->json = json_pack("{s:o}", "tasks", list);
}

void api_workers(struct server_state *st, struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[512];
    json_t *list = NULL;
    int err = q->ops->workers(q, SERVER_LIVE_S, &list, msg, sizeof(msg));
    if (err)
        return queue_failed(r, err, msg);
    r->status = 200;
    r->json = json_pack("{s:o}", "workers", list);
}

void api_ready(struct server_state *st, struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    char msg[512];
    json_t *list = NULL;
    struct temper_queue_stats qs;
    int err = q->ops->stats(q, &qs, msg, sizeof(msg));
    if (!err)
        err = q->ops->workers(q, SERVER_LIVE_S, &list, msg, sizeof(msg));
    if (err) {
        server_error(r, 503, "not_ready", "the queue cannot be read: %s", msg);
        r->retry_after_s = 1;
        return;
    }
    size_t n = json_array_size(list);
    json_decref(list);
    /* with local devices, ready once one reports; with Redis, workers may come later */
    if (st->config.ndevices > 0 && n == 0) {
        server_error(r, 503, "not_ready", "no worker has reported yet");
        r->retry_after_s = 1;
        return;
    }
    r->status = 200;
    r->json = json_pack("{s:s, s:s, s:i}", "status", "ready", "engine", q->ops->engine, "workers", (int)n);
}
