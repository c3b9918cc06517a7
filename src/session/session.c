/* session.c: a session's life (open, close), the ceilings of its device, and its requests:
 * submission from any thread, the dispatcher thread that runs them as a stream through
 * temper_eval_stream (a request submitted while others run joins them), recording each result in the store with its lineage, and delivering it
 * exactly once (callback or wait), or cancelling it, queued or running. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session_impl.h"
#include "eval/result_set.h"
#include "temper/result.h"
#include "util/util.h"

#define DEFAULT_MAX_BATCH 32
/* Requests a stream takes ahead of their results, at most, whatever max_batch says. */
#define MAX_IN_FLIGHT 4096

static char *dup_or_null(const char *text)
{
    return text ? strdup(text) : NULL;
}

void session_notify(struct temper_session *s, enum temper_session_event_kind kind, const char *fmt, ...)
{
    if (!s->config.on_event)
        return;
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct temper_session_event ev = {kind, text, NULL, NULL};
    s->config.on_event(s->config.event_user, &ev);
}

/* ---- results: every read and write of a result's keys by the session goes through these ---- */

void session_result_unevaluated(struct temper_result *r, const char *path, int err, const char *message,
                                int cancelled)
{
    temper_result_own(r, temper_verdict_name(TEMPER_VERDICT_INVALID), message ? message : "", cancelled, 0);
    temper_result_set_text(&r->candidate, path ? path : "");
    temper_result_set_text(&r->task, "");
    if (!cancelled)
        r->error_code = (struct temper_opt_i64){1, err ? err : TEMPER_EINVALID};
    r->schema_version = (struct temper_opt_i64){1, TEMPER_RESULT_SCHEMA_VERSION};
}

/* Writes r in the one form, and frees it. */
static json_t *result_write(struct temper_result *r)
{
    json_t *one = temper_result_to_json(r);
    temper_result_free(r);
    return one;
}

/* The accessors clients use (session.h) read one field of a result in the one form, and give what
 * they read borrowed from the client's result: they stay lookups, the only ones of a result's field
 * outside the codec (tests/result_reads_test.sh names them); a reader of more than one field
 * reads struct temper_result (temper_result_from_json). */
const char *temper_session_result_verdict(json_t *result)
{
    return json_string_value(json_object_get(result, "verdict"));
}

int temper_session_result_cancelled(json_t *result)
{
    return json_is_true(json_object_get(result, "cancelled"));
}

int temper_session_result_error(json_t *result)
{
    return (int)json_integer_value(json_object_get(result, "error_code"));
}

const char *temper_session_result_task_error(json_t *result)
{
    const char *m = json_string_value(json_object_get(result, "message"));
    size_t n = strlen(TEMPER_TASK_ERROR_PREFIX);
    return temper_session_result_error(result) && m && !strncmp(m, TEMPER_TASK_ERROR_PREFIX, n) ? m : NULL;
}

int64_t temper_session_result_store_id(json_t *result)
{
    return json_integer_value(json_object_get(result, "store_id"));
}

const char *temper_session_result_store_error(json_t *result)
{
    return json_string_value(json_object_get(result, "store_error"));
}

/* The request's lineage, as the result carries it (null where not given). */
static void result_set_lineage(struct temper_result *r, const struct pending *p)
{
    r->parent_id = (struct temper_opt_i64){p->req.parent_id != 0, p->req.parent_id};
    temper_result_set_text(&r->made_by, p->req.made_by);
    temper_result_set_text(&r->batch_id, p->req.batch_id);
}

/* Records an evaluated result with its lineage (and run), and puts the row id in it; a failure
 * is said in the result ("store_error") and as a warning, and the result is still delivered. The
 * store keeps the result as written then, before its row id. */
