/* queue_conformance_test.c: the conformance test of queue.h: every property of the job queue's contract, run
 * against the engine named on the command line, so that both engines pass the same test:
 *   queue_conformance_test redis://127.0.0.1:PORT   (a real redis-server: queue_redis_test.sh starts one)
 *   queue_conformance_test sqlite:DIR               (a store file per test case in DIR)
 * Each case opens a fresh queue (its own key prefix, or its own store file). Claims use a short
 * claim_idle_ms so that the test is quick; nothing asserts a speed. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/queue.h"
#include "temper/error.h"
#include "temper/result.h"

static const char *base_url; /* argv[1] */
static int case_no;          /* numbers each case's queue */

#define CLAIM_MS 200

/* Opens a fresh queue of the engine under test with config (zeros: the defaults, with a short claim). */
static struct temper_queue *open_q(struct temper_queue_config cf)
{
    char url[1024], msg[512] = "";
    struct temper_queue *q = NULL;
    int err = TEMPER_EINVALID;
    if (!cf.claim_idle_ms)
        cf.claim_idle_ms = CLAIM_MS;
    case_no++;
    if (!strncmp(base_url, "redis://", 8)) {
#ifdef TEMPER_HAVE_REDIS
        snprintf(url, sizeof(url), "%s/0?prefix=conf%d_%d", base_url, (int)getpid(), case_no);
        err = temper_queue_open_redis(url, &cf, &q, msg, sizeof(msg));
#else
        fail_msg("this test was built without the Redis engine");
#endif
    } else if (!strncmp(base_url, "sqlite:", 7)) {
#ifdef TEMPER_HAVE_QUEUE_LOCAL
        snprintf(url, sizeof(url), "%s/queue%d.db", base_url + 7, case_no);
        err = temper_queue_open_local(url, &cf, &q, msg, sizeof(msg));
#else
        fail_msg("this test was built without the SQLite engine");
#endif
    } else {
        fail_msg("unknown engine URL %s", base_url);
    }
    if (err)
        fail_msg("opening the queue: %s", msg);
    assert_non_null(q);
    return q;
}

static void job_release(struct temper_job *j)
{
#ifdef TEMPER_HAVE_QUEUE_LOCAL
    temper_job_free(j);
#else /* queue.c (with temper_job_free) comes with the SQLite engine */
    if (j) {
        json_decref(j->item);
        json_decref(j->result);
        free(j);
    }
#endif
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Submits a job with id (and batch, or NULL); returns the submit's error; *existing set. */
static int submit(struct temper_queue *q, const char *id, const char *batch, int *existing)
{
    struct temper_job j = {0};
    snprintf(j.id, sizeof(j.id), "%s", id);
    snprintf(j.batch, sizeof(j.batch), "%s", batch ? batch : "");
    snprintf(j.cache_key, sizeof(j.cache_key), "ck-%s", id);
    j.item = json_pack("{s:s, s:s, s:s, s:{s:s}}", "source", "__kernel void k(__global float *x) { x[0] = 1; }", "lang",
                       "opencl", "task", "vector_add", "knobs", "BLOCK", "64");
    j.submitted_us = now_us();
    char msg[512] = "";
    int ex = -1;
    int err = q->ops->submit(q, &j, 1, &ex, msg, sizeof(msg));
    json_decref(j.item);
    if (existing)
        *existing = ex;
    return err;
}

static void submit_ok(struct temper_queue *q, const char *id, const char *batch)
{
    int existing = -1;
    assert_int_equal(submit(q, id, batch, &existing), 0);
    assert_int_equal(existing, 0);
}

/* A consumer reports itself, as a live one does before it takes a job (and every few seconds). */
static void beat_as(struct temper_queue *q, const char *consumer)
{
    struct temper_worker_status w = {0};
    snprintf(w.consumer, sizeof(w.consumer), "%s", consumer);
    snprintf(w.device, sizeof(w.device), "opencl:0");
    char msg[512] = "";
    if (q->ops->beat(q, &w, msg, sizeof(msg)))
        fail_msg("beat: %s", msg);
}

/* consumer takes a job (NULL: none) with flags, having reported itself first as a live consumer
 * does. */
static struct temper_job *take_flags(struct temper_queue *q, const char *consumer, int wait_ms, int flags)
{
    struct temper_job *j = NULL;
    char msg[512] = "";
    beat_as(q, consumer);
    int err = q->ops->take(q, consumer, wait_ms, flags, &j, msg, sizeof(msg));
    if (err)
        fail_msg("take: %s", msg);
    return j;
}

/* consumer takes a job as one that runs nothing else (it may be handed a job that must run alone). */
static struct temper_job *take(struct temper_queue *q, const char *consumer, int wait_ms)
{
    return take_flags(q, consumer, wait_ms, TEMPER_TAKE_ALONE);
}

static void complete(struct temper_queue *q, const char *consumer, const char *id, enum temper_job_state st,
                     json_t *outcome)
{
    char msg[512] = "";
    int err = q->ops->complete(q, consumer, id, st, outcome, msg, sizeof(msg));
    if (err)
        fail_msg("complete %s: %s", id, msg);
}

/* The job's view (caller decrefs); fails the test if unknown. */
static json_t *view(struct temper_queue *q, const char *id, int wait_ms)
{
    json_t *v = NULL;
    char msg[512] = "";
    int err = q->ops->get(q, id, wait_ms, &v, msg, sizeof(msg));
    if (err)
        fail_msg("get %s: %s", id, msg);
    return v;
}

static void assert_status(struct temper_queue *q, const char *id, const char *status)
{
    json_t *v = view(q, id, 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), status);
    assert_string_equal(json_string_value(json_object_get(v, "id")), id);
    json_decref(v);
}

