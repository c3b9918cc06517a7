/* consumer.c: the loop that turns queued jobs into results on one device (consumer.h): take,
 * answer from the cache or submit to the session (several in flight), record each outcome, report
 * itself, and cancel in the session what a client cancelled in the queue.
 *
 * A job that must run alone (queue.h: its holder died with it) runs with nothing else in this
 * process: the consumers of one process (one per device in `temper serve`) share a gate, and one
 * takes such a job only when no job of the process is in flight and no other take is under way;
 * until its outcome is recorded, no consumer of the process takes another. So a death while it
 * runs is its own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "serve/consumer.h"
#include "temper/error.h"
#include "temper/store.h"
#include "temper/kernel.h"
#include "temper/result.h"
#include "temper/task.h"
#include "util/util.h"

static const double bounds_s[TEMPER_HISTOGRAM_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                         1,     2.5,  5,     10,   30,  60,   300};

const double *temper_histogram_bounds_s(void)
{
    return bounds_s;
}

void temper_histogram_observe(struct temper_histogram *h, double seconds)
{
    int i = 0;
    while (i < TEMPER_HISTOGRAM_BUCKETS && seconds > bounds_s[i])
        i++;
    atomic_fetch_add(&h->bucket[i], 1);
    atomic_fetch_add(&h->sum_us, (long long)(seconds * 1e6));
    atomic_fetch_add(&h->count, 1);
}

static const char *const verdict_names[TEMPER_CONSUMER_VERDICTS] = {
    "correct", "incorrect", "compile_error", "runtime_error", "timeout", "invalid", "none"};

const char *temper_consumer_verdict_name(int i)
{
    return i >= 0 && i < TEMPER_CONSUMER_VERDICTS ? verdict_names[i] : "none";
}

static int verdict_index(const char *v)
{
    for (int i = 0; v && i < TEMPER_CONSUMER_VERDICTS - 1; i++)
        if (!strcmp(v, verdict_names[i]))
            return i;
    return TEMPER_CONSUMER_VERDICTS - 1;
}

/* The process's gate (above), shared by its consumers. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static int gate_jobs;   /* jobs of this process in flight (taken, outcome not recorded) */
static int gate_takers; /* takes under way */
static int gate_alone;  /* 1 while a job that must run alone runs, or a take that may bring one is under way */

/* This process's instance: 16 hex digits drawn once. */
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;
static char instance[17];

static void instance_draw(void)
{
    unsigned char b[8];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        uint64_t t = temper_now_ns() ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(t >> (i * 8));
    }
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(instance + 2 * i, 3, "%02x", b[i]);
}

const char *temper_consumer_instance(void)
{
    pthread_once(&instance_once, instance_draw);
    return instance;
}

/* One job in the session. */
struct slot {
    struct run *run;          /* the loop it belongs to */
    struct temper_job *job;   /* the job (owned while used) */
    int64_t sid;              /* its request id in the session */
    uint64_t start_ns;        /* when it was submitted to the session */
    json_t *result;           /* its result once delivered (owned) */
    int used;                 /* 1 while it holds a job */
    int ready;                /* 1 once result is set */
    int alone;                /* 1 when its job runs alone (holds the process's gate) */
};

/* The loop's state shared with the session's callback. */
struct run {
    pthread_mutex_t lock;     /* guards the slots' result and ready */
    pthread_cond_t wake;      /* signalled when a result arrives */
    struct slot *slots;       /* in_flight of them */
    int n;                    /* their number */
};

