/* session_tune.c: a tune driven through a session: the tune's state machine (src/search)
 * proposes points; each is taken from the store when it was evaluated before on this device
 * with the same source and options, else submitted like any other request (so it is batched
 * with other clients' work and recorded the same way, with its run); each scored point is one
 * progress event on the caller's thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_impl.h"
#include "search/tune.h"
#include "util/util.h"

/* A tune in progress in a session. */
struct temper_session_tune {
    struct temper_session *s;                             /* the session */
    struct temper_tune *tune;                             /* the state machine */
    temper_session_event_cb on_event;                     /* progress, or NULL */
    void *user;                                           /* passed to on_event */
    int64_t run_id;                                       /* the run's row, 0 with no store */
    char task_hash[17];                                   /* its task's content hash: results judged
                                                           * against another content are never reused */
    struct temper_tune_point points[TEMPER_TUNE_MAX_BATCH]; /* the current proposal */
    int npoints;                                          /* its size */
    pthread_mutex_t lock;                                 /* what follows */
    pthread_cond_t arrived;                               /* signalled when a result comes */
    int64_t ids[TEMPER_TUNE_MAX_BATCH];                   /* request id per point submitted, 0 if none */
    json_t *results[TEMPER_TUNE_MAX_BATCH];               /* results come in here */
    int outstanding;                                      /* submitted, result not yet come */
    int stopped;                                          /* 1 once temper_session_tune_stop was called */
    int over;                                             /* 1 when the tune proposed nothing more */
    int task_failed;                                      /* 1 once a result was the task's own error:
                                                           * nothing more is submitted */
};

static void tune_event(struct temper_session_tune *t, const struct temper_tune_event *te, json_t *result)
{
    if (!t->on_event)
        return;
    struct temper_session_event ev = {TEMPER_SESSION_TUNE, NULL, te, result};
    t->on_event(t->user, &ev);
}

/* Cancels the points of the current proposal whose results have not come (the lock must not be
 * held: a queued one's cancelled result comes through tune_result at once). */
static void cancel_rest(struct temper_session_tune *t)
{
    int64_t ids[TEMPER_TUNE_MAX_BATCH];
    int k = 0;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->npoints; i++)
        if (t->ids[i] && !t->results[i])
            ids[k++] = t->ids[i];
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < k; i++)
        temper_session_cancel(t->s, ids[i]);
}

/* The session's callback for a tune's request (dispatcher thread). A task's own error cancels the
 * points still to come here, before the dispatcher sends the next one: each would meet it again. */
static void tune_result(void *user, int64_t id, json_t *result)
{
    struct temper_session_tune *t = user;
    if (temper_session_result_task_error(result)) {
        pthread_mutex_lock(&t->lock);
        t->task_failed = 1;
        pthread_mutex_unlock(&t->lock);
        cancel_rest(t);
    }
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->npoints; i++)
        if (t->ids[i] == id && !t->results[i]) {
            t->results[i] = result;
            result = NULL;
            break;
        }
    t->outstanding--;
    pthread_cond_broadcast(&t->arrived);
    pthread_mutex_unlock(&t->lock);
    json_decref(result); /* not one of this proposal's: cannot happen, but never leak */
}

/* The content hash of the task the candidate names (temper_task_content_hash). */
static int tune_task_hash(const char *tasks_dir, const char *path, const char *source, size_t len, char out[17],
                          char *msg, size_t msg_size)
{
    struct temper_candidate cand;
    int err = temper_candidate_parse(path, source, len, &cand, msg, msg_size);
    if (err)
        return err;
    err = temper_task_content_hash_named(temper_tasks_root(tasks_dir), cand.task, out, msg, msg_size);
    temper_candidate_free(&cand);
    return err;
}