static struct temper_queue_stats stats(struct temper_queue *q)
{
    struct temper_queue_stats st;
    char msg[512] = "";
    if (q->ops->stats(q, &st, msg, sizeof(msg)))
        fail_msg("stats: %s", msg);
    return st;
}

static json_t *verdict_result(const char *verdict)
{
    return json_pack("{s:s, s:s}", "verdict", verdict, "message", "a test outcome");
}

/* submit, take, complete, get: the whole way of one job, and what take hands over. */
static void test_submit_take_complete(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "job-1", NULL);
    assert_status(q, "job-1", "queued");
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.running, 0);

    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "job-1");
    assert_string_equal(j->batch, "");
    assert_string_equal(j->cache_key, "ck-job-1");
    assert_int_equal(j->deliveries, 1);
    assert_true(j->submitted_us > 0);
    assert_string_equal(json_string_value(json_object_get(j->item, "lang")), "opencl");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j->item, "knobs"), "BLOCK")), "64");
    assert_status(q, "job-1", "running");
    st = stats(q);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.running, 1);
    assert_null(take(q, "c2", 0)); /* nothing else queued, nothing idle yet */

    json_t *res = verdict_result("incorrect");
    complete(q, "c1", j->id, TEMPER_JOB_DONE, res);
    json_t *v = view(q, "job-1", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_true(json_equal(json_object_get(v, "result"), res));
    assert_null(json_object_get(v, "error"));
    json_decref(v);
    json_decref(res);
    job_release(j);
    st = stats(q);
    assert_int_equal(st.running, 0);
    assert_int_equal(st.done, 1);
    sleep_ms(CLAIM_MS + 100);
    assert_null(take(q, "c2", 0)); /* acknowledged: never handed over again */

    json_t *unknown = NULL;
    char msg[256];
    assert_int_equal(q->ops->get(q, "no-such-job", 0, &unknown, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    q->ops->close(q);
}

/* A job submitted with its result known (a cache hit at submission) is done at once, never handed
 * over, and not refused by admission control. */
static void test_submit_with_result(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.max_depth = 1});
    submit_ok(q, "open", NULL); /* the queue is full */
    struct temper_job j = {0};
    snprintf(j.id, sizeof(j.id), "known");
    snprintf(j.batch, sizeof(j.batch), "step-k");
    j.item = json_pack("{s:s, s:s}", "source", "__kernel void k() {}", "lang", "opencl");
    j.result = verdict_result("correct");
    j.submitted_us = now_us();
    int existing = -1;
    char msg[256];
    assert_int_equal(q->ops->submit(q, &j, 1, &existing, msg, sizeof(msg)), 0);
    assert_int_equal(existing, 0);
    json_t *v = view(q, "known", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_true(json_equal(json_object_get(v, "result"), j.result));
    json_decref(v);
    json_t *ids = NULL;
    assert_int_equal(q->ops->batch(q, "step-k", &ids, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(ids), 1);
    json_decref(ids);
    struct temper_job *t = take(q, "c1", 0);
    assert_non_null(t);
    assert_string_equal(t->id, "open");
    job_release(t);
    assert_null(take(q, "c1", 0));
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.running, 1);
    json_decref(j.item);
    json_decref(j.result);
    q->ops->close(q);
}

/* A FAILED outcome is an error object, never a result. */
static void test_failed_outcome(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "job-f", NULL);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    json_t *e = json_pack("{s:s, s:s, s:b}", "kind", "device", "message", "the device went away", "retryable", 1);
    complete(q, "c1", "job-f", TEMPER_JOB_FAILED, e);
    json_t *v = view(q, "job-f", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "failed");
    assert_true(json_equal(json_object_get(v, "error"), e));
    assert_null(json_object_get(v, "result"));
    json_decref(v);
    json_decref(e);
    job_release(j);
    assert_int_equal(stats(q).failed, 1);
    assert_int_equal(stats(q).done, 0);
    q->ops->close(q);
}

/* The oldest queued job first. */
static void test_order(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    const char *ids[] = {"o-3", "o-1", "o-2"};
    for (int i = 0; i < 3; i++)
        submit_ok(q, ids[i], NULL);
    for (int i = 0; i < 3; i++) {
        struct temper_job *j = take(q, "c1", 0);
        assert_non_null(j);
        assert_string_equal(j->id, ids[i]);
        job_release(j);
    }
    q->ops->close(q);
}

