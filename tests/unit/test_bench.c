/* test_bench.c: unit tests of a bench built from result records (temper_bench_compute) on a
 * fixture whose every number is computed by hand below, of temper_bench_compare, and of benches,
 * evaluations and history in a real store in a fresh folder (put and get round-trip, a bench
 * naming an evaluation the store lacks is refused, unknown ids are TEMPER_ENOTFOUND). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "temper/bench.h"
#include "temper/error.h"
#include "temper/store.h"

#include "unit.h"

#define assert_near(got, want) assert_true(fabs((got) - (double)(want)) <= 1e-12 * (1 + fabs((double)(want))))

/* A result record with what a bench reads; timings is a JSON array text. */
static json_t *result(const char *task, const char *verdict, const char *device, const char *expert,
                      const char *timings, int store_id)
{
    json_t *t = json_loads(timings, 0, NULL);
    assert_non_null(t);
    char hash[17]; /* each sample its own source, unless a test says otherwise */
    snprintf(hash, sizeof(hash), "%016x", store_id);
    return json_pack("{s:s, s:s, s:s, s:s?, s:o, s:i, s:s, s:s}", "task", task, "verdict", verdict, "device", device,
                     "expert", expert, "timings", t, "store_id", store_id, "candidate", "x.cl", "source_hash", hash);
}

/* The fixture: three task folders.
 *   a: #1 correct, speedup 2, roofline 0.1; #2 correct, two shapes 0.5 and 2 (geomean 1);
 *      #3 incorrect
 *   b: #4 "correct" but for task c (not counted); #5 correct on CUDA, speedup 4, 0.5x the
 *      expert cublas_sgemm, roofline 0.3 (#4 ran on OpenCL)
 *   e: no samples */
static json_t *fixture(void)
{
    json_t *by_task = json_object();
    json_t *a = json_array(), *b = json_array();
    json_array_append_new(a, result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 2, \"roofline_share\": 0.1}]", 1));
    json_array_append_new(a, result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 0.5}, {\"speedup\": 2}]", 2));
    json_array_append_new(a, result("a", "incorrect", "opencl:0", NULL, "[]", 3));
    json_array_append_new(b, result("c", "correct", "opencl:0", NULL, "[{\"speedup\": 8}]", 4));
    json_array_append_new(b, result("b", "correct", "cuda:0", "cublas_sgemm",
                                    "[{\"speedup\": 4, \"speedup_vs_expert\": 0.5, \"roofline_share\": 0.3}]", 5));
    json_object_set_new(by_task, "b", b);
    json_object_set_new(by_task, "a", a);
    json_object_set_new(by_task, "e", json_array());
    return by_task;
}

static double num(json_t *obj, const char *path)
{
    char key[64];
    json_t *v = obj;
    for (const char *p = path; v && *p;) {
        size_t n = strcspn(p, "/");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        p += n + (p[n] == '/');
    }
    if (!json_is_number(v))
        fail_msg("%s is not a number", path);
    return json_number_value(v);
}

/* A tune's screening sample and its re-timing are one configuration (same source, options and
 * device): it counts with its latest timed evaluation, as `temper best` counts it, even where the
 * earlier sample was faster (noise); another configuration's faster time still wins. */
static void test_latest_of_a_configuration(void **state)
{
    (void)state;
    json_t *by_task = json_object(), *a = json_array();
    json_t *screen = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 1.35}]", 25);
    json_t *retime = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 0.6}]", 30);
    json_t *other = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 0.67}]", 29);
    json_object_set_new(retime, "source_hash", json_string(json_string_value(json_object_get(screen, "source_hash"))));
    json_array_append_new(a, screen);
    json_array_append_new(a, other);
    json_array_append_new(a, retime);
    json_object_set_new(by_task, "a", a);
    json_t *bench = temper_bench_compute(by_task, NULL);
    assert_non_null(bench);
    json_t *tasks = json_object_get(bench, "tasks");
    assert_near(num(tasks, "0/best_store_id"), 29);
    assert_near(num(tasks, "0/best_speedup"), 0.67);
    json_decref(bench);
    json_decref(by_task);
}

/* A configuration whose latest result is not correct (wrong on a later run's inputs) drops out of
 * the bests, as `temper best` drops it, however fast it was when it passed; a later correct result
 * without a time does not hide the timing before it. */