int temper_session_tune_begin(struct temper_session *s, const struct temper_tune_request *req,
                              temper_session_event_cb on_event, void *user, struct temper_session_tune **out,
                              char *msg, size_t msg_size)
{
    *out = NULL;
    char *source = NULL;
    size_t len = 0;
    int err = 0;
    if (req->source) {
        source = strdup(req->source);
        len = source ? strlen(source) : 0;
        if (!source)
            return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    } else if ((err = temper_read_file(req->path, TEMPER_SOURCE_MAX, &source, &len, msg, msg_size))) {
        return err;
    }
    struct temper_tune_request r = *req;
    r.source = source;
    if (!r.tasks_dir)
        r.tasks_dir = s->tasks_dir;
    char hash[17], task_hash[17] = "";
    temper_hash_hex(temper_hash64(source, len, 0), hash);
    if ((err = tune_task_hash(r.tasks_dir, req->path, source, len, task_hash, msg, msg_size))) {
        free(source);
        return err;
    }
    json_t *settings = NULL;
    int64_t resumed = 0;
    if (req->resume && s->store) {
        pthread_mutex_lock(&s->store_lock);
        resumed = temper_store_run_unfinished(s->store, hash, task_hash, s->device_key, &settings);
        pthread_mutex_unlock(&s->store_lock);
    }
    if (req->resume && !resumed)
        session_notify(s, TEMPER_SESSION_NOTICE, "no unfinished tune of %s on %s to resume: starting a new one",
                       req->path, s->device_id);
    if (resumed)
        /* The run's proposals replay only under its own settings: those given now are not used. */
        session_notify(s, TEMPER_SESSION_NOTICE,
                       "resuming run %lld as it was set up: strategy %s, budget %lld, time %g s, seed %lld, "
                       "compiler knobs %s (a budget, time, strategy or seed given now is not used)",
                       (long long)resumed, json_string_value(json_object_get(settings, "strategy")),
                       (long long)json_integer_value(json_object_get(settings, "budget")),
                       json_number_value(json_object_get(settings, "time_s")),
                       (long long)json_integer_value(json_object_get(settings, "seed")),
                       json_is_true(json_object_get(settings, "compiler_knobs")) ? "on" : "off");
    struct temper_session_tune *t = calloc(1, sizeof(*t));
    if (!t) {
        free(source);
        json_decref(settings);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    }
    err = temper_tune_init(&r, s->device_id, settings, resumed, &t->tune, msg, msg_size);
    free(source);
    json_decref(settings);
    if (err) {
        free(t);
        return err;
    }
    t->s = s;
    t->on_event = on_event;
    t->user = user;
    t->run_id = resumed;
    snprintf(t->task_hash, sizeof(t->task_hash), "%s", task_hash);
    if (!resumed && s->store) {
        json_t *fresh = temper_tune_settings(t->tune);
        /* What a resume must match: the task's content and the device's identity. */
        json_object_set_new(fresh, "task_hash", json_string(task_hash));
        json_object_set_new(fresh, "device_key", json_string(s->device_key));
        pthread_mutex_lock(&s->store_lock);
        err = temper_store_run_begin(s->store, fresh, &t->run_id, msg, msg_size);
        pthread_mutex_unlock(&s->store_lock);
        json_decref(fresh);
        if (err) {
            temper_tune_free(t->tune);
            free(t);
            return err;
        }
    }
    temper_tune_set_run(t->tune, t->run_id);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->arrived, NULL);
    *out = t;
    return 0;
}

/* Takes the points of the current proposal that the store already holds. */
static void from_store(struct temper_session_tune *t, int *taken)
{
    struct temper_session *s = t->s;
    for (int i = 0; i < t->npoints; i++) {
        taken[i] = 0;
        if (!s->store || !t->points[i].options_known || t->points[i].retime)
            continue;
        pthread_mutex_lock(&s->store_lock);
        json_t *old = temper_store_lookup(s->store, temper_tune_source_hash(t->tune), t->task_hash, s->device_key,
                                          t->points[i].options);
        pthread_mutex_unlock(&s->store_lock);
        if (!old)
            continue;
        struct temper_tune_event ev;
        temper_tune_observe(t->tune, &t->points[i], old, 1, &ev);
        tune_event(t, &ev, old);
        json_decref(old);
        taken[i] = 1;
    }
}

