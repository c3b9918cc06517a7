/* queue_test.c: the job queue's contract (src/serve/queue.h), run against one engine: the SQLite
 * store (default: a fresh store file per test) or the queue URL given as the first argument, with
 * %d where each test's own empty database number goes ("redis://127.0.0.1:PORT/%d": 0 to 7), so
 * that both engines pass the same tests.
 * Delivery order, outcomes recorded once, cancel, claims after idle, dead letters, admission,
 * batches, the cache, workers, long polls, and the content keys. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/queue.h"
#include "temper/error.h"

static char store_dir[] = "/tmp/temper-queue-test-XXXXXX";
static const char *url_arg; /* a Redis URL from the command line, or NULL */
static int store_n;         /* a fresh store per test */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Opens a fresh queue with the given settings. */
static struct temper_queue *open_queue(int max_depth, int claim_idle_ms, int max_deliveries)
{
    struct temper_queue_config c = {max_depth, claim_idle_ms, max_deliveries, 0};
    struct temper_queue *q = NULL;
    char path[256], msg[1024];
    if (url_arg) /* "redis://127.0.0.1:PORT/%d": a database of its own for each test */
        snprintf(path, sizeof(path), url_arg, store_n++);
    else
        snprintf(path, sizeof(path), "%s/q%d.db", store_dir, store_n++);
    int err = temper_queue_open(path, &c, &q, msg, sizeof(msg));
    if (err)
        fail_msg("opening the queue: %s", msg);
    return q;
}

/* Submits a job with this id and source text; returns the submit's error. */
static int put(struct temper_queue *q, const char *id, const char *source, const char *batch, int *existing)
{
    struct temper_job job = {0};
    snprintf(job.id, sizeof(job.id), "%s", id);
    snprintf(job.batch, sizeof(job.batch), "%s", batch ? batch : "");
    job.item = json_pack("{s:s, s:s, s:s}", "source", source, "lang", "opencl", "task", "vector_add");
    job.submitted_us = now_us();
    char msg[512];
    int ex = 0, err = q->ops->submit(q, &job, 1, &ex, msg, sizeof(msg));
    json_decref(job.item);
    if (existing)
        *existing = ex;
    return err;
}

static const char *status_of(struct temper_queue *q, const char *id, char out[32])
{
    json_t *v = NULL;
    char msg[256];
    snprintf(out, 32, "%s", q->ops->get(q, id, 0, &v, msg, sizeof(msg)) ? "unknown" : json_string_value(json_object_get(v, "status")));
    json_decref(v);
    return out;
}

static struct temper_job *take(struct temper_queue *q, const char *consumer, int wait_ms)
{
    struct temper_job *job = NULL;
    char msg[512];
    /* a consumer that holds nothing else: it may be handed a job that must run alone */
    assert_int_equal(q->ops->take(q, consumer, wait_ms, TEMPER_TAKE_ALONE, &job, msg, sizeof(msg)), 0);
    return job;
}

static void beat(struct temper_queue *q, const char *consumer)
{
    struct temper_worker_status w = {0};
    snprintf(w.consumer, sizeof(w.consumer), "%s", consumer);
    snprintf(w.device, sizeof(w.device), "opencl:0");
    snprintf(w.device_key, sizeof(w.device_key), "opencl|test");
    w.seen_us = now_us();
    char msg[256];
    assert_int_equal(q->ops->beat(q, &w, msg, sizeof(msg)), 0);
}

