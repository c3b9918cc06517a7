/* session_test.c: one session shared by several threads on a real OpenCL device (PoCL here).
 * Four threads submit 200 evaluations (half received through a callback, half by waiting on
 * their id, some as source text with a language) and every result must come exactly once, with
 * its own store row; a missing file gets an `invalid` result and is not stored; requests
 * cancelled while queued get a cancelled result once, and the others still run; a running
 * request (a kernel that never returns) cancelled from another thread gets its cancelled result
 * soon, not at its launch limit, and the next request is evaluated normally; a later request of
 * the running batch, cancelled, is skipped without running. Built and run
 * under ThreadSanitizer too (scripts/test.sh), so the task is the suite's vector_add with three
 * small check shapes and a small bench shape, copied to a temporary folder. Exits 77 when no
 * OpenCL device answers.
 * usage: session_test VECTOR_ADD_TASK_DIR */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/session.h"
#include "util/util.h"

#define THREADS 4
#define PER_THREAD 50
#define TOTAL (THREADS * PER_THREAD)

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            pthread_mutex_lock(&fail_lock);                                                                      \
            failures++;                                                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fprintf(stderr, "\n");                                                                               \
            pthread_mutex_unlock(&fail_lock);                                                                    \
        }                                                                                                        \
    } while (0)

/* What the callbacks saw, by request id (ids start at 1 and are never reused). */
struct seen {
    atomic_int by_id[4 * TOTAL]; /* results received per id */
    atomic_int callbacks;        /* callback calls in all */
    atomic_llong store_ids[4 * TOTAL]; /* the store row each result got */
    atomic_int cancelled[4 * TOTAL];   /* 1 where the result said cancelled */
};

static struct seen seen;

static void take(int64_t id, json_t *result)
{
    if (id <= 0 || id >= 4 * TOTAL) {
        CHECK(0, "id %lld out of range", (long long)id);
        json_decref(result);
        return;
    }
    atomic_fetch_add(&seen.by_id[id], 1);
    atomic_store(&seen.store_ids[id], temper_session_result_store_id(result));
    atomic_store(&seen.cancelled[id], temper_session_result_cancelled(result));
    if (!temper_session_result_cancelled(result)) {
        const char *v = temper_session_result_verdict(result);
        CHECK(v && !strcmp(v, "correct"), "request %lld: verdict %s: %s", (long long)id, v ? v : "none",
              json_string_value(json_object_get(result, "message")));
        CHECK(!strcmp(json_string_value(json_object_get(result, "made_by")), "session_test"),
              "request %lld lost its lineage", (long long)id);
    }
    json_decref(result);
}

static void on_result(void *user, int64_t id, json_t *result)
{
    (void)user;
    atomic_fetch_add(&seen.callbacks, 1);
    take(id, result);
}

/* What one submitting thread needs. */
struct client {
    struct temper_session *s; /* the shared session */
    const char *path;         /* the candidate */
    const char *source;       /* its text */
    int index;                /* which thread */
    int64_t ids[PER_THREAD];  /* the ids it got */
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    char msg[1024];
    for (int i = 0; i < PER_THREAD; i++) {
        struct temper_session_request r = {0};
        /* every third one as source text with its language, the rest as the file */
        if (i % 3 == 0) {
            r.path = "from_text";
            r.source = c->source;
            r.lang = "opencl";
        } else {
            r.path = c->path;
        }
        r.no_timing = 1;
        r.checks_only = 1;
        r.made_by = "session_test";
        r.batch_id = "threads";
        if (i % 2 == 0) {
            r.on_result = on_result;
            r.user = c;
        }
        int err = temper_session_submit(c->s, &r, &c->ids[i], msg, sizeof(msg));
        CHECK(!err, "thread %d submit %d: %s", c->index, i, msg);
    }
    /* the ones without a callback, received by waiting, in reverse order */
    for (int i = PER_THREAD - 1; i >= 0; i--) {
        if (i % 2 == 0)
            continue;
        json_t *result = NULL;
        int err = temper_session_wait(c->s, c->ids[i], &result, msg, sizeof(msg));
        CHECK(!err && result, "thread %d wait %lld: %s", c->index, (long long)c->ids[i], msg);
        if (result)
            take(c->ids[i], result);
        /* received once: a second wait finds nothing */
        CHECK(temper_session_wait(c->s, c->ids[i], &result, msg, sizeof(msg)) == TEMPER_ENOTFOUND,
              "a second wait on %lld found something", (long long)c->ids[i]);
    }
    return NULL;
}