/* A known id is not queued again, whatever its state. */
static void test_resubmit_existing(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "dup", NULL);
    int existing = -1;
    assert_int_equal(submit(q, "dup", NULL, &existing), 0);
    assert_int_equal(existing, 1);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    assert_null(take(q, "c1", 0)); /* one job, not two */
    assert_int_equal(submit(q, "dup", NULL, &existing), 0);
    assert_int_equal(existing, 1);
    json_t *res = verdict_result("correct");
    complete(q, "c1", "dup", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    assert_int_equal(submit(q, "dup", NULL, &existing), 0);
    assert_int_equal(existing, 1);
    assert_status(q, "dup", "done");
    assert_null(take(q, "c1", 0));
    q->ops->close(q);
}

/* Admission: ERANGE at max_depth unfinished jobs; nothing queued is dropped to make room. */
static void test_admission(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.max_depth = 2});
    submit_ok(q, "a1", NULL);
    submit_ok(q, "a2", NULL);
    int existing = -1;
    assert_int_equal(submit(q, "a3", NULL, &existing), TEMPER_ERANGE);
    struct temper_job *j = take(q, "c1", 0); /* running still counts */
    assert_non_null(j);
    assert_int_equal(submit(q, "a3", NULL, &existing), TEMPER_ERANGE);
    json_t *unknown = NULL;
    char msg[256];
    assert_int_equal(q->ops->get(q, "a3", 0, &unknown, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    json_t *res = verdict_result("correct");
    complete(q, "c1", j->id, TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    submit_ok(q, "a3", NULL);
    /* both waiting jobs are still there, in order */
    const char *rest[] = {"a2", "a3"};
    for (int i = 0; i < 2; i++) {
        j = take(q, "c1", 0);
        assert_non_null(j);
        assert_string_equal(j->id, rest[i]);
        job_release(j);
    }
    q->ops->close(q);
}

/* A job left pending by a consumer (that died) is re-queued after claim_idle_ms and handed to
 * another, with its deliveries counted, to run alone; before that it is not. */
static void test_claim_after_idle(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "slow", NULL);
    struct temper_job *j1 = take(q, "dead-consumer", 0);
    assert_non_null(j1);
    assert_int_equal(j1->deliveries, 1);
    assert_null(take(q, "c2", 0));
    struct temper_job *j2 = take(q, "c2", CLAIM_MS * 10); /* waits until it is idle long enough */
    assert_non_null(j2);
    assert_string_equal(j2->id, "slow");
    assert_int_equal(j2->deliveries, 2);
    assert_int_equal(j2->alone, 1); /* re-queued after a death: it runs alone */
    assert_true(json_equal(j1->item, j2->item));
    assert_int_equal(stats(q).redeliveries, 1);
    assert_int_equal(stats(q).running, 1);
    json_t *res = verdict_result("correct");
    complete(q, "c2", "slow", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j1);
    job_release(j2);
    assert_status(q, "slow", "done");
    sleep_ms(CLAIM_MS + 100);
    assert_null(take(q, "c3", 0));
    assert_int_equal(stats(q).running, 0);
    q->ops->close(q);
}

/* A job whose holder dies while it runs alone is charged the death; at max_deliveries charged
 * deaths it goes to the dead letters, with a runtime_error result that says so, in the one form of
 * a result. Its first death, beside another job, is not charged. */
static void test_dead_letter(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.max_deliveries = 2});
    submit_ok(q, "killer", NULL);
    submit_ok(q, "fine", NULL);
    struct temper_job *j = take(q, "w1", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "killer");
    assert_int_equal(j->alone, 0);
    job_release(j);
    j = take_flags(q, "w1", 0, 0); /* beside it: w1 dies with both */
    assert_non_null(j);
    assert_string_equal(j->id, "fine");
    job_release(j);
    sleep_ms(CLAIM_MS + 100);
    const char *order[] = {"killer", "fine"}; /* both re-queued, uncharged, to run alone, in order */
    for (int i = 0; i < 2; i++) {
        j = take(q, "w2", 0);
        assert_non_null(j);
        assert_string_equal(j->id, order[i]);
        assert_int_equal(j->deliveries, 2);
        assert_int_equal(j->alone, 1);
        if (i == 1) {
            json_t *res = verdict_result("correct");
            complete(q, "w2", "fine", TEMPER_JOB_DONE, res);
            json_decref(res);
        }
        job_release(j);
    }
    sleep_ms(CLAIM_MS + 100);
    j = take(q, "w3", 0); /* w2 died while killer ran alone: one death charged, under the limit */
    assert_non_null(j);
    assert_string_equal(j->id, "killer");
    assert_int_equal(j->deliveries, 3);
    job_release(j);
    sleep_ms(CLAIM_MS + 100);
    assert_null(take(q, "w4", 0)); /* the second charged death: not handed over again */

    json_t *v = view(q, "killer", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    json_t *res = json_object_get(v, "result");
    assert_non_null(res);
    assert_string_equal(json_string_value(json_object_get(res, "verdict")), "runtime_error");
    assert_non_null(strstr(json_string_value(json_object_get(res, "message")), "2 times")); /* says why */
    assert_string_equal(json_string_value(json_object_get(res, "task")), "vector_add"); /* the item's task */
    char msg[512] = "";
    if (temper_result_validate(res, msg, sizeof(msg)))
        fail_msg("the dead letter's result is not in the one form: %s", msg);
    json_decref(v);
    assert_status(q, "fine", "done");

    json_t *dead = NULL;
    assert_int_equal(q->ops->dead_letters(q, &dead, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(dead), 1);
    json_t *d = json_array_get(dead, 0);
    assert_string_equal(json_string_value(json_object_get(d, "id")), "killer");
    assert_int_equal(json_integer_value(json_object_get(d, "deliveries")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "result"), "verdict")), "runtime_error");
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "result"), "task")), "vector_add");
    json_decref(dead);
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.dead_letters, 1);
    assert_int_equal(st.running + st.queued, 0);
    /* a late complete from a consumer that still held it changes nothing */
    json_t *late = verdict_result("correct");
    complete(q, "w1", "killer", TEMPER_JOB_DONE, late);
    json_decref(late);
    v = view(q, "killer", 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "verdict")), "runtime_error");
    json_decref(v);
    q->ops->close(q);
}