static void test_submit_take_complete(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 0, 0);
    char s[32], msg[512];
    int existing = 1;
    assert_int_equal(put(q, "a", "A", "b1", &existing), 0);
    assert_int_equal(existing, 0);
    assert_int_equal(put(q, "b", "B", "b1", NULL), 0);
    assert_int_equal(put(q, "a", "A", NULL, &existing), 0); /* a known id, the same item: nothing changes */
    assert_int_equal(existing, 1);
    assert_int_equal(put(q, "a", "other", NULL, &existing), TEMPER_EINVALID); /* another item: refused */
    assert_int_equal(existing, 2);
    assert_string_equal(status_of(q, "a", s), "queued");
    beat(q, "c1");
    struct temper_job *j = take(q, "c1", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "a"); /* oldest first */
    assert_string_equal(json_string_value(json_object_get(j->item, "source")), "A");
    assert_string_equal(j->batch, "b1");
    assert_int_equal(j->deliveries, 1);
    assert_string_equal(status_of(q, "a", s), "running");
    json_t *result = json_pack("{s:s}", "verdict", "correct");
    assert_int_equal(q->ops->complete(q, "c1", "a", TEMPER_JOB_DONE, result, msg, sizeof(msg)), 0);
    json_t *other = json_pack("{s:s}", "verdict", "incorrect");
    assert_int_equal(q->ops->complete(q, "c1", "a", TEMPER_JOB_DONE, other, msg, sizeof(msg)), 0);
    json_t *v = NULL;
    assert_int_equal(q->ops->get(q, "a", 0, &v, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "verdict")), "correct");
    json_decref(v);
    temper_job_free(j);
    j = take(q, "c1", 0);
    assert_string_equal(j->id, "b");
    json_t *e = json_pack("{s:s, s:s, s:b}", "kind", "temper_error", "message", "x", "retryable", 1);
    assert_int_equal(q->ops->complete(q, "c1", "b", TEMPER_JOB_FAILED, e, msg, sizeof(msg)), 0);
    assert_int_equal(q->ops->get(q, "b", 0, &v, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "failed");
    assert_true(json_is_true(json_object_get(json_object_get(v, "error"), "retryable")));
    json_decref(v);
    temper_job_free(j);
    assert_null(take(q, "c1", 0));
    assert_int_equal(q->ops->get(q, "nope", 0, &v, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    json_t *ids = NULL;
    assert_int_equal(q->ops->batch(q, "b1", &ids, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(ids), 2);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "a");
    assert_string_equal(json_string_value(json_array_get(ids, 1)), "b");
    json_decref(ids);
    assert_int_equal(q->ops->batch(q, "b2", &ids, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    json_decref(result);
    json_decref(other);
    json_decref(e);
    q->ops->close(q);
}

static void test_cancel(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 0, 0);
    char s[32], msg[512];
    enum temper_job_state was;
    assert_int_equal(put(q, "a", "A", NULL, NULL), 0);
    assert_int_equal(put(q, "b", "B", NULL, NULL), 0);
    assert_int_equal(q->ops->cancel(q, "a", &was, msg, sizeof(msg)), 0);
    assert_int_equal(was, TEMPER_JOB_QUEUED);
    assert_string_equal(status_of(q, "a", s), "cancelled");
    beat(q, "c1");
    struct temper_job *j = take(q, "c1", 0); /* the cancelled one is never handed over */
    assert_string_equal(j->id, "b");
    assert_int_equal(q->ops->cancel(q, "b", &was, msg, sizeof(msg)), 0);
    assert_int_equal(was, TEMPER_JOB_RUNNING);
    json_t *result = json_pack("{s:s}", "verdict", "correct");
    assert_int_equal(q->ops->complete(q, "c1", "b", TEMPER_JOB_DONE, result, msg, sizeof(msg)), 0);
    assert_string_equal(status_of(q, "b", s), "cancelled"); /* its outcome is dropped */
    assert_int_equal(q->ops->cancel(q, "zzz", &was, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_null(take(q, "c1", 0));
    json_decref(result);
    temper_job_free(j);
    q->ops->close(q);
}

/* A consumer that stops recording leaves its job pending; after the idle bound the job is
 * re-queued to run alone and another consumer takes it; a death while it ran alone is charged, and
 * at max_deliveries charged deaths the job is dead-lettered with a runtime_error result. */
static void test_claim_and_dead_letter(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 100, 2);
    char s[32], msg[512];
    assert_int_equal(put(q, "k", "kills its worker", NULL, NULL), 0);
    beat(q, "c1");
    beat(q, "c2");
    beat(q, "c3");
    beat(q, "c4");
    struct temper_job *j = take(q, "c1", 0);
    assert_int_equal(j->deliveries, 1);
    assert_int_equal(j->alone, 0);
    temper_job_free(j);
    assert_null(take(q, "c2", 0)); /* pending under a live consumer, not idle yet */
    usleep(150000);
    beat(q, "c2");
    j = take(q, "c2", 0); /* its first death was not charged: it ran beside others */
    assert_non_null(j);
    assert_string_equal(j->id, "k");
    assert_int_equal(j->deliveries, 2);
    assert_int_equal(j->alone, 1);
    temper_job_free(j);
    struct temper_queue_stats st;
    assert_int_equal(q->ops->stats(q, &st, msg, sizeof(msg)), 0);
    assert_int_equal(st.redeliveries, 1);
    assert_int_equal(st.running, 1);
    usleep(150000);
    beat(q, "c3");
    j = take(q, "c3", 0); /* one death charged (it ran alone), under the limit of 2 */
    assert_non_null(j);
    assert_int_equal(j->deliveries, 3);
    temper_job_free(j);
    usleep(150000);
    beat(q, "c4");
    assert_null(take(q, "c4", 0)); /* two deaths while it ran alone: dead letter */
    json_t *v = NULL;
    assert_int_equal(q->ops->get(q, "k", 0, &v, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "verdict")), "runtime_error");
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "task")), "vector_add");
    json_decref(v);
    json_t *dl = NULL;
    assert_int_equal(q->ops->dead_letters(q, &dl, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(dl), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(dl, 0), "id")), "k");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(dl, 0), "deliveries")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(dl, 0), "result"), "task")),
                        "vector_add");
    json_decref(dl);
    assert_int_equal(q->ops->stats(q, &st, msg, sizeof(msg)), 0);
    assert_int_equal(st.dead_letters, 1);
    assert_int_equal(st.running, 0);
    /* the first consumer's late outcome changes nothing */
    json_t *late = json_pack("{s:s}", "verdict", "correct");
    q->ops->complete(q, "c1", "k", TEMPER_JOB_DONE, late, msg, sizeof(msg));
    json_decref(late);
    assert_string_equal(status_of(q, "k", s), "done");
    q->ops->close(q);
}