/* A vector_add that never returns (tests/cases/opencl/hang.cl): each work-item spins while
 * a[0] == a[0], which the compiler cannot drop. */
static const char hang_source[] =
    "// @temper task vector_add\n"
    "// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)\n"
    "__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    volatile int spins = 0;\n"
    "    while (a[0] == a[0])\n"
    "        spins++;\n"
    "    if (i < N)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";

/* A cancel from another thread, after a delay. */
struct canceller {
    struct temper_session *s; /* the session */
    int64_t id;               /* the request to cancel */
    double after_s;           /* seconds to wait first */
    double at_s;              /* when it cancelled (temper_now_s) */
    int err;                  /* what temper_session_cancel returned */
};

static void *canceller_main(void *arg)
{
    struct canceller *c = arg;
    usleep((useconds_t)(c->after_s * 1e6));
    c->at_s = temper_now_s();
    c->err = temper_session_cancel(c->s, c->id);
    return NULL;
}

/* Submits a candidate for waiting on, no timing, checks only. */
static int64_t submit_one(struct temper_session *s, const char *path, const char *source)
{
    struct temper_session_request q = {0};
    char msg[1024];
    int64_t id = 0;
    q.path = path;
    q.source = source;
    q.lang = source ? "opencl" : NULL;
    q.no_timing = 1;
    q.checks_only = 1;
    q.made_by = "session_test";
    CHECK(!temper_session_submit(s, &q, &id, msg, sizeof(msg)), "submit %s: %s", path, msg);
    return id;
}

/* Waits for one result, checks it comes once, and returns it (caller decrefs). */
static json_t *wait_one(struct temper_session *s, int64_t id, const char *what)
{
    json_t *r = NULL, *again = NULL;
    char msg[1024];
    CHECK(!temper_session_wait(s, id, &r, msg, sizeof(msg)) && r, "wait for %s: %s", what, msg);
    CHECK(temper_session_wait(s, id, &again, msg, sizeof(msg)) == TEMPER_ENOTFOUND, "%s was received twice", what);
    json_decref(again);
    return r;
}

/* A cancelled result: says so, and was not stored. */
static void check_cancelled(json_t *r, const char *what)
{
    CHECK(r && temper_session_result_cancelled(r), "%s is not cancelled: verdict %s, %s", what,
          r && temper_session_result_verdict(r) ? temper_session_result_verdict(r) : "none",
          r ? json_string_value(json_object_get(r, "message")) : "no result");
    CHECK(!r || temper_session_result_store_id(r) == 0, "cancelled %s was stored", what);
}

static void check_correct(json_t *r, const char *what)
{
    const char *v = r ? temper_session_result_verdict(r) : NULL;
    CHECK(v && !strcmp(v, "correct") && !temper_session_result_cancelled(r), "%s: verdict %s: %s", what,
          v ? v : "none", r ? json_string_value(json_object_get(r, "message")) : "no result");
    CHECK(!r || temper_session_result_store_id(r) > 0, "%s was not stored", what);
}

/* Waits (at most a while) until n callbacks have come. */
static void wait_callbacks(int n)
{
    for (int i = 0; i < 6000 && atomic_load(&seen.callbacks) < n; i++)
        usleep(10000);
}

/* A chain of requests, each submitted by the previous one's callback (in the dispatcher's
 * thread, while its stream runs): the secret seed each result carried. */
struct chain {
    struct temper_session *s; /* the session */
    const char *path;         /* the candidate */
    int n;                    /* results received */
    uint64_t secret[4];       /* their secret seeds */
    uint64_t last_secret;     /* the secret seed the last request asks for */
    atomic_int done;          /* 1 once the last came */
};

static void chain_next(void *user, int64_t id, json_t *result);

/* Submits the chain's next request: the last asks for its own secret seed. */
static void chain_submit(struct chain *c)
{
    struct temper_session_request q = {0};
    char msg[1024];
    q.path = c->path;
    q.no_timing = 1;
    q.checks_only = 1;
    q.made_by = "session_test";
    q.secret_seed = c->n == 3 ? c->last_secret : 0;
    q.on_result = chain_next;
    q.user = c;
    CHECK(!temper_session_submit(c->s, &q, NULL, msg, sizeof(msg)), "chained submit: %s", msg);
}