static void result_record(struct temper_session *s, struct pending *p, struct temper_result *r)
{
    result_set_lineage(r, p);
    if (p->tune_phase)
        temper_result_set_text(&r->tune_phase, p->tune_phase);
    if (!s->store || p->req.no_store || (r->error_code.set && (int)r->error_code.v) ||
        (r->cancelled.set && r->cancelled.v) || !p->source)
        return;
    char msg[1024];
    int64_t row = 0;
    json_t *stored = temper_result_to_json(r);
    pthread_mutex_lock(&s->store_lock);
    struct temper_lineage lineage = {p->req.parent_id, p->req.made_by, NULL, p->req.batch_id};
    int err = temper_store_record_source(s->store, stored, p->source, p->source_len, p->run_id, &lineage, &row, msg,
                                         sizeof(msg));
    pthread_mutex_unlock(&s->store_lock);
    json_decref(stored);
    if (err) {
        temper_result_set_text(&r->store_error, msg);
        session_notify(s, TEMPER_SESSION_WARNING, "%s was not recorded: %s", p->path, msg);
        return;
    }
    r->store_id = (struct temper_opt_i64){1, row};
}

/* ---- requests ---- */

static void pending_free(struct pending *p)
{
    if (!p)
        return;
    free(p->path);
    free(p->source);
    temper_request_free(&p->own);
    free(p->early_msg);
    json_decref(p->result);
    free(p);
}

/* Unlinks p from the session's list; lock held. */
static void pending_unlink(struct temper_session *s, struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        s->first = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        s->last = p->prev;
    p->prev = p->next = NULL;
}

/* Hands a result to its client: through the callback (p is freed), or kept for wait. Takes the
 * lock itself; the callback runs without it. */
static void deliver(struct temper_session *s, struct pending *p, json_t *result)
{
    /* The client gets a result that shares nothing with the library's objects (the device's
     * description, knob objects): jansson's reference counts are not safe across threads. */
    json_t *own = json_deep_copy(result);
    if (own) {
        json_decref(result);
        result = own;
    }
    pthread_mutex_lock(&s->lock);
    if (p->req.on_result) {
        pending_unlink(s, p);
        pthread_mutex_unlock(&s->lock);
        p->req.on_result(p->req.user, p->id, result);
        pending_free(p);
        return;
    }
    p->result = result;
    p->state = PENDING_DONE;
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
}

/* Decides the result of a request that never reaches temper_eval_stream's worker: 1, or 0 if it
 * was cancelled first (then its result must say cancelled). */