static void on_result(void *user, int64_t id, json_t *result)
{
    (void)id;
    struct slot *sl = user;
    pthread_mutex_lock(&sl->run->lock);
    sl->result = result;
    sl->ready = 1;
    pthread_cond_signal(&sl->run->wake);
    pthread_mutex_unlock(&sl->run->lock);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A failure of temper or its machine, as the API's error object (caller decrefs). */
static json_t *failure(const char *kind, const char *message, int retryable)
{
    return json_pack("{s:s, s:s, s:b}", "kind", kind, "message", message ? message : "", "retryable", retryable);
}

/* Records the outcome of a job and counts it. Takes outcome's reference. */
static int finish(const struct temper_consumer_config *c, struct temper_consumer_counts *n, struct temper_job *job,
                  enum temper_job_state state, json_t *outcome, char *msg, size_t msg_size)
{
    int err = outcome ? c->queue->ops->complete(c->queue, c->consumer, job->id, state, outcome, msg, msg_size)
                      : temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    if (!err) {
        atomic_fetch_add(&n->completed, 1);
        if (state == TEMPER_JOB_FAILED)
            atomic_fetch_add(&n->failed, 1);
        else
            atomic_fetch_add(&n->verdicts[verdict_index(temper_session_result_verdict(outcome))], 1);
        temper_histogram_observe(&n->total, (double)(now_us() - job->submitted_us) / 1e6);
    }
    json_decref(outcome);
    return err;
}

/* What a session result means for the job: DONE with it, or FAILED with an error object. */
static int outcome_of(json_t *result, json_t **outcome)
{
    int err = temper_session_result_error(result);
    if (temper_session_result_cancelled(result)) {
        *outcome = failure("cancelled", "the evaluation was stopped before it finished", 1);
        return TEMPER_JOB_FAILED;
    }
    if (!err || err == TEMPER_EPARSE) { /* evaluated, or the candidate itself is malformed: its verdict */
        *outcome = json_incref(result);
        return TEMPER_JOB_DONE;
    }
    /* The failure says the result's message. The session just made the result, in the one form: it
     * is read strictly, and one that does not read says why instead. */
    struct temper_result r;
    char why[512];
    const char *message = temper_result_from_json(result, &r, why, sizeof(why)) ? why : r.message;
    if (temper_session_result_task_error(result))
        *outcome = failure("task_error", message, 0);
    else if (err == TEMPER_ENODEVICE || err == TEMPER_EUNSUPPORTED)
        *outcome = failure("no_device", message, 1);
    else if (err == TEMPER_EINVALID || err == TEMPER_ENOTFOUND || err == TEMPER_ERANGE)
        *outcome = failure("invalid_request", message, 0);
    else
        *outcome = failure("temper_error", message, 1);
    temper_result_free(&r);
    return TEMPER_JOB_FAILED;
}

/* Submits a job's item to the session, read through the request codec (the API queued it valid);
 * nonzero when it does not read or the session refused it. */
static int submit(const struct temper_consumer_config *c, struct slot *sl, char *msg, size_t msg_size)
{
    struct temper_session_request req = {.on_result = on_result, .user = sl};
    int err = temper_request_from_json(sl->job->item, "the queued item", 0, &req.request, NULL, msg, msg_size);
    if (!err) {
        free((char *)req.path);
        req.path = sl->job->id;
        req.batch_id = sl->job->batch[0] ? sl->job->batch : NULL;
        sl->start_ns = temper_now_ns();
        err = temper_session_submit(c->session, &req, &sl->sid, msg, msg_size);
        req.path = NULL;
        req.batch_id = NULL;
    }
    temper_request_free(&req.request);
    return err;
}

/* 1 when item's candidate parses and its task is not on this worker's task path (why says so). */
static int task_missing(const struct temper_consumer_config *c, json_t *item, char *why, size_t why_size)
{
    const char *task = json_string_value(json_object_get(item, "task"));
    const char *src = json_string_value(json_object_get(item, "source"));
    const char *lang = json_string_value(json_object_get(item, "lang"));
    char dir[TEMPER_PATH_MAX];
    if (!task || !*task || !src || !lang ||
        temper_task_find(temper_tasks_root(c->tasks_dir), task, dir, sizeof(dir), why, why_size) != TEMPER_ENOTFOUND)
        return 0;
    struct temper_candidate *cand = calloc(1, sizeof(*cand));
    char m[256];
    int parses = cand && !temper_candidate_parse_lang(NULL, lang, src, strlen(src), cand, m, sizeof(m));
    if (cand)
        temper_candidate_free(cand);
    free(cand);
    return parses;
}

/* Whether a consumer of this process may take now: 0 while a job that must run alone runs (or
 * may come); else 1, with TEMPER_TAKE_ALONE in *flags when nothing of the process is in flight
 * or being taken (the gate then stays closed until the take says what came). */
static int gate_enter(int *flags)
{
    pthread_mutex_lock(&gate_lock);
    int ok = !gate_alone;
    *flags = 0;
    if (ok) {
        if (gate_jobs == 0 && gate_takers == 0) {
            *flags = TEMPER_TAKE_ALONE;
            gate_alone = 1;
        }
        gate_takers++;
    }
    pthread_mutex_unlock(&gate_lock);
    return ok;
}

/* After a take with flags: job (NULL: none came) is in flight; the gate stays closed while it
 * runs alone. */
static void gate_leave(int flags, const struct temper_job *job)
{
    pthread_mutex_lock(&gate_lock);
    gate_takers--;
    gate_jobs += job != NULL;
    if ((flags & TEMPER_TAKE_ALONE) && !(job && job->alone))
        gate_alone = 0;
    pthread_mutex_unlock(&gate_lock);
}

/* A job of this process finished (its outcome recorded, or it was left); alone: it ran alone. */
static void gate_done(int alone)
{
    pthread_mutex_lock(&gate_lock);
    gate_jobs--;
    if (alone)
        gate_alone = 0;
    pthread_mutex_unlock(&gate_lock);
}

/* Takes one job and starts it in slot sl (or answers it from the cache); *took 0 if none came,
 * *shut 1 when the process's gate allowed no take. */
static int take_one(const struct temper_consumer_config *c, struct temper_consumer_counts *n, struct run *r,
                    struct slot *sl, const char *device_key, int wait_ms, int *took, int *shut, char *msg,
                    size_t msg_size)
{
    struct temper_job *job = NULL;
    int flags;
    *took = 0;
    *shut = !gate_enter(&flags);
    if (*shut)
        return 0;
    int err = c->queue->ops->take(c->queue, c->consumer, wait_ms, flags, &job, msg, msg_size);
    gate_leave(flags, err ? NULL : job);
    if (err || !job)
        return err;
    temper_job_test_die(job);
    int alone = job->alone;
    *took = 1;
    atomic_fetch_add(&n->taken, 1);
    temper_histogram_observe(&n->queue_wait, (double)(now_us() - job->submitted_us) / 1e6);
    char key[65] = "";
    json_t *cached = NULL;
    if (job->cache_key[0]) {
        temper_job_cache_key(job->cache_key, device_key, key);
        char m[256];
        if (c->queue->ops->cache_get(c->queue, key, &cached, m, sizeof(m)))
            cached = NULL; /* a cache that cannot be read is a miss */
    }
    if (cached) {
        atomic_fetch_add(&n->cache_hits, 1);
        err = finish(c, n, job, TEMPER_JOB_DONE, cached, msg, msg_size);
        temper_job_free(job);
        gate_done(alone);
        return err;
    }
    /* The item names the task the server found for the candidate. A worker whose task path lacks it
     * (another version of the suite) would judge the candidate `invalid` and cache that: it is this
     * worker's failure, and another worker may have the task. (A candidate that does not parse is
     * judged by its parse error, whatever task the item names.) */
    char why[1024];
    if (task_missing(c, job->item, why, sizeof(why))) {
        char m[1400];
        snprintf(m, sizeof(m), "the worker %s cannot judge it: %s", c->consumer, why);
        err = finish(c, n, job, TEMPER_JOB_FAILED, failure("temper_error", m, 1), msg, msg_size);
        temper_job_free(job);
        gate_done(alone);
        return err;
    }
    pthread_mutex_lock(&r->lock);
    sl->job = job;
    sl->used = 1;
    sl->ready = 0;
    sl->alone = alone;
    sl->result = NULL;
    pthread_mutex_unlock(&r->lock);
    if (submit(c, sl, why, sizeof(why))) {
        pthread_mutex_lock(&r->lock);
        sl->used = 0;
        sl->job = NULL;
        pthread_mutex_unlock(&r->lock);
        err = finish(c, n, job, TEMPER_JOB_FAILED, failure("temper_error", why, 1), msg, msg_size);
        temper_job_free(job);
        gate_done(alone);
        return err;
    }
    atomic_fetch_add(&n->busy, 1);
    return 0;
}

/* Records a delivered result of slot sl and frees the slot. */
static int deliver(const struct temper_consumer_config *c, struct temper_consumer_counts *n, struct slot *sl,
                   const char *device_key, char *msg, size_t msg_size)
{
    struct temper_job *job = sl->job;
    json_t *result = sl->result, *outcome = NULL;
    temper_histogram_observe(&n->evaluate, (double)(temper_now_ns() - sl->start_ns) / 1e9);
    enum temper_job_state state = outcome_of(result, &outcome);
    if (state == TEMPER_JOB_DONE && job->cache_key[0] && !temper_session_result_error(result)) {
        char key[65], m[256];
        temper_job_cache_key(job->cache_key, device_key, key);
        c->queue->ops->cache_put(c->queue, key, result, m, sizeof(m)); /* a cache that fails costs only time */
    }
    int err = finish(c, n, job, state, outcome, msg, msg_size);
    json_decref(result);
    temper_job_free(job);
    sl->job = NULL;
    sl->result = NULL;
    sl->used = 0;
    sl->ready = 0;
    atomic_fetch_sub(&n->busy, 1);
    gate_done(sl->alone);
    sl->alone = 0;
    return err;
}

/* Reports the consumer, and cancels in the session the jobs cancelled in the queue. */
static int beat(const struct temper_consumer_config *c, struct temper_consumer_counts *n, struct run *r,
                const char *device_key, char *msg, size_t msg_size)
{
    struct temper_worker_status w = {0};
    snprintf(w.consumer, sizeof(w.consumer), "%s", c->consumer);
    snprintf(w.device, sizeof(w.device), "%s", c->device ? c->device : "");
    snprintf(w.device_key, sizeof(w.device_key), "%s", device_key);
    w.busy = atomic_load(&n->busy) > 0;
    w.jobs_done = atomic_load(&n->completed);
    w.seen_us = now_us();
    int err = c->queue->ops->beat(c->queue, &w, msg, msg_size);
    for (int i = 0; i < r->n && !err; i++) {
        struct slot *sl = &r->slots[i];
        if (!sl->used)
            continue;
        json_t *view = NULL;
        char m[256];
        if (!c->queue->ops->get(c->queue, sl->job->id, 0, &view, m, sizeof(m))) {
            const char *st = json_string_value(json_object_get(view, "status"));
            if (st && !strcmp(st, "cancelled"))
                temper_session_cancel(c->session, sl->sid);
        }
        json_decref(view);
    }
    return err;
}

int temper_consumer_run(const struct temper_consumer_config *config, struct temper_consumer_counts *counts,
                        char *msg, size_t msg_size)
{
    struct temper_consumer_config c = *config;
    /* In the queue this consumer is its name and this process's instance: a later process of the
     * same name releases what this one holds (queue.h). */
    char name[TEMPER_CONSUMER_MAX + 1];
    if (!c.consumer || !*c.consumer || strlen(c.consumer) > TEMPER_CONSUMER_MAX - 17)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a consumer name must have 1 to %d characters",
                           TEMPER_CONSUMER_MAX - 17);
    snprintf(name, sizeof(name), "%s@%s", c.consumer, temper_consumer_instance());
    c.consumer = name;
    c.in_flight = c.in_flight > 0 ? c.in_flight : 32;
    c.beat_ms = c.beat_ms > 0 ? c.beat_ms : 2000;
    char device_key[256];
    temper_store_device_key(temper_session_device_info(c.session), device_key, sizeof(device_key));
    struct run r = {.n = c.in_flight};
    r.slots = calloc((size_t)r.n, sizeof(*r.slots));
    if (!r.slots)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    for (int i = 0; i < r.n; i++)
        r.slots[i].run = &r;
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.wake, NULL);
    /* an earlier instance of this name died: its jobs go back to the queue now, not after claim_idle_ms */
    int err = c.queue->ops->release(c.queue, c.consumer, msg, msg_size);
    if (!err)
        err = beat(&c, counts, &r, device_key, msg, msg_size); /* reported before it takes anything */
    uint64_t next_beat = temper_now_ns() + (uint64_t)c.beat_ms * 1000000;
    for (;;) {
        int stopping = atomic_load(c.stop) != 0, busy = 0;
        /* results that came */
        for (int i = 0; i < r.n && !err; i++) {
            pthread_mutex_lock(&r.lock);
            int ready = r.slots[i].used && r.slots[i].ready;
            pthread_mutex_unlock(&r.lock);
            if (ready)
                err = deliver(&c, counts, &r.slots[i], device_key, msg, msg_size);
            busy += r.slots[i].used;
        }
        if (err || (stopping && !busy))
            break;
        if (temper_now_ns() >= next_beat) {
            err = beat(&c, counts, &r, device_key, msg, msg_size);
            next_beat = temper_now_ns() + (uint64_t)c.beat_ms * 1000000;
            if (err)
                break;
        }
        struct slot *free_slot = NULL;
        for (int i = 0; i < r.n && !free_slot; i++)
            free_slot = r.slots[i].used ? NULL : &r.slots[i];
        if (free_slot && !stopping) {
            /* wait for work only when nothing is in flight; else look and go back to the results */
            int took = 0, shut = 0;
            err = take_one(&c, counts, &r, free_slot, device_key, busy ? 0 : 200, &took, &shut, msg, msg_size);
            if (err)
                break;
            if (took)
                continue;
            if (!busy && !shut)
                continue;
        }
        /* in flight: wait for a result (or the next beat) */
        pthread_mutex_lock(&r.lock);
        int any = 0;
        for (int i = 0; i < r.n; i++)
            any |= r.slots[i].used && r.slots[i].ready;
        if (!any) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long add_ms = free_slot && !stopping ? 50 : 250;
            ts.tv_nsec += add_ms * 1000000;
            ts.tv_sec += ts.tv_nsec / 1000000000;
            ts.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&r.wake, &r.lock, &ts);
        }
        pthread_mutex_unlock(&r.lock);
    }
    /* after an error (the queue failed): what is in flight is stopped and left pending in the
     * queue, so that a live consumer is handed it again */
    for (int i = 0; i < r.n; i++) {
        struct slot *sl = &r.slots[i];
        if (!sl->used)
            continue;
        temper_session_cancel(c.session, sl->sid);
        pthread_mutex_lock(&r.lock);
        while (!sl->ready)
            pthread_cond_wait(&r.wake, &r.lock);
        pthread_mutex_unlock(&r.lock);
        json_decref(sl->result);
        temper_job_free(sl->job);
        sl->used = 0;
        atomic_fetch_sub(&counts->busy, 1);
        gate_done(sl->alone);
    }
    pthread_cond_destroy(&r.wake);
    pthread_mutex_destroy(&r.lock);
    free(r.slots);
    return err;
}