static void test_latest_failure_drops_a_configuration(void **state)
{
    (void)state;
    json_t *by_task = json_object(), *a = json_array();
    json_t *fast = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 3}]", 40);
    json_t *wrong = result("a", "incorrect", "opencl:0", NULL, "[]", 42);
    json_t *slow = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 1.5}]", 41);
    json_t *checked = result("a", "correct", "opencl:0", NULL, "[]", 43);
    json_object_set_new(wrong, "source_hash", json_string(json_string_value(json_object_get(fast, "source_hash"))));
    json_object_set_new(checked, "source_hash", json_string(json_string_value(json_object_get(slow, "source_hash"))));
    json_array_append_new(a, fast);
    json_array_append_new(a, slow);
    json_array_append_new(a, wrong);
    json_array_append_new(a, checked);
    json_object_set_new(by_task, "a", a);
    json_t *bench = temper_bench_compute(by_task, NULL);
    assert_non_null(bench);
    json_t *tasks = json_object_get(bench, "tasks");
    assert_near(num(tasks, "0/best_store_id"), 41);
    assert_near(num(tasks, "0/best_speedup"), 1.5);
    json_decref(bench);
    json_decref(by_task);
}

static void test_compute(void **state)
{
    (void)state;
    json_t *by_task = fixture();
    json_t *bench = temper_bench_compute(by_task, NULL);
    assert_non_null(bench);
    json_t *tasks = json_object_get(bench, "tasks"), *s = json_object_get(bench, "suite");
    /* Tasks by name: a, b, e. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "task")), "a");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 2), "task")), "e");
    /* a: 3 samples, 2 correct, best speedup max(2, 1) = 2 (#1), roofline 0.1, pass@1 2/3. */
    assert_near(num(tasks, "0/samples"), 3);
    assert_near(num(tasks, "0/correct"), 2);
    assert_near(num(tasks, "0/best_speedup"), 2);
    assert_near(num(tasks, "0/best_store_id"), 1);
    assert_near(num(tasks, "0/best_roofline_share"), 0.1);
    assert_near(num(tasks, "0/pass_at_k/1"), 2.0 / 3);
    assert_near(num(tasks, "0/evaluations/1/speedup"), 1); /* sqrt(0.5 * 2) */
    /* b: #4 names task c: listed as other_task, not correct; #5: best 4, vs expert 0.5. */
    assert_near(num(tasks, "1/samples"), 2);
    assert_near(num(tasks, "1/correct"), 1);
    assert_near(num(tasks, "1/best_speedup"), 4);
    assert_near(num(tasks, "1/best_speedup_vs_expert"), 0.5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 1), "expert")), "cublas_sgemm");
    assert_string_equal(json_string_value(json_object_get(json_array_get(
                            json_object_get(json_array_get(tasks, 1), "evaluations"), 0), "verdict")), "other_task");
    assert_near(num(tasks, "1/backends/cuda/correct"), 1);
    assert_near(num(tasks, "1/backends/opencl/correct"), 0);
    /* e: nothing. */
    assert_near(num(tasks, "2/samples"), 0);
    assert_true(json_is_null(json_object_get(json_array_get(tasks, 2), "best_speedup")));
    /* Suite: 3 tasks, 5 samples, 3 correct, 2 tasks solved. */
    assert_near(num(s, "tasks"), 3);
    assert_near(num(s, "samples"), 5);
    assert_near(num(s, "correct_samples"), 3);
    assert_near(num(s, "tasks_correct"), 2);
    /* pass@1 over the tasks with a sample: (2/3 + 1/2) / 2 = 7/12; no task has 5. */
    assert_near(num(s, "pass_at_k/1"), 7.0 / 12);
    assert_near(num(s, "pass_at_k_tasks/1"), 2);
    assert_null(json_object_get(json_object_get(s, "pass_at_k"), "5"));
    /* fast_p over all 3 tasks (e counts against): best a 2, b 4.
     * p = 0, 0.5, 0.8, 1, 1.5: a and b, 2/3; p = 2: only b (2 is not faster than 2), 1/3. */
    assert_near(num(s, "fast_p/0"), 2.0 / 3);
    assert_near(num(s, "fast_p/1.5"), 2.0 / 3);
    assert_near(num(s, "fast_p/2"), 1.0 / 3);
    /* geomean over the correct timed samples 2, 1, 4: 8^(1/3) = 2; of the bests 2, 4: sqrt(8). */
    assert_near(num(s, "geomean_speedup"), 2);
    assert_near(num(s, "timed_correct_samples"), 3);
    assert_near(num(s, "geomean_best_speedup"), sqrt(8));
    /* vs expert: b only, 0.5, not faster; both backends: b ran on both, correct on CUDA only: 0 of 1. */
    assert_near(num(s, "vs_expert/tasks"), 1);
    assert_near(num(s, "vs_expert/geomean_speedup"), 0.5);
    assert_near(num(s, "vs_expert/faster_share"), 0);
    assert_near(num(s, "both_backends_share"), 0);
    assert_near(num(s, "both_backends_tasks"), 1);
    json_decref(bench);
    json_decref(by_task);
}