int temper_session_tune_step(struct temper_session_tune *t, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&t->lock);
    int stop = t->stopped;
    pthread_mutex_unlock(&t->lock);
    if (stop || t->over)
        return 0;
    int n = temper_tune_propose(t->tune, t->points, TEMPER_TUNE_MAX_BATCH);
    if (!n) {
        t->over = 1;
        return 0;
    }
    int taken[TEMPER_TUNE_MAX_BATCH];
    pthread_mutex_lock(&t->lock);
    t->npoints = n;
    for (int i = 0; i < n; i++) {
        t->ids[i] = 0;
        t->results[i] = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    from_store(t, taken);
    int err = 0;
    for (int i = 0; i < n && !err; i++) {
        if (taken[i])
            continue;
        const struct temper_eval_request *e = &t->points[i].req;
        struct temper_session_request r = {.request = e->request};
        r.made_by = "tune";
        r.on_result = tune_result;
        r.user = t;
        /* The id is set under the lock before the result can be matched to it. */
        pthread_mutex_lock(&t->lock);
        if (!t->stopped && !t->task_failed) {
            t->outstanding++;
            err = session_submit(t->s, &r, t->run_id, t->points[i].retime ? "retime" : "screen", &t->ids[i], msg,
                                 msg_size);
            if (err)
                t->outstanding--;
        }
        pthread_mutex_unlock(&t->lock);
    }
    /* Each result, as it comes, in the order of the proposal. */
    int task_error_seen = 0;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&t->lock);
        while (t->ids[i] && !t->results[i] && !t->stopped)
            pthread_cond_wait(&t->arrived, &t->lock);
        json_t *r = t->results[i];
        t->results[i] = NULL;
        pthread_mutex_unlock(&t->lock);
        if (!r)
            continue;
        if (temper_session_result_cancelled(r)) {
            json_decref(r);
            continue;
        }
        /* The task's own error (its reference crashed or hung) is no verdict of this point, and
         * every other point would meet it again: the tune ends with it (tune_result cancelled the
         * points still to come). */
        const char *task_error = temper_session_result_task_error(r);
        if (task_error) {
            if (!task_error_seen) {
                task_error_seen = 1;
                if (!err)
                    err = temper_fail(msg, msg_size, TEMPER_EINVALID, "%s", task_error);
            }
            json_decref(r);
            continue;
        }
        struct temper_tune_event ev;
        temper_tune_observe(t->tune, &t->points[i], r, 0, &ev);
        tune_event(t, &ev, r);
        /* A result the store could not keep ends the tune once what is in flight is done: a run
         * that goes on without its results could not be resumed. */
        if (temper_session_result_store_error(r) && !err && !task_error_seen)
            err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s", temper_session_result_store_error(r));
        json_decref(r);
    }
    if (err)
        return err;
    pthread_mutex_lock(&t->lock);
    stop = t->stopped;
    pthread_mutex_unlock(&t->lock);
    return stop ? 0 : 1;
}

void temper_session_tune_stop(struct temper_session_tune *t)
{
    int64_t ids[TEMPER_TUNE_MAX_BATCH];
    int n = 0;
    pthread_mutex_lock(&t->lock);
    t->stopped = 1;
    for (int i = 0; i < t->npoints; i++)
        if (t->ids[i] && !t->results[i])
            ids[n++] = t->ids[i];
    pthread_cond_broadcast(&t->arrived);
    pthread_mutex_unlock(&t->lock);
    /* Queued evaluations are dropped, and the one at the worker is killed: none is recorded. */
    for (int i = 0; i < n; i++)
        temper_session_cancel(t->s, ids[i]);
}

int temper_session_tune_finish(struct temper_session_tune *t, json_t **summary, char *msg, size_t msg_size)
{
    struct temper_session *s = t->s;
    /* Results still on their way are recorded by the session; wait for them before t goes. */
    pthread_mutex_lock(&t->lock);
    while (t->outstanding > 0)
        pthread_cond_wait(&t->arrived, &t->lock);
    for (int i = 0; i < t->npoints; i++) {
        json_decref(t->results[i]);
        t->results[i] = NULL;
    }
    int interrupted = t->stopped || !t->over;
    pthread_mutex_unlock(&t->lock);
    *summary = temper_tune_summary(t->tune, interrupted);
    int err = 0;
    if (!interrupted && s->store) {
        pthread_mutex_lock(&s->store_lock);
        err = temper_store_run_finish(s->store, t->run_id, *summary, msg, msg_size);
        pthread_mutex_unlock(&s->store_lock);
    }
    temper_tune_free(t->tune);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->arrived);
    free(t);
    return err;
}