/* A kernel that kills every process it runs in: the honest jobs that ran beside it are re-run alone
 * and answered, never charged; while a job waits to run alone, a take that may not run it gets
 * nothing (so that busy consumers drain), and one that may gets it before older shared work. */
static void test_neighbours_not_charged(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.max_deliveries = 2});
    const char *ids[] = {"n1", "k", "n2"};
    for (int i = 0; i < 3; i++)
        submit_ok(q, ids[i], NULL);
    for (int i = 0; i < 3; i++) { /* proc1 runs the three together, and k kills it */
        struct temper_job *j = take_flags(q, "proc1", 0, 0);
        assert_non_null(j);
        assert_string_equal(j->id, ids[i]);
        job_release(j);
    }
    sleep_ms(CLAIM_MS + 100);
    submit_ok(q, "later", NULL);
    assert_null(take_flags(q, "busy", 0, 0)); /* n1, k and n2 wait to run alone, uncharged */
    struct temper_job *j = take(q, "proc2", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "n1");
    assert_int_equal(j->alone, 1);
    json_t *res = verdict_result("correct");
    complete(q, "proc2", "n1", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    j = take(q, "proc2", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "k"); /* proc2 dies with k alone: charged */
    job_release(j);
    j = take(q, "proc3", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "n2");
    res = verdict_result("correct");
    complete(q, "proc3", "n2", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    sleep_ms(CLAIM_MS + 100);
    j = take(q, "proc3", 0); /* k again, alone: proc3 dies with it too */
    assert_non_null(j);
    assert_string_equal(j->id, "k");
    assert_int_equal(j->deliveries, 3);
    job_release(j);
    sleep_ms(CLAIM_MS + 100);
    j = take(q, "proc4", 0); /* k's second charged death: its dead letter; the shared job comes */
    assert_non_null(j);
    assert_string_equal(j->id, "later");
    job_release(j);
    assert_status(q, "n1", "done");
    assert_status(q, "n2", "done");
    json_t *v = view(q, "k", 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "verdict")), "runtime_error");
    json_decref(v);
    json_t *dead = NULL;
    char msg[256];
    assert_int_equal(q->ops->dead_letters(q, &dead, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(dead), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(dead, 0), "id")), "k");
    json_decref(dead);
    q->ops->close(q);
}

/* A worker started again under the same name (a new instance) releases what the dead instance held
 * at once, without waiting for claim_idle_ms; other names' jobs stay where they are. */
static void test_release_same_name(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.claim_idle_ms = 3600000});
    submit_ok(q, "held", NULL);
    submit_ok(q, "other", NULL);
    struct temper_job *j = take(q, "gpu7@0123456789abcdef", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "held");
    job_release(j);
    j = take(q, "gpu8@0123456789abcdef", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "other");
    job_release(j);
    char msg[256];
    assert_int_equal(q->ops->release(q, "gpu7@fedcba9876543210", msg, sizeof(msg)), 0);
    assert_status(q, "held", "queued");
    assert_status(q, "other", "running");
    j = take(q, "gpu7@fedcba9876543210", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "held");
    assert_int_equal(j->deliveries, 2);
    assert_int_equal(j->alone, 1);
    job_release(j);
    json_t *list = NULL;
    assert_int_equal(q->ops->workers(q, 60, &list, msg, sizeof(msg)), 0);
    size_t i;
    json_t *w;
    json_array_foreach(list, i, w) /* the dead instance is not listed as a live worker */
        assert_string_not_equal(json_string_value(json_object_get(w, "consumer")), "gpu7@0123456789abcdef");
    json_decref(list);
    assert_int_equal(q->ops->release(q, "no-instance", msg, sizeof(msg)), TEMPER_EINVALID);
    q->ops->close(q);
}