static void chain_next(void *user, int64_t id, json_t *result)
{
    (void)id;
    struct chain *c = user;
    c->secret[c->n] = (uint64_t)json_integer_value(json_object_get(result, "secret_seed"));
    CHECK(!strcmp(temper_session_result_verdict(result) ? temper_session_result_verdict(result) : "", "correct"),
          "chained request %d: %s", c->n, json_string_value(json_object_get(result, "message")));
    json_decref(result);
    if (++c->n == 4)
        atomic_store(&c->done, 1);
    else
        chain_submit(c);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: session_test VECTOR_ADD_TASK_DIR\n");
        return 2;
    }
    char dir[] = "/tmp/temper-session-XXXXXX", store[256], tasks[256], path[512], msg[2048];
    if (!mkdtemp(dir))
        return 2;
    snprintf(store, sizeof(store), "%s/temper.db", dir);
    snprintf(tasks, sizeof(tasks), "%s/tasks", dir);
    /* The task, with small shapes: the check shapes' sizes do not matter to what is tested here. */
    const char *files[] = {"reference.c", "naive.cl", "naive.cu"};
    char *source = NULL;
    for (int i = 0; i < 3; i++) {
        char *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof(path), "%s/%s", argv[1], files[i]);
        if (temper_read_file(path, 1u << 20, &text, &len, msg, sizeof(msg))) {
            fprintf(stderr, "%s\n", msg);
            return 2;
        }
        snprintf(path, sizeof(path), "%s/L1/vector_add/%s", tasks, files[i]);
        if (temper_write_file_atomic(path, text, len, msg, sizeof(msg))) {
            fprintf(stderr, "%s\n", msg);
            return 2;
        }
        if (i == 1)
            source = text;
        else
            free(text);
    }
    snprintf(path, sizeof(path), "%s/task.json", argv[1]);
    json_t *task = json_load_file(path, 0, NULL);
    json_t *shapes = json_object_get(task, "shapes");
    if (!shapes) {
        fprintf(stderr, "cannot read the shapes of %s\n", path);
        return 2;
    }
    json_object_set_new(shapes, "check", json_pack("[{s:i}, {s:i}, {s:i}]", "N", 1, "N", 7, "N", 1000));
    json_object_set_new(shapes, "bench", json_pack("{s:[{s:i}], s:[{s:i}]}", "gpu", "N", 4096, "cpu", "N", 4096));
    snprintf(path, sizeof(path), "%s/L1/vector_add/task.json", tasks);
    int dumped = json_dump_file(task, path, JSON_INDENT(2));
    json_decref(task);
    if (dumped) {
        fprintf(stderr, "cannot write %s\n", path);
        return 2;
    }
    char candidate[512];
    snprintf(candidate, sizeof(candidate), "%s/L1/vector_add/naive.cl", tasks);
    struct temper_session_config config = {0};
    config.device = "opencl";
    config.store_path = store;
    config.tasks_dir = tasks;
    struct temper_session *s = NULL;
    int err = temper_session_open(&config, &s, msg, sizeof(msg));
    if (err == TEMPER_ENODEVICE) {
        printf("SKIP no OpenCL device: %s\n", msg);
        free(source);
        return 77;
    }
    if (err) {
        fprintf(stderr, "FAIL open: %s\n", msg);
        free(source);
        return 1;
    }

    /* 1. 200 evaluations from 4 threads. */
    struct client clients[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        clients[t] = (struct client){s, candidate, source, t, {0}};
        pthread_create(&threads[t], NULL, client_main, &clients[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    wait_callbacks(TOTAL / 2);
    CHECK(atomic_load(&seen.callbacks) == TOTAL / 2, "%d callbacks, expected %d", atomic_load(&seen.callbacks),
          TOTAL / 2);
    int once = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            int64_t id = clients[t].ids[i];
            CHECK(id > 0 && id < 4 * TOTAL, "bad id %lld", (long long)id);
            if (id <= 0 || id >= 4 * TOTAL)
                continue;
            once += atomic_load(&seen.by_id[id]) == 1;
            CHECK(atomic_load(&seen.by_id[id]) == 1, "request %lld received %d times", (long long)id,
                  atomic_load(&seen.by_id[id]));
            long long row = atomic_load(&seen.store_ids[id]);
            CHECK(row > 0, "request %lld has no store row", (long long)id);
            for (int u = 0; u <= t; u++)
                for (int j = 0; j < PER_THREAD; j++) {
                    int64_t other = clients[u].ids[j];
                    if ((u < t || j < i) && other > 0 && other < 4 * TOTAL) {
                        CHECK(other != id, "id %lld given twice", (long long)id);
                        CHECK(atomic_load(&seen.store_ids[other]) != row, "store row %lld given twice", row);
                    }
                }
        }
    printf("%d of %d results received exactly once\n", once, TOTAL);

    /* 2. A missing file gets an invalid result that is not stored. */
    struct temper_session_request bad = {0};
    bad.path = "/nonexistent/missing.cl";
    int64_t bad_id = 0;
    json_t *r = NULL;
    CHECK(!temper_session_submit(s, &bad, &bad_id, msg, sizeof(msg)), "submit of a missing file: %s", msg);
    CHECK(!temper_session_wait(s, bad_id, &r, msg, sizeof(msg)), "wait: %s", msg);
    const char *v = temper_session_result_verdict(r);
    CHECK(v && !strcmp(v, "invalid"), "a missing file is %s", v ? v : "none");
    CHECK(temper_session_result_error(r) != 0, "a missing file has no error code");
    CHECK(temper_session_result_store_id(r) == 0, "a missing file was stored");
    CHECK(strstr(json_string_value(json_object_get(r, "message")), "missing.cl") != NULL,
          "the message does not name the file");
    json_decref(r);
    temper_session_close(s);

    /* 3. Cancelling queued requests: one request per batch, so most of 20 wait in the queue. */
    config.max_batch = 1;
    if ((err = temper_session_open(&config, &s, msg, sizeof(msg)))) {
        fprintf(stderr, "FAIL reopen: %s\n", msg);
        free(source);
        return 1;
    }
    memset(&seen, 0, sizeof(seen));
    int64_t ids[20];
    for (int i = 0; i < 20; i++) {
        struct temper_session_request q = {0};
        q.path = candidate;
        q.no_timing = 1;
        q.checks_only = 1;
        q.made_by = "session_test";
        if (i % 2)
            q.on_result = on_result;
        CHECK(!temper_session_submit(s, &q, &ids[i], msg, sizeof(msg)), "submit: %s", msg);
    }
    int cancelled = 0, callbacks_expected = 0;
    int was_cancelled[20] = {0};
    for (int i = 19; i >= 10; i--) {
        err = temper_session_cancel(s, ids[i]);
        CHECK(err == 0 || err == TEMPER_ENOTFOUND, "cancel gave %d", err);
        was_cancelled[i] = err == 0;
        cancelled += err == 0;
        if (err == 0)
            CHECK(temper_session_cancel(s, ids[i]) == TEMPER_ENOTFOUND, "a second cancel found %lld",
                  (long long)ids[i]);
    }
    CHECK(cancelled >= 5, "only %d of 10 queued requests could be cancelled", cancelled);
    for (int i = 0; i < 20; i++) {
        callbacks_expected += i % 2;
        if (i % 2)
            continue;
        json_t *res = NULL;
        CHECK(!temper_session_wait(s, ids[i], &res, msg, sizeof(msg)), "wait %lld: %s", (long long)ids[i], msg);
        if (res)
            take(ids[i], res);
    }
    wait_callbacks(callbacks_expected);
    for (int i = 0; i < 20; i++) {
        CHECK(atomic_load(&seen.by_id[ids[i]]) == 1, "request %lld received %d times", (long long)ids[i],
              atomic_load(&seen.by_id[ids[i]]));
        CHECK(atomic_load(&seen.cancelled[ids[i]]) == was_cancelled[i], "request %lld: cancelled %d, expected %d",
              (long long)ids[i], atomic_load(&seen.cancelled[ids[i]]), was_cancelled[i]);
        CHECK(was_cancelled[i] || atomic_load(&seen.store_ids[ids[i]]) > 0, "request %lld was not stored",
              (long long)ids[i]);
        CHECK(!was_cancelled[i] || atomic_load(&seen.store_ids[ids[i]]) == 0, "cancelled request %lld was stored",
              (long long)ids[i]);
    }
    printf("%d of 10 queued requests cancelled, each with one cancelled result\n", cancelled);
    temper_session_close(s);

    /* 4. Cancelling running requests. The launch limit is far longer than the test waits, so a
     * hanging kernel's result can only come early through the cancel. First one hanging request
     * (its own batch, once the dispatcher took it), then a batch of four queued behind it: a good
     * one, another hanging one, and two good ones, of which the first is cancelled while the
     * hanging one runs. */
    struct temper_limits limits;
    temper_limits_default(&limits);
    limits.launch_timeout_s = 240;
    config.max_batch = 0;
    config.limits = &limits;
    if ((err = temper_session_open(&config, &s, msg, sizeof(msg)))) {
        fprintf(stderr, "FAIL reopen: %s\n", msg);
        free(source);
        return 1;
    }
    int64_t hang1 = submit_one(s, "hang_first", hang_source);
    usleep(500000);
    int64_t good = submit_one(s, candidate, NULL);
    int64_t hang2 = submit_one(s, "hang_second", hang_source);
    int64_t skipped = submit_one(s, candidate, NULL);
    int64_t last = submit_one(s, candidate, NULL);
    struct canceller c1 = {s, hang1, 1.0, 0, -1};
    pthread_t t1;
    pthread_create(&t1, NULL, canceller_main, &c1);
    r = wait_one(s, hang1, "the first hanging request");
    double late_s = temper_now_s() - c1.at_s;
    pthread_join(t1, NULL);
    CHECK(c1.err == 0, "cancelling the running request gave %d", c1.err);
    check_cancelled(r, "the first hanging request");
    CHECK(late_s < 60, "its cancelled result came %.1f s after the cancel (the launch limit is 240 s)", late_s);
    json_decref(r);
    r = wait_one(s, good, "the request after the cancelled one");
    check_correct(r, "the request after the cancelled one");
    json_decref(r);
    /* The second hanging request is at the worker now (or about to be): cancel the one behind it
     * first, then it. */
    usleep(1000000);
    CHECK(temper_session_cancel(s, skipped) == 0, "cancelling a later request of the running batch failed");
    CHECK(temper_session_cancel(s, skipped) == TEMPER_ENOTFOUND, "a second cancel found the skipped request");
    double at_s = temper_now_s();
    CHECK(temper_session_cancel(s, hang2) == 0, "cancelling the second hanging request failed");
    r = wait_one(s, hang2, "the second hanging request");
    late_s = temper_now_s() - at_s;
    check_cancelled(r, "the second hanging request");
    CHECK(late_s < 60, "its cancelled result came %.1f s after the cancel (the launch limit is 240 s)", late_s);
    json_decref(r);
    r = wait_one(s, skipped, "the skipped request");
    check_cancelled(r, "the skipped request");
    json_decref(r);
    r = wait_one(s, last, "the last request");
    check_correct(r, "the last request");
    json_decref(r);
    printf("running requests cancelled: each got one cancelled result, and the next ones ran\n");
    temper_session_close(s);

    /* 5. A request submitted while a stream runs joins it: three requests without a secret seed,
     * each submitted from the previous one's callback, share the seed the stream drew (a request
     * that waited for a new batch would draw its own); a fourth that brings its own seed keeps it. */
    config.limits = NULL;
    if ((err = temper_session_open(&config, &s, msg, sizeof(msg)))) {
        fprintf(stderr, "FAIL reopen: %s\n", msg);
        free(source);
        return 1;
    }
    struct chain ch = {s, candidate, 0, {0}, 0x5eed5eedull, 0};
    chain_submit(&ch);
    for (int i = 0; i < 6000 && !atomic_load(&ch.done); i++)
        usleep(10000);
    CHECK(atomic_load(&ch.done), "the chain of requests did not finish: %d results", ch.n);
    CHECK(ch.secret[0] && ch.secret[0] == ch.secret[1] && ch.secret[1] == ch.secret[2],
          "requests that came while the stream ran did not join it: secret seeds %llx %llx %llx",
          (unsigned long long)ch.secret[0], (unsigned long long)ch.secret[1], (unsigned long long)ch.secret[2]);
    CHECK(ch.secret[3] == ch.last_secret, "a request's own secret seed was not kept: %llx",
          (unsigned long long)ch.secret[3]);
    printf("requests submitted while the stream ran joined it (one secret seed)\n");
    temper_session_close(s);
    free(source);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd))
        fprintf(stderr, "could not remove %s\n", dir);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