static int claim(struct pending *p)
{
    int expect = TEMPER_EVAL_WAITING;
    return __atomic_compare_exchange_n(&p->cancel_word, &expect, TEMPER_EVAL_DONE, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

/* Delivers the result of a request that is not evaluated: its early error, or err and msg. */
static void deliver_unevaluated(struct temper_session *s, struct pending *p, int err, const char *msg)
{
    int cancelled = !claim(p);
    struct temper_result r;
    if (cancelled)
        session_result_unevaluated(&r, p->path, 0, "cancelled before it ran", 1);
    else
        session_result_unevaluated(&r, p->path, err, msg, 0);
    result_set_lineage(&r, p);
    deliver(s, p, result_write(&r));
}

/* The name a candidate goes by (caller frees), and in *canon its language as a string of the
 * library's own (NULL: none given). A file keeps its path: the language given travels with the
 * request and wins over the extension. Source text is named with its language's extension
 * ("<stdin>.cl"), as the store and clients have always shown it. */
static char *candidate_name(const char *path, const char *lang, int from_text, const char **canon, int *err,
                            char *why, size_t why_size)
{
    const char *name = path && *path ? path : "<source>";
    *err = 0;
    *canon = NULL;
    if (!lang)
        return strdup(name);
    int l = temper_lang_parse(lang);
    const char *ext = l == TEMPER_LANG_CUDA ? ".cu" : l == TEMPER_LANG_OPENCL ? ".cl" : l == TEMPER_LANG_TRITON ? ".py"
                                                                                                              : NULL;
    if (!ext) {
        *err = temper_fail(why, why_size, TEMPER_EINVALID, "%s: unknown language '%s' (cuda, opencl or triton)", name,
                           lang);
        return strdup(name);
    }
    *canon = temper_lang_name((enum temper_lang)l);
    if (!from_text)
        return strdup(name);
    size_t n = strlen(name);
    if (n >= 3 && !strcmp(name + n - 3, ext))
        return strdup(name);
    char *out = malloc(n + 4);
    if (out)
        snprintf(out, n + 4, "%s%s", name, ext);
    return out;
}

int session_submit(struct temper_session *s, const struct temper_session_request *req, int64_t run_id,
                   const char *tune_phase, int64_t *id, char *msg, size_t msg_size)
{
    struct pending *p = calloc(1, sizeof(*p));
    if (!p)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    p->req = *req;
    p->run_id = run_id;
    p->tune_phase = tune_phase;
    char why[2048] = "";
    /* the client's request, copied whole but for its name, text and language, made below */
    struct temper_request view = req->request;
    view.path = view.source = view.lang = NULL;
    int oom = temper_request_copy(&p->own, &view) != 0;
    const char *lang = NULL;
    p->path = candidate_name(req->path, req->lang, req->source != NULL, &lang, &p->early_err, why, sizeof(why));
    oom |= !p->path;
    if (req->source) {
        /* Every byte the client gave, NUL bytes too: the candidate's rules judge them (a NUL is
         * invalid), and its hash covers them all. */
        p->from_text = 1;
        p->source_len = req->source_len ? req->source_len : strlen(req->source);
        oom |= !(p->source = malloc(p->source_len + 1));
        if (p->source) {
            memcpy(p->source, req->source, p->source_len);
            p->source[p->source_len] = 0;
        }
    } else if (!p->early_err && !oom) {
        if (!req->path)
            p->early_err = temper_fail(why, sizeof(why), TEMPER_EINVALID, "a request needs a file or source text");
        else
            p->early_err = temper_read_file(req->path, TEMPER_SOURCE_READ_MAX, &p->source, &p->source_len, why,
                                            sizeof(why));
    }
    if (!oom && p->early_err)
        oom = !(p->early_msg = strdup(why));
    if (oom) {
        pending_free(p);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    }
    p->req.request = p->own;
    p->req.path = p->path;
    p->req.source = p->source;
    p->req.source_len = p->source_len;
    p->req.lang = lang;
    pthread_mutex_lock(&s->lock);
    if (s->closing) {
        pthread_mutex_unlock(&s->lock);
        pending_free(p);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the session is closing");
    }
    p->id = s->next_id++;
    p->state = PENDING_QUEUED;
    p->prev = s->last;
    if (s->last)
        s->last->next = p;
    else
        s->first = p;
    s->last = p;
    if (id)
        *id = p->id;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int temper_session_submit(struct temper_session *s, const struct temper_session_request *req, int64_t *id,
                          char *msg, size_t msg_size)
{
    return session_submit(s, req, 0, NULL, id, msg, msg_size);
}

static struct pending *find(struct temper_session *s, int64_t id)
{
    for (struct pending *p = s->first; p; p = p->next)
        if (p->id == id)
            return p;
    return NULL;
}

int temper_session_wait(struct temper_session *s, int64_t id, json_t **result, char *msg, size_t msg_size)
{
    *result = NULL;
    pthread_mutex_lock(&s->lock);
    struct pending *p = find(s, id);
    if (!p || p->req.on_result) {
        pthread_mutex_unlock(&s->lock);
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no request %lld waits to be received",
                           (long long)id);
    }
    while (p->state != PENDING_DONE)
        pthread_cond_wait(&s->done, &s->lock);
    pending_unlink(s, p);
    pthread_mutex_unlock(&s->lock);
    *result = p->result;
    p->result = NULL;
    pending_free(p);
    return 0;
}

int temper_session_cancel(struct temper_session *s, int64_t id)
{
    pthread_mutex_lock(&s->lock);
    struct pending *p = find(s, id);
    if (!p || p->state == PENDING_DONE) {
        pthread_mutex_unlock(&s->lock);
        return TEMPER_ENOTFOUND;
    }
    if (p->state == PENDING_RUNNING) {
        /* In the running stream: one not yet sent to the worker is skipped there; the one at the
         * worker has its job killed. The lock is held until temper_worker_cancel returns: the stream
         * delivers this request (which takes the lock) before it sends the next job, so the job
         * killed can only be this one. */
        int expect = TEMPER_EVAL_WAITING, err = 0;
        if (!__atomic_compare_exchange_n(&p->cancel_word, &expect, TEMPER_EVAL_SKIP, 0, __ATOMIC_SEQ_CST,
                                         __ATOMIC_SEQ_CST)) {
            if (expect == TEMPER_EVAL_SENT &&
                __atomic_compare_exchange_n(&p->cancel_word, &expect, TEMPER_EVAL_KILL, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
                temper_worker_cancel(s->worker);
            else
                err = TEMPER_ENOTFOUND; /* cancelled already, or its result is decided */
        }
        pthread_mutex_unlock(&s->lock);
        return err;
    }
    p->state = PENDING_RUNNING; /* taken off the queue: the dispatcher no longer sees it */
    __atomic_store_n(&p->cancel_word, TEMPER_EVAL_SKIP, __ATOMIC_SEQ_CST); /* a second cancel finds nothing */
    pthread_mutex_unlock(&s->lock);
    deliver_unevaluated(s, p, 0, NULL); /* SKIP: its result says cancelled */
    return 0;
}

/* ---- the device's ceilings ---- */

/* Gets the ceilings from the store or measures them (always, with measure_again); worker_lock
 * held. */
/* Where a session without a store keeps a device's ceilings: calibration/<hash of the device's
 * key>.json in temper's data folder ($TEMPER_HOME), so that a client evaluating without a store
 * does not measure the device again each time it starts. Not in the build cache: workers, which
 * run strangers' kernels, may write there, and ceilings decide what timing is impossible. */
static void ceilings_cache_path(struct temper_session *s, char *path, size_t size, char *key, size_t key_size)
{
    char home[TEMPER_PATH_MAX], hex[17];
    temper_store_device_key(s->info, key, key_size);
    temper_hash_hex(temper_hash64(key, strlen(key), 0), hex);
    snprintf(path, size, "%.3000s/calibration/%s.json", temper_home_dir(home, sizeof(home)), hex);
}

/* The ceilings cached for this device, or NULL (none, unreadable, or another device's). */
static json_t *ceilings_cached(struct temper_session *s)
{
    char path[TEMPER_PATH_MAX + 64], key[1024];
    ceilings_cache_path(s, path, sizeof(path), key, sizeof(key));
    json_t *o = json_load_file(path, 0, NULL);
    const char *stored = json_string_value(json_object_get(o, "device_key"));
    json_t *ceilings = json_object_get(o, "ceilings");
    if (!stored || strcmp(stored, key) || !json_is_object(ceilings)) {
        json_decref(o);
        return NULL;
    }
    json_incref(ceilings);
    json_decref(o);
    return ceilings;
}

/* Keeps the ceilings in the cache; a failure only costs a later measurement (a warning). */
static void ceilings_cache_put(struct temper_session *s)
{
    char path[TEMPER_PATH_MAX + 64], key[1024], dir[TEMPER_PATH_MAX + 64], why[512];
    ceilings_cache_path(s, path, sizeof(path), key, sizeof(key));
    temper_dirname(path, dir, sizeof(dir));
    temper_mkdirs(dir);
    json_t *o = json_pack("{s:s, s:O}", "device_key", key, "ceilings", s->ceilings);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!text || temper_write_file_atomic(path, text, strlen(text), why, sizeof(why)))
        session_notify(s, TEMPER_SESSION_WARNING, "the ceilings could not be kept in %s: %s", path,
                       text ? why : "out of memory");
    free(text);
    json_decref(o);
}

/* Ceilings measured by another process and saved to the file $TEMPER_CEILINGS names (`temper
 * calibrate --save FILE`: {"device_key", "ceilings"}, as in the cache above), taken when they are
 * this device's, so that the processes of a test run, or machines alike, measure a device once.
 * NULL when the variable is unset, the file does not exist (a test run on a machine without the
 * device saves none), it is not a ceilings file (a warning) or it is another device's. */
static json_t *ceilings_seeded(struct temper_session *s)
{
    const char *path = getenv("TEMPER_CEILINGS");
    if (!path || !*path || access(path, F_OK))
        return NULL;
    char key[1024];
    json_error_t jerr;
    temper_store_device_key(s->info, key, sizeof(key));
    json_t *o = json_load_file(path, 0, &jerr);
    if (!o) {
        session_notify(s, TEMPER_SESSION_WARNING, "$TEMPER_CEILINGS (%s) is not a ceilings file: %s", path, jerr.text);
        return NULL;
    }
    const char *stored = json_string_value(json_object_get(o, "device_key"));
    json_t *ceilings = json_object_get(o, "ceilings");
    if (!stored || strcmp(stored, key) || !json_is_object(ceilings) ||
        json_number_value(json_object_get(ceilings, "copy_gbs")) <= 0) {
        json_decref(o);
        return NULL;
    }
    json_incref(ceilings);
    json_decref(o);
    session_notify(s, TEMPER_SESSION_NOTICE, "%s's ceilings taken from %s ($TEMPER_CEILINGS)", s->device_id, path);
    return ceilings;
}

static int ceilings_locked(struct temper_session *s, int measure_again, char *msg, size_t msg_size)
{
    if (!measure_again && s->ceilings)
        return 0;
    if (!measure_again && s->store) {
        pthread_mutex_lock(&s->store_lock);
        s->ceilings = temper_store_calibration(s->store, s->info);
        pthread_mutex_unlock(&s->store_lock);
        if (s->ceilings)
            return 0;
    }
    if (!measure_again && !s->store && (s->ceilings = ceilings_cached(s)))
        return 0;
    json_t *ceilings = measure_again ? NULL : ceilings_seeded(s);
    if (!measure_again && !ceilings)
        session_notify(s, TEMPER_SESSION_NOTICE, "%s has no measured ceilings yet: calibrating it once...",
                       s->device_id);
    int seeded = ceilings != NULL;
    int err = seeded ? 0 : temper_calibrate(s->worker, &ceilings, msg, msg_size);
    if (err)
        return err;
    double share = json_number_value(json_object_get(ceilings, "other_cpu_share"));
    if (!seeded && share > TEMPER_CALIBRATE_BUSY_SHARE)
        session_notify(s, TEMPER_SESSION_WARNING,
                       "%s's ceilings were measured while other processes used %.0f%% of the machine's CPU, even "
                       "on the quietest try: they may be low (run `temper calibrate` on a quieter machine)",
                       s->device_id, 100 * share);
    json_decref(s->ceilings);
    s->ceilings = ceilings;
    if (s->store) {
        pthread_mutex_lock(&s->store_lock);
        err = temper_store_put_calibration(s->store, s->info, s->ceilings, msg, msg_size);
        pthread_mutex_unlock(&s->store_lock);
    } else {
        ceilings_cache_put(s);
    }
    return err;
}

int temper_session_ceilings(struct temper_session *s, int measure_again, json_t **ceilings, char *msg,
                            size_t msg_size)
{
    pthread_mutex_lock(&s->worker_lock);
    int err = ceilings_locked(s, measure_again, msg, msg_size);
    *ceilings = err ? NULL : json_incref(s->ceilings);
    pthread_mutex_unlock(&s->worker_lock);
    return err;
}

json_t *temper_session_device_info(struct temper_session *s)
{
    return s->info;
}

/* ---- the dispatcher ---- */

/* What the dispatcher runs: a stream of queued requests through temper_eval_stream. */
struct stream {
    struct temper_session *s; /* the session */
    uint64_t secret;          /* the secret seed of the requests it takes (0: drawn by the stream) */
    int timed;                /* 1: it has the ceilings, so timed requests may join */
    int max;                  /* requests taken and not yet delivered, at most */
    struct pending **ps;      /* the requests taken, by index */
    char *delivered;          /* per request taken: 1 once its result went out */
    int n, cap;               /* requests taken; the arrays' size */
    int ndelivered;           /* results delivered */
};

static int request_timed(const struct pending *p)
{
    return !p->req.no_timing && !p->req.checks_only && !p->req.profile_run;
}

/* Deep checks, recording and delivery of one result of the stream (result NULL: not evaluated).
 * The result is read once (leniently, as the deep checks always read it; the stream gives it in
 * the one form), completed on the struct and written once. */
static void stream_result(void *user, int index, json_t *result, int err, const char *error)
{
    struct stream *st = user;
    struct temper_session *s = st->s;
    struct pending *p = st->ps[index];
    struct temper_result r;
    if (!result) {
        session_result_unevaluated(&r, p->path, err, error, 0);
    } else if (temper_result_from_stored(result, &r)) {
        st->delivered[index] = 1;
        st->ndelivered++;
        deliver(s, p, result); /* out of memory: it goes as it came, unrecorded */
        return;
    }
    json_decref(result);
    int correct = r.verdict && !strcmp(r.verdict, "correct");
    if (p->req.sanitize && !correct)
        temper_deep_sanitize_unsupported(&r); /* an OpenCL result says so whatever its verdict */
    if ((p->req.sanitize || p->req.profile) && correct) {
        if (p->from_text || !s->deep_exe) {
            const char *why = p->from_text ? "deep checks need the candidate as a file"
                                           : "this session has no temper binary to run deep checks with";
            temper_result_set_value(p->req.sanitize ? &r.sanitize : &r.profile, json_pack("{s:s}", "error", why));
        } else {
            struct temper_deep_request deep = {.self_exe = s->deep_exe, .path = p->path, .device = s->device,
                                               .tasks_dir = s->tasks_dir, .knobs = p->req.knobs,
                                               .nknobs = p->req.nknobs, .timeout_s = 600, .lang = p->req.lang};
            temper_deep_check_result(&deep, &r, p->req.sanitize, p->req.profile);
        }
    }
    result_record(s, p, &r);
    st->delivered[index] = 1;
    st->ndelivered++;
    deliver(s, p, result_write(&r));
}

/* How long a stream with nothing left in flight waits for another request before it ends: a
 * client that submits as results come (the gym's workers) keeps its compiles running ahead. */
#define STREAM_LINGER_MS 20

/* temper_eval_stream's next: the first queued request, if it has the stream's secret seed and
 * (when timed) the stream has the ceilings; a request that cannot be evaluated gets its result
 * here. NULL when there is none now, or the stream has max requests in flight. */
static const struct temper_eval_request *stream_next(void *user, int index)
{
    struct stream *st = user;
    struct temper_session *s = st->s;
    if (index != st->n || st->n - st->ndelivered >= st->max)
        return NULL;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct pending *p = s->first;
        while (p && p->state != PENDING_QUEUED)
            p = p->next;
        if (!p && st->n == st->ndelivered && !s->closing) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += STREAM_LINGER_MS * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&s->work, &s->lock, &ts);
            for (p = s->first; p && p->state != PENDING_QUEUED;)
                p = p->next;
        }
        if (!p || (!p->early_err && (p->req.secret_seed != st->secret || (request_timed(p) && !st->timed)))) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        p->state = PENDING_RUNNING;
        pthread_mutex_unlock(&s->lock);
        if (p->early_err) {
            deliver_unevaluated(s, p, p->early_err, p->early_msg);
            continue;
        }
        if (st->n == st->cap) {
            int cap = st->cap ? 2 * st->cap : 64;
            struct pending **ps = realloc(st->ps, (size_t)cap * sizeof(*ps));
            char *delivered = ps ? realloc(st->delivered, (size_t)cap) : NULL;
            if (ps)
                st->ps = ps;
            if (!delivered) {
                deliver_unevaluated(s, p, TEMPER_ENOMEM, "out of memory");
                return NULL;
            }
            st->delivered = delivered;
            st->cap = cap;
        }
        struct temper_eval_request *r = &p->eval;
        memset(r, 0, sizeof(*r));
        r->request = p->req.request;
        r->cancel = &p->cancel_word;
        r->tasks_dir = s->tasks_dir;
        r->seed = p->req.seed ? p->req.seed : 1;
        st->ps[st->n] = p;
        st->delivered[st->n++] = 0;
        return r;
    }
}