/* An id names one item: submitting it with another item is refused (EINVALID, existing 2) and
 * changes nothing; a request is queued all or none (a refused one queues none of its jobs). */
static void test_submit_all_or_none(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.max_depth = 3});
    submit_ok(q, "mine", NULL);
    struct temper_job jobs[3];
    memset(jobs, 0, sizeof(jobs));
    const char *ids[] = {"fresh1", "fresh2", "mine"};
    for (int i = 0; i < 3; i++) {
        snprintf(jobs[i].id, sizeof(jobs[i].id), "%s", ids[i]);
        snprintf(jobs[i].cache_key, sizeof(jobs[i].cache_key), "ck-%s", ids[i]);
        jobs[i].item = json_pack("{s:s, s:s, s:s}", "source", "__kernel void other() {}", "lang", "opencl", "task",
                                 "vector_add");
        jobs[i].submitted_us = now_us();
    }
    int existing[3] = {-1, -1, -1};
    char msg[512];
    assert_int_equal(q->ops->submit(q, jobs, 3, existing, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_int_equal(existing[2], 2);
    assert_non_null(strstr(msg, "mine"));
    json_t *v = NULL;
    assert_int_equal(q->ops->get(q, "fresh1", 0, &v, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    json_t *mine = view(q, "mine", 0);
    assert_string_equal(json_string_value(json_object_get(mine, "status")), "queued");
    json_decref(mine);
    /* the same id twice in one call: one job for one item, a refusal for two */
    snprintf(jobs[2].id, sizeof(jobs[2].id), "fresh1");
    snprintf(jobs[2].cache_key, sizeof(jobs[2].cache_key), "ck-fresh1");
    assert_int_equal(q->ops->submit(q, jobs, 3, existing, msg, sizeof(msg)), 0);
    assert_int_equal(existing[0], 0);
    assert_int_equal(existing[1], 0);
    assert_int_equal(existing[2], 1);
    assert_int_equal(stats(q).queued, 3);
    /* the queue's depth (3) is reached: a request of two new jobs and a known one is refused whole */
    snprintf(jobs[0].id, sizeof(jobs[0].id), "fresh3");
    snprintf(jobs[1].id, sizeof(jobs[1].id), "fresh4");
    assert_int_equal(q->ops->submit(q, jobs, 3, existing, msg, sizeof(msg)), TEMPER_ERANGE);
    assert_int_equal(q->ops->get(q, "fresh3", 0, &v, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_int_equal(stats(q).queued, 3);
    /* a known id with the same item but another content key (the task changed) is refused too */
    snprintf(jobs[0].id, sizeof(jobs[0].id), "fresh2");
    snprintf(jobs[0].cache_key, sizeof(jobs[0].cache_key), "ck-changed");
    assert_int_equal(q->ops->submit(q, jobs, 1, existing, msg, sizeof(msg)), TEMPER_EINVALID);
    for (int i = 0; i < 3; i++)
        json_decref(jobs[i].item);
    q->ops->close(q);
}

/* Cancelling: a queued job is never handed over; a running one stays cancelled when its outcome
 * comes; a finished one keeps its state; an unknown one is ENOTFOUND. */
static void test_cancel(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "run", NULL);
    submit_ok(q, "wait", NULL);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "run");
    char msg[256];
    enum temper_job_state was = TEMPER_JOB_DONE;
    assert_int_equal(q->ops->cancel(q, "wait", &was, msg, sizeof(msg)), 0);
    assert_int_equal(was, TEMPER_JOB_QUEUED);
    assert_status(q, "wait", "cancelled");
    assert_null(take(q, "c2", 0));
    assert_int_equal(q->ops->cancel(q, "run", &was, msg, sizeof(msg)), 0);
    assert_int_equal(was, TEMPER_JOB_RUNNING);
    assert_status(q, "run", "cancelled");
    json_t *res = verdict_result("correct");
    complete(q, "c1", "run", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    json_t *v = view(q, "run", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "cancelled");
    assert_null(json_object_get(v, "result"));
    json_decref(v);
    sleep_ms(CLAIM_MS + 100);
    assert_null(take(q, "c2", 0)); /* acknowledged, not claimable */
    assert_int_equal(q->ops->cancel(q, "nope", &was, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    /* a finished job keeps its outcome */
    submit_ok(q, "fin", NULL);
    j = take(q, "c1", 0);
    assert_non_null(j);
    res = verdict_result("incorrect");
    complete(q, "c1", "fin", TEMPER_JOB_DONE, res);
    job_release(j);
    assert_int_equal(q->ops->cancel(q, "fin", &was, msg, sizeof(msg)), 0);
    assert_int_equal(was, TEMPER_JOB_DONE);
    v = view(q, "fin", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_true(json_equal(json_object_get(v, "result"), res));
    json_decref(v);
    json_decref(res);
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.cancelled, 2);
    assert_int_equal(st.queued + st.running, 0);
    /* a cancelled job left pending by a consumer that died is not handed over again */
    submit_ok(q, "orphan", NULL);
    j = take(q, "dies", 0);
    assert_non_null(j);
    job_release(j);
    assert_int_equal(q->ops->cancel(q, "orphan", &was, msg, sizeof(msg)), 0);
    sleep_ms(CLAIM_MS + 100);
    assert_null(take(q, "c2", 0));
    q->ops->close(q);
}

/* The outcome is recorded once: a second complete (a claimed copy finishing) changes nothing. */
static void test_complete_twice(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "twice", NULL);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    json_t *first = verdict_result("correct"), *second = verdict_result("incorrect");
    complete(q, "c1", "twice", TEMPER_JOB_DONE, first);
    complete(q, "c2", "twice", TEMPER_JOB_DONE, second);
    json_t *err = json_pack("{s:s, s:s, s:b}", "kind", "device", "message", "late", "retryable", 0);
    complete(q, "c1", "twice", TEMPER_JOB_FAILED, err);
    json_decref(err);
    json_t *v = view(q, "twice", 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_true(json_equal(json_object_get(v, "result"), first));
    json_decref(v);
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.failed, 0);
    json_decref(first);
    json_decref(second);
    job_release(j);
    q->ops->close(q);
}

/* A batch lists its jobs in submission order; an unknown batch is ENOTFOUND. */
static void test_batches(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "b-x", "step-1");
    submit_ok(q, "other", "step-2");
    submit_ok(q, "b-a", "step-1");
    submit_ok(q, "b-m", "step-1");
    json_t *ids = NULL;
    char msg[256];
    assert_int_equal(q->ops->batch(q, "step-1", &ids, msg, sizeof(msg)), 0);
    json_t *want = json_pack("[s,s,s]", "b-x", "b-a", "b-m");
    assert_true(json_equal(ids, want));
    json_decref(ids);
    json_decref(want);
    json_t *v = view(q, "b-a", 0);
    assert_string_equal(json_string_value(json_object_get(v, "batch")), "step-1");
    json_decref(v);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    assert_string_equal(j->batch, "step-1");
    job_release(j);
    assert_int_equal(q->ops->batch(q, "step-9", &ids, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    q->ops->close(q);
}

/* The cache: a miss, then what was put. */
static void test_cache(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    json_t *got = NULL;
    char msg[256];
    assert_int_equal(q->ops->cache_get(q, "k0123", &got, msg, sizeof(msg)), 0);
    assert_null(got);
    json_t *res = verdict_result("correct");
    assert_int_equal(q->ops->cache_put(q, "k0123", res, msg, sizeof(msg)), 0);
    assert_int_equal(q->ops->cache_get(q, "k0123", &got, msg, sizeof(msg)), 0);
    assert_non_null(got);
    assert_true(json_equal(got, res));
    json_decref(got);
    assert_int_equal(q->ops->cache_get(q, "k9999", &got, msg, sizeof(msg)), 0);
    assert_null(got);
    json_decref(res);
    q->ops->close(q);
}

/* Beats: the workers that reported within max_age_s, with what they reported. */
static void test_workers(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    struct temper_worker_status w = {.busy = 1, .jobs_done = 7};
    snprintf(w.consumer, sizeof(w.consumer), "host:1:cuda:0");
    snprintf(w.device, sizeof(w.device), "cuda:0");
    snprintf(w.device_key, sizeof(w.device_key), "NVIDIA H200|GPU-1234");
    char msg[256];
    assert_int_equal(q->ops->beat(q, &w, msg, sizeof(msg)), 0);
    struct temper_worker_status old = w;
    snprintf(old.consumer, sizeof(old.consumer), "host:2:cuda:1");
    old.seen_us = now_us() - 600 * 1000000LL;
    assert_int_equal(q->ops->beat(q, &old, msg, sizeof(msg)), 0);
    w.jobs_done = 8; /* a later report replaces the earlier one */
    w.busy = 0;
    assert_int_equal(q->ops->beat(q, &w, msg, sizeof(msg)), 0);
    json_t *list = NULL;
    assert_int_equal(q->ops->workers(q, 60, &list, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(list), 1);
    json_t *o = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(o, "consumer")), "host:1:cuda:0");
    assert_string_equal(json_string_value(json_object_get(o, "device")), "cuda:0");
    assert_string_equal(json_string_value(json_object_get(o, "device_key")), "NVIDIA H200|GPU-1234");
    assert_int_equal(json_integer_value(json_object_get(o, "jobs_done")), 8);
    assert_true(json_is_false(json_object_get(o, "busy")));
    assert_true(json_integer_value(json_object_get(o, "seen_us")) > now_us() - 60 * 1000000LL);
    json_decref(list);
    assert_int_equal(q->ops->workers(q, 3600, &list, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    q->ops->close(q);
}

/* Stats count each state. */
static void test_stats(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    struct temper_queue_stats st = stats(q);
    assert_int_equal(st.queued + st.running + st.done + st.failed + st.cancelled + st.redeliveries + st.dead_letters, 0);
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "s%d", i);
        submit_ok(q, id, NULL);
    }
    struct temper_job *a = take(q, "c1", 0), *b = take(q, "c1", 0), *c = take(q, "c1", 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    json_t *res = verdict_result("correct");
    complete(q, "c1", a->id, TEMPER_JOB_DONE, res);
    json_decref(res);
    char msg[256];
    assert_int_equal(q->ops->cancel(q, "s4", NULL, msg, sizeof(msg)), 0);
    st = stats(q);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.running, 2);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.failed, 0);
    job_release(a);
    job_release(b);
    job_release(c);
    q->ops->close(q);
}

/* A long-poll get waits, and wakes when the outcome is recorded, not at its limit. */
struct waiter {
    struct temper_queue *q; /* the queue */
    json_t *view;           /* what get returned */
    int err;                /* get's error */
    int64_t waited_ms;      /* how long get took */
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    char msg[256];
    int64_t t0 = now_us();
    w->err = w->q->ops->get(w->q, "poll", 20000, &w->view, msg, sizeof(msg));
    w->waited_ms = (now_us() - t0) / 1000;
    return NULL;
}

static void test_long_poll(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    submit_ok(q, "poll", NULL);
    /* a get that waits on an unfinished job returns its state when the wait is over */
    int64_t t0 = now_us();
    json_t *v = view(q, "poll", 300);
    assert_true(now_us() - t0 >= 250 * 1000);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "queued");
    json_decref(v);
    struct waiter w[2] = {{.q = q}, {.q = q}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, wait_thread, &w[i]), 0);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    sleep_ms(300);
    json_t *res = verdict_result("correct");
    complete(q, "c1", "poll", TEMPER_JOB_DONE, res);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].err, 0);
        assert_string_equal(json_string_value(json_object_get(w[i].view, "status")), "done");
        assert_true(json_equal(json_object_get(w[i].view, "result"), res));
        assert_true(w[i].waited_ms < 5000); /* woken by the outcome, not by its 20 s limit nor a 10 s slice */
        json_decref(w[i].view);
    }
    /* a finished job answers at once, even with a wait */
    v = view(q, "poll", 20000);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    json_decref(v);
    json_decref(res);
    job_release(j);
    q->ops->close(q);
}