/* SQLite engine: a consumer that never reported (or stopped reporting) is dead; its jobs are
 * claimed without waiting for the idle bound (a server killed and started again). */
static void test_dead_consumer_claimed(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 3600000, 3);
    if (strcmp(q->ops->engine, "sqlite")) {
        q->ops->close(q);
        skip();
    }
    assert_int_equal(put(q, "a", "A", NULL, NULL), 0);
    struct temper_job *j = take(q, "dead", 0); /* "dead" never reports */
    temper_job_free(j);
    beat(q, "live");
    j = take(q, "live", 0);
    assert_non_null(j);
    assert_string_equal(j->id, "a");
    assert_int_equal(j->deliveries, 2);
    temper_job_free(j);
    q->ops->close(q);
}

static void test_admission(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(2, 0, 0);
    char s[32], msg[512];
    assert_int_equal(put(q, "a", "A", NULL, NULL), 0);
    assert_int_equal(put(q, "b", "B", NULL, NULL), 0);
    assert_int_equal(put(q, "c", "C", NULL, NULL), TEMPER_ERANGE);
    assert_string_equal(status_of(q, "c", s), "unknown");
    /* a job answered from the cache at submission is done at once and never handed over */
    struct temper_job job = {0};
    snprintf(job.id, sizeof(job.id), "hit");
    job.item = json_pack("{s:s}", "source", "H");
    job.result = json_pack("{s:s}", "verdict", "incorrect");
    job.submitted_us = now_us();
    int existing = 0, err = q->ops->submit(q, &job, 1, &existing, msg, sizeof(msg));
    json_decref(job.item);
    json_decref(job.result);
    if (!strcmp(q->ops->engine, "sqlite")) { /* admission does not count answered jobs (SQLite engine) */
        assert_int_equal(err, 0);
        assert_string_equal(status_of(q, "hit", s), "done");
    }
    beat(q, "c1");
    struct temper_job *j = take(q, "c1", 0);
    json_t *r = json_pack("{s:s}", "verdict", "correct");
    assert_int_equal(q->ops->complete(q, "c1", j->id, TEMPER_JOB_DONE, r, msg, sizeof(msg)), 0);
    json_decref(r);
    temper_job_free(j);
    assert_int_equal(put(q, "c", "C", NULL, NULL), 0); /* room again */
    q->ops->close(q);
}