/* Runs one stream from the first queued request p on: lock held on entry and on return. */
static void run_stream(struct temper_session *s, struct pending *first)
{
    int max = s->config.max_batch > 0 ? s->config.max_batch : DEFAULT_MAX_BATCH;
    struct stream st = {.s = s, .secret = first->req.secret_seed, .timed = request_timed(first),
                        .max = max > MAX_IN_FLIGHT ? MAX_IN_FLIGHT : max};
    pthread_mutex_unlock(&s->lock);
    char msg[2048] = "";
    pthread_mutex_lock(&s->worker_lock);
    int err = st.timed ? ceilings_locked(s, 0, msg, sizeof(msg)) : 0;
    json_t *calibration = s->ceilings; /* known ceilings go with untimed requests too */
    if (!err)
        err = temper_eval_stream(s->worker, stream_next, &st, st.timed ? calibration : NULL, s->config.jobs,
                                 stream_result, &st, msg, sizeof(msg));
    pthread_mutex_unlock(&s->worker_lock);
    if (err) {
        /* No device answered (or it could not be calibrated): what was taken and not evaluated
         * says why; if nothing was taken, so do the requests queued for this stream (as a batch
         * did), rather than each trying the device again. */
        if (!st.n) {
            st.timed = 1;
            st.max = MAX_IN_FLIGHT;
            while (stream_next(&st, st.n))
                ;
        }
        for (int i = 0; i < st.n; i++)
            if (!st.delivered[i])
                deliver_unevaluated(s, st.ps[i], err, msg);
    }
    free(st.ps);
    free(st.delivered);
    pthread_mutex_lock(&s->lock);
}