/* Finished jobs are kept keep_done_s: known (not queued again) until then. */
static void test_keep_done(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){.keep_done_s = 1});
    submit_ok(q, "brief", NULL);
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    json_t *res = verdict_result("correct");
    complete(q, "c1", "brief", TEMPER_JOB_DONE, res);
    json_decref(res);
    job_release(j);
    int existing = -1;
    assert_int_equal(submit(q, "brief", NULL, &existing), 0);
    assert_int_equal(existing, 1);
    if (!strcmp(q->ops->engine, "redis")) {
        /* Redis expires them on time (the SQLite engine removes expired jobs at its own pace) */
        sleep_ms(2500);
        json_t *v = NULL;
        char msg[256];
        assert_int_equal(q->ops->get(q, "brief", 0, &v, msg, sizeof(msg)), TEMPER_ENOTFOUND);
        assert_int_equal(stats(q).done, 0);
        submit_ok(q, "brief", NULL);
        assert_status(q, "brief", "queued");
    }
    q->ops->close(q);
}

/* Consumers on several threads: every job handed to exactly one of them. */
#define RACE_JOBS 40
#define RACE_THREADS 4

struct racer {
    struct temper_queue *q; /* the queue */
    char name[32];          /* its consumer name */
    int taken[RACE_JOBS];   /* how many times it got each job */
};