/* The human text lists what the JSON lists: the suite's tasks the run has no folder for (rows of
 * their own and a count under the suite), and how many files were left out. */
static void test_print_missing(void **state)
{
    (void)state;
    json_t *by_task = fixture();
    json_t *bench = temper_bench_compute(by_task, NULL);
    assert_non_null(bench);
    json_object_set_new(bench, "level", json_string("L1"));
    json_object_set_new(bench, "missing_tasks", json_pack("[s, s]", "gelu", "softmax"));
    json_object_set_new(bench, "left_out", json_pack("[{s:s, s:s}]", "path", "d/a/x.cl", "why", "past --samples"));
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    temper_bench_print(f, bench);
    fclose(f);
    assert_contains(text, "\ngelu                         -       -       -  not in this run (no folder of samples)\n");
    assert_contains(text, "\nsoftmax                      -       -       -  not in this run");
    assert_contains(text, "  missing   2 tasks of suite L1 are not in this run (not counted above): gelu, softmax\n");
    assert_contains(text, "  left out  1 file (the JSON's left_out says which and why)\n");
    free(text);
    /* None missing, none left out: no such lines. */
    json_object_set_new(bench, "missing_tasks", json_array());
    json_object_set_new(bench, "left_out", json_array());
    f = open_memstream(&text, &size);
    assert_non_null(f);
    temper_bench_print(f, bench);
    fclose(f);
    assert_null(strstr(text, "not in this run"));
    assert_null(strstr(text, "left out"));
    free(text);
    json_decref(bench);
    json_decref(by_task);
}

/* Counts of one read in the singular: "1 task", "1 sample", "(1 task)". */
static void test_print_singular(void **state)
{
    (void)state;
    json_t *r = json_pack("{s:s, s:s, s:s, s:[{s:f, s:f}], s:i}", "task", "a", "verdict", "correct", "device",
                          "opencl:0", "timings", "speedup", 2.0, "median_ms", 1.0, "store_id", 1);
    json_t *by_task = json_pack("{s:[o]}", "a", r);
    json_t *bench = temper_bench_compute(by_task, NULL);
    assert_non_null(bench);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    assert_non_null(f);
    temper_bench_print(f, bench);
    fclose(f);
    assert_contains(text, "suite: 1 task (1 with a correct sample), 1 sample, 1 correct\n");
    assert_contains(text, "pass@1 1.000 (1 task)");
    assert_contains(text, "over 1 correct timed sample;");
    assert_null(strstr(text, "1 tasks"));
    free(text);
    json_decref(bench);
    json_decref(by_task);
}

static void test_compare(void **state)
{
    (void)state;
    json_t *by_task = fixture();
    json_t *a = temper_bench_compute(by_task, NULL);
    /* B: a keeps only its incorrect sample (worse), b as before (same), e gone, f new. */
    json_t *only_wrong = json_array();
    json_array_append(only_wrong, json_array_get(json_object_get(by_task, "a"), 2));
    json_object_set_new(by_task, "a", only_wrong);
    json_object_del(by_task, "e");
    json_object_set_new(by_task, "f", json_array());
    json_t *b = temper_bench_compute(by_task, NULL);
    json_object_set_new(a, "id", json_integer(1));
    json_object_set_new(b, "id", json_integer(2));
    json_t *cmp = temper_bench_compare(a, b, 0.05);
    const char *want[][2] = {{"a", "worse"}, {"b", "same"}, {"e", "removed"}, {"f", "added"}};
    json_t *tasks = json_object_get(cmp, "tasks");
    assert_int_equal(json_array_size(tasks), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *t = json_array_get(tasks, i);
        assert_string_equal(json_string_value(json_object_get(t, "task")), want[i][0]);
        assert_string_equal(json_string_value(json_object_get(t, "change")), want[i][1]);
    }
    /* pass@1: A 7/12; B (0/1 + 1/2) / 2 = 1/4 (f has no sample): delta 1/4 - 7/12 = -1/3. */
    assert_near(num(cmp, "suite/pass_at_k.1/delta"), -1.0 / 3);
    assert_near(num(cmp, "a"), 1);
    json_decref(cmp);
    json_decref(a);
    json_decref(b);
    json_decref(by_task);
}