static void test_cache_and_workers(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 0, 0);
    char msg[512];
    json_t *r = NULL, *x = json_pack("{s:s}", "verdict", "correct");
    assert_int_equal(q->ops->cache_get(q, "k1", &r, msg, sizeof(msg)), 0);
    assert_null(r);
    assert_int_equal(q->ops->cache_put(q, "k1", x, msg, sizeof(msg)), 0);
    assert_int_equal(q->ops->cache_get(q, "k1", &r, msg, sizeof(msg)), 0);
    assert_true(json_equal(r, x));
    json_decref(r);
    json_decref(x);
    beat(q, "w1");
    json_t *list = NULL;
    assert_int_equal(q->ops->workers(q, 30, &list, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "consumer")), "w1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "device_key")), "opencl|test");
    json_decref(list);
    q->ops->close(q);
}

struct completer {
    struct temper_queue *q; /* the queue */
    struct temper_job *job; /* the job to complete after a while */
};

static void *complete_later(void *arg)
{
    struct completer *c = arg;
    usleep(300000);
    char msg[256];
    json_t *r = json_pack("{s:s}", "verdict", "correct");
    c->q->ops->complete(c->q, "c1", c->job->id, TEMPER_JOB_DONE, r, msg, sizeof(msg));
    json_decref(r);
    return NULL;
}

static void test_long_poll(void **state)
{
    (void)state;
    struct temper_queue *q = open_queue(0, 0, 0);
    char msg[512];
    assert_int_equal(put(q, "a", "A", NULL, NULL), 0);
    beat(q, "c1");
    struct completer c = {q, take(q, "c1", 0)};
    pthread_t t;
    pthread_create(&t, NULL, complete_later, &c);
    json_t *v = NULL;
    assert_int_equal(q->ops->get(q, "a", 30000, &v, msg, sizeof(msg)), 0); /* returns when done, not after 30 s */
    assert_string_equal(json_string_value(json_object_get(v, "status")), "done");
    json_decref(v);
    pthread_join(t, NULL);
    temper_job_free(c.job);
    q->ops->close(q);
}

static void test_keys(void **state)
{
    (void)state;
    char a[65], b[65], c[65], msg[256];
    json_t *i1 = json_loads("{\"source\":\"S\",\"lang\":\"opencl\",\"knobs\":{\"A\":1,\"B\":\"x\"}}", 0, NULL);
    json_t *i2 = json_loads("{\"knobs\":{\"B\":\"x\",\"A\":1},\"lang\":\"opencl\",\"source\":\"S\"}", 0, NULL);
    json_t *i3 = json_loads("{\"source\":\"S \",\"lang\":\"opencl\",\"knobs\":{\"A\":1,\"B\":\"x\"}}", 0, NULL);
    assert_int_equal(temper_job_content_key(i1, "t1", a, msg, sizeof(msg)), 0);
    assert_int_equal(temper_job_content_key(i2, "t1", b, msg, sizeof(msg)), 0);
    assert_string_equal(a, b); /* knob order does not matter */
    assert_int_equal(temper_job_content_key(i3, "t1", c, msg, sizeof(msg)), 0);
    assert_string_not_equal(a, c);
    assert_int_equal(temper_job_content_key(i1, "t2", c, msg, sizeof(msg)), 0);
    assert_string_not_equal(a, c); /* the task's content is in the key */
    temper_job_cache_key(a, "dev1", b);
    temper_job_cache_key(a, "dev2", c);
    assert_string_not_equal(b, c);
    assert_int_equal(strlen(b), 32);
    assert_string_equal(temper_job_state_name(TEMPER_JOB_CANCELLED), "cancelled");
    json_decref(i1);
    json_decref(i2);
    json_decref(i3);
}

int main(int argc, char **argv)
{
    url_arg = argc > 1 ? argv[1] : NULL;
    if (!mkdtemp(store_dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_take_complete), cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_claim_and_dead_letter), cmocka_unit_test(test_dead_consumer_claimed),
        cmocka_unit_test(test_admission), cmocka_unit_test(test_cache_and_workers),
        cmocka_unit_test(test_long_poll), cmocka_unit_test(test_keys),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", store_dir);
    return failed;
}