static void *dispatcher_main(void *arg)
{
    struct temper_session *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        struct pending *p = s->first;
        while (p && p->state != PENDING_QUEUED)
            p = p->next;
        if (p && p->early_err) { /* it cannot be evaluated: said without the device */
            p->state = PENDING_RUNNING;
            pthread_mutex_unlock(&s->lock);
            deliver_unevaluated(s, p, p->early_err, p->early_msg);
            pthread_mutex_lock(&s->lock);
            continue;
        }
        if (p) {
            run_stream(s, p);
            continue;
        }
        if (s->closing)
            break;
        pthread_cond_wait(&s->work, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- open and close ---- */

int temper_session_open(const struct temper_session_config *config, struct temper_session **out, char *msg,
                        size_t msg_size)
{
    *out = NULL;
    struct temper_session *s = calloc(1, sizeof(*s));
    if (!s)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    if (config)
        s->config = *config;
    s->device = dup_or_null(s->config.device);
    s->tasks_dir = dup_or_null(s->config.tasks_dir);
    s->deep_exe = dup_or_null(s->config.deep_exe);
    s->config.device = s->device;
    s->config.tasks_dir = s->tasks_dir;
    s->config.deep_exe = s->deep_exe;
    if (s->config.limits)
        s->limits = *s->config.limits;
    else
        temper_limits_default(&s->limits);
    s->config.limits = &s->limits;
    s->next_id = 1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->worker_lock, NULL);
    pthread_mutex_init(&s->store_lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, NULL);
    int err = 0;
    if (!s->config.no_store)
        err = temper_store_open(s->config.store_path, &s->store, msg, msg_size);
    /* The worker starts here, before any thread of the session does, and tells what it runs on. */
    if (!err)
        err = temper_worker_start(s->device, &s->limits, &s->worker, msg, msg_size);
    if (!err)
        err = temper_worker_device_info(s->worker, &s->info, msg, msg_size);
    if (!err) {
        s->device_id = json_string_value(json_object_get(s->info, "id"));
        temper_store_device_key(s->info, s->device_key, sizeof(s->device_key));
        if (pthread_create(&s->dispatcher, NULL, dispatcher_main, s))
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "cannot start the session's dispatcher thread");
        else
            s->dispatcher_started = 1;
    }
    if (err) {
        temper_session_close(s);
        return err;
    }
    *out = s;
    return 0;
}

void temper_session_close(struct temper_session *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_mutex_unlock(&s->lock);
    /* What is still queued is cancelled; what runs finishes and is delivered. */
    for (;;) {
        int64_t id = 0;
        pthread_mutex_lock(&s->lock);
        for (struct pending *p = s->first; p && !id; p = p->next)
            if (p->state == PENDING_QUEUED)
                id = p->id;
        pthread_mutex_unlock(&s->lock);
        if (!id)
            break;
        temper_session_cancel(s, id);
    }
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    if (s->dispatcher_started)
        pthread_join(s->dispatcher, NULL);
    while (s->first) {
        struct pending *p = s->first;
        pending_unlink(s, p);
        pending_free(p);
    }
    temper_worker_stop(s->worker);
    temper_store_close(s->store);
    json_decref(s->info);
    json_decref(s->ceilings);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->worker_lock);
    pthread_mutex_destroy(&s->store_lock);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->done);
    free(s->device);
    free(s->tasks_dir);
    free(s->deep_exe);
    free(s);
}