static void *race_thread(void *arg)
{
    struct racer *r = arg;
    beat_as(r->q, r->name);
    for (;;) {
        struct temper_job *j = NULL;
        char msg[256];
        if (r->q->ops->take(r->q, r->name, 0, 0, &j, msg, sizeof(msg)) || !j)
            break;
        r->taken[atoi(j->id + 1)]++;
        json_t *res = json_pack("{s:s}", "verdict", "correct");
        r->q->ops->complete(r->q, r->name, j->id, TEMPER_JOB_DONE, res, msg, sizeof(msg));
        json_decref(res);
        job_release(j);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    for (int i = 0; i < RACE_JOBS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        submit_ok(q, id, NULL);
    }
    struct racer rs[RACE_THREADS];
    pthread_t th[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        memset(&rs[i], 0, sizeof(rs[i]));
        rs[i].q = q;
        snprintf(rs[i].name, sizeof(rs[i].name), "racer%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, race_thread, &rs[i]), 0);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int k = 0; k < RACE_JOBS; k++) {
        int n = 0;
        for (int i = 0; i < RACE_THREADS; i++)
            n += rs[i].taken[k];
        assert_int_equal(n, 1);
    }
    assert_int_equal(stats(q).done, RACE_JOBS);
    q->ops->close(q);
}

/* ---- the Redis engine's own properties (skipped for another engine) ---- */

/* Opens a Redis queue with a URL tail; returns the error. */
static int open_redis(const char *tail, struct temper_queue **q, char *msg, size_t msg_size)
{
    char url[1024];
    snprintf(url, sizeof(url), "%s%s", base_url, tail);
    *q = NULL;
#ifdef TEMPER_HAVE_REDIS
    return temper_queue_open_redis(url, NULL, q, msg, msg_size);
#else
    (void)msg_size;
    (void)msg;
    return TEMPER_EUNSUPPORTED;
#endif
}

/* The URL: its settings reach the queue; bad ones are clear errors; no server is an I/O error. */
static void test_redis_url(void **state)
{
    (void)state;
    if (strncmp(base_url, "redis://", 8))
        skip();
    struct temper_queue *q = NULL;
    char msg[512] = "", tail[128];
    snprintf(tail, sizeof(tail), "/0?prefix=url%d&max_depth=1&claim_idle_ms=150&max_deliveries=5&keep_done_s=9", (int)getpid());
    assert_int_equal(open_redis(tail, &q, msg, sizeof(msg)), 0);
    assert_int_equal(q->config.max_depth, 1);
    assert_int_equal(q->config.claim_idle_ms, 150);
    assert_int_equal(q->config.max_deliveries, 5);
    assert_int_equal(q->config.keep_done_s, 9);
    assert_string_equal(q->ops->engine, "redis");
    submit_ok(q, "only", NULL);
    int existing;
    assert_int_equal(submit(q, "second", NULL, &existing), TEMPER_ERANGE);
    q->ops->close(q);
    const char *bad[] = {"/0?prefix=a b", "/0?bogus=1", "/0?claim_idle_ms=soon", "/0?max_deliveries=0", "/x", "/0?prefix"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        msg[0] = 0;
        assert_int_equal(open_redis(bad[i], &q, msg, sizeof(msg)), TEMPER_EINVALID);
        assert_null(q);
        assert_true(strlen(msg) > 10);
    }
#ifdef TEMPER_HAVE_REDIS
    assert_int_equal(temper_queue_open_redis("http://127.0.0.1:6379", NULL, &q, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_int_equal(temper_queue_open_redis("redis://127.0.0.1:99999", NULL, &q, msg, sizeof(msg)), TEMPER_EINVALID);
    /* port 1 on loopback: nothing listens there */
    assert_int_equal(temper_queue_open_redis("redis://127.0.0.1:1", NULL, &q, msg, sizeof(msg)), TEMPER_EIO);
    assert_non_null(strstr(msg, "cannot connect"));
#endif
}

/* A consumer that beats keeps its jobs, every one of them: its beats reset their idle time, so that
 * a long job on a live worker is not taken for its death; once the beats stop, they are re-queued. */
static void test_redis_beat_keeps_jobs(void **state)
{
    (void)state;
    if (strncmp(base_url, "redis://", 8))
        skip();
    struct temper_queue *q = open_q((struct temper_queue_config){0});
    const char *ids[] = {"long1", "long2", "long3"};
    for (int i = 0; i < 3; i++) {
        submit_ok(q, ids[i], NULL);
        struct temper_job *j = take_flags(q, "alive", 0, 0);
        assert_non_null(j);
        job_release(j);
    }
    struct temper_worker_status w = {.busy = 1};
    snprintf(w.consumer, sizeof(w.consumer), "alive");
    snprintf(w.device, sizeof(w.device), "opencl:0");
    char msg[256];
    for (int i = 0; i < 8; i++) { /* four claim periods */
        assert_int_equal(q->ops->beat(q, &w, msg, sizeof(msg)), 0);
        sleep_ms(CLAIM_MS / 2);
        assert_null(take(q, "other", 0));
    }
    for (int i = 0; i < 3; i++) {
        struct temper_job *j = take(q, "other", CLAIM_MS * 10);
        assert_non_null(j);
        assert_string_equal(j->id, ids[i]);
        assert_int_equal(j->deliveries, 2);
        json_t *res = verdict_result("correct");
        complete(q, "other", j->id, TEMPER_JOB_DONE, res);
        json_decref(res);
        job_release(j);
    }
    q->ops->close(q);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: queue_conformance_test redis://HOST:PORT | sqlite:DIR\n");
        return 2;
    }
    base_url = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_take_complete),
        cmocka_unit_test(test_failed_outcome),
        cmocka_unit_test(test_submit_with_result),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_resubmit_existing),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_claim_after_idle),
        cmocka_unit_test(test_dead_letter),
        cmocka_unit_test(test_neighbours_not_charged),
        cmocka_unit_test(test_release_same_name),
        cmocka_unit_test(test_submit_all_or_none),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_complete_twice),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_workers),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_long_poll),
        cmocka_unit_test(test_keep_done),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_redis_url),
        cmocka_unit_test(test_redis_beat_keeps_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