static void test_store(void **state)
{
    char db[4200], msg[1024];
    snprintf(db, sizeof(db), "%s/temper.db", (char *)*state);
    struct temper_store *store = NULL;
    assert_int_equal(temper_store_open(db, &store, msg, sizeof(msg)), 0);
    /* Two evaluations recorded as the session records them. */
    json_t *r1 = result("a", "correct", "opencl:0", NULL, "[{\"speedup\": 2, \"median_ms\": 1, \"spread\": 0.05}]", 0);
    json_t *r2 = result("a", "incorrect", "opencl:0", NULL, "[]", 0);
    int64_t id1 = 0, id2 = 0;
    assert_int_equal(temper_store_record(store, r1, "// source", &id1, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_record(store, r2, "// source", &id2, msg, sizeof(msg)), 0);
    json_t *read = NULL;
    char *source = NULL;
    assert_int_equal(temper_store_evaluation(store, id2, &read, &source, msg, sizeof(msg)), 0);
    assert_int_equal(json_integer_value(json_object_get(read, "store_id")), id2);
    assert_string_equal(json_string_value(json_object_get(read, "verdict")), "incorrect");
    assert_string_equal(source, "// source");
    json_decref(read);
    free(source);
    assert_int_equal(temper_store_evaluation(store, 999, &read, NULL, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_contains(msg, "no evaluation 999");
    assert_int_equal(temper_store_run_evaluations(store, 7, &read, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    /* A bench of them round-trips, with its id. */
    json_object_set_new(r1, "store_id", json_integer(id1));
    json_object_set_new(r2, "store_id", json_integer(id2));
    json_t *by_task = json_pack("{s:[O, O]}", "a", r1, r2);
    json_t *bench = temper_bench_compute(by_task, NULL);
    json_object_set_new(bench, "source", json_pack("{s:s}", "from", "/samples"));
    json_object_set_new(bench, "level", json_string("L1"));
    json_object_set_new(bench, "devices", json_pack("[s]", "opencl:0"));
    int64_t bench_id = 0;
    assert_int_equal(temper_store_bench_put(store, bench, &bench_id, msg, sizeof(msg)), 0);
    assert_true(bench_id > 0);
    assert_int_equal(json_integer_value(json_object_get(bench, "id")), bench_id);
    json_t *back = NULL;
    assert_int_equal(temper_store_bench_get(store, bench_id, &back, msg, sizeof(msg)), 0);
    assert_true(json_equal(back, bench));
    json_decref(back);
    assert_int_equal(temper_store_bench_get(store, bench_id + 1, &back, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_contains(msg, "no bench");
    /* The same bench again is found as the one stored; another source's is not. */
    int64_t same = -1;
    assert_int_equal(temper_store_bench_find(store, bench, &same, msg, sizeof(msg)), 0);
    assert_int_equal(same, bench_id);
    json_t *other = json_deep_copy(bench);
    json_object_set_new(other, "source", json_pack("{s:s}", "from", "/elsewhere"));
    assert_int_equal(temper_store_bench_find(store, other, &same, msg, sizeof(msg)), 0);
    assert_int_equal(same, 0);
    json_decref(other);
    /* A bench naming an evaluation the store lacks is refused, and nothing is stored. */
    json_object_set_new(json_array_get(json_object_get(json_array_get(json_object_get(bench, "tasks"), 0), "evaluations"), 1),
                        "store_id", json_integer(999));
    assert_int_equal(temper_store_bench_put(store, bench, NULL, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "evaluation 999");
    assert_int_equal(temper_store_bench_get(store, bench_id + 1, &back, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    /* History: the bench, then the evaluations newest first; filters and the limit. */
    json_t *h = NULL;
    assert_int_equal(temper_store_history(store, NULL, NULL, 0, &h, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(h), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "kind")), "bench");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 1), "id")), id2);
    json_t *e1 = json_array_get(h, 2);
    assert_int_equal(json_integer_value(json_object_get(e1, "id")), id1);
    assert_near(json_number_value(json_object_get(e1, "spread")), 0.05);
    assert_near(json_number_value(json_object_get(e1, "speedup")), 2);
    json_decref(h);
    assert_int_equal(temper_store_history(store, "a", "opencl", 1, &h, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(h), 1);
    json_decref(h);
    assert_int_equal(temper_store_history(store, "zzz", NULL, 0, &h, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(h), 0);
    json_decref(h);
    assert_int_equal(temper_store_history(store, NULL, "cuda", 0, &h, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(h), 0);
    json_decref(h);
    json_decref(bench);
    json_decref(by_task);
    json_decref(r1);
    json_decref(r2);
    temper_store_close(store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compute),
        cmocka_unit_test(test_latest_of_a_configuration),
        cmocka_unit_test(test_latest_failure_drops_a_configuration),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_print_missing),
        cmocka_unit_test(test_print_singular),
        cmocka_unit_test_setup_teardown(test_store, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests_name("bench", tests, NULL, NULL);
}
