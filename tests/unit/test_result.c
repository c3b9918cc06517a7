/* test_result.c: the result record (include/temper/result.h): reading is strict about keys and
 * types and names the path of what is wrong; writing gives every key, null where unset; the two
 * round-trip; normalizing sets the schema version; validation wants every key. The stored reader
 * takes what a store may hold (unknown keys skipped, wrong types null, integral numbers as
 * integers); the first timing is the headline one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "temper/result.h"
#include "unit.h"

static const char *const sample =
    "{\"verdict\": \"incorrect\", \"message\": \"wrong output\", \"task\": \"softmax\", \"seed\": 1,"
    " \"knobs\": {\"BLOCK\": \"128\"}, \"cache_hit\": false,"
    " \"checks\": [{\"shape\": \"R=1 C=1\", \"seed\": \"public\", \"mismatches\": 1, \"passed\": false,"
    "   \"first_mismatch\": {\"output\": \"y\", \"index\": 0, \"position\": \"[0][0]\", \"got\": 1.5,"
    "   \"expected\": 1}}],"
    " \"timings\": [{\"shape\": \"R=2 C=2\", \"median_ms\": 0.25, \"samples\": 7, \"ceilings\": {\"copy_gbs\": 10}}],"
    " \"bench_checks\": [{\"shape\": \"R=2 C=2\", \"against\": \"baseline\", \"passed\": true,"
    "   \"expert\": {\"shape\": \"R=2 C=2\", \"routine\": \"cublas_sgemm\", \"passed\": true}}],"
    " \"phases_ms\": {\"build\": 3, \"worker\": 9.5}}";

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    return j;
}

static void test_read_typed(void **state)
{
    (void)state;
    json_t *j = load(sample);
    struct temper_result r;
    char msg[512];
    assert_int_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    assert_string_equal(r.verdict, "incorrect");
    assert_true(r.seed.set);
    assert_int_equal(r.seed.v, 1);
    assert_true(r.cache_hit.set);
    assert_false(r.cache_hit.v);
    assert_false(r.secret_seed.set);
    assert_null(r.baseline);
    assert_int_equal(r.checks.n, 1);
    assert_non_null(r.checks.v[0].first_mismatch);
    assert_string_equal(r.checks.v[0].first_mismatch->position, "[0][0]");
    assert_true(r.checks.v[0].first_mismatch->expected.set);
    assert_true(r.checks.v[0].first_mismatch->expected.v == 1.0); /* an integer read as a number */
    assert_null(r.checks.v[0].nondeterministic_at);
    assert_int_equal(r.timings.n, 1);
    assert_true(r.timings.v[0].median_ms.v == 0.25);
    assert_false(r.timings.v[0].spread.set);
    assert_non_null(r.bench_checks.v[0].expert);
    assert_string_equal(r.bench_checks.v[0].expert->routine, "cublas_sgemm");
    assert_true(r.phases_ms->worker.v == 9.5);
    assert_false(r.phases_ms->timing.set);
    temper_result_free(&r);
    assert_null(r.verdict);
    json_decref(j);
}

/* Each malformed result, and the path its message must name. */
static const struct {
    const char *json; /* the input */
    const char *says; /* a part of the message */
} bad_results[] = {
    {"{\"verdict\": 3}", "result verdict: a string was expected"},
    {"{\"unknown_key\": 1}", "result unknown_key: not a field of the result record"},
    {"{\"seed\": 1.5}", "result seed: an integer was expected"},
    {"{\"cache_hit\": \"yes\"}", "result cache_hit: true or false was expected"},
    {"{\"checks\": {}}", "result checks: an array was expected"},
    {"{\"checks\": [1]}", "result checks[0]: an object was expected"},
    {"{\"checks\": [{\"passed\": true}, {\"speed\": 2}]}", "result checks[1].speed: not a field of the check"},
    {"{\"timings\": [{\"median_ms\": \"fast\"}]}", "result timings[0].median_ms: a number was expected"},
    {"{\"checks\": [{\"first_mismatch\": {\"index\": \"0\"}}]}",
     "result checks[0].first_mismatch.index: an integer was expected"},
    {"{\"phases_ms\": []}", "result phases_ms: an object was expected"},
};

static void test_read_rejects(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_results) / sizeof(bad_results[0]); i++) {
        json_t *j = load(bad_results[i].json);
        struct temper_result r;
        char msg[512] = "";
        assert_int_not_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
        assert_contains(msg, bad_results[i].says);
        assert_null(r.verdict); /* freed and zeroed on error */
        assert_int_equal(r.checks.n, 0);
        json_decref(j);
    }
}

static void test_write_every_key(void **state)
{
    (void)state;
    struct temper_result r;
    memset(&r, 0, sizeof(r));
    json_t *out = temper_result_to_json(&r);
    assert_true(json_is_null(json_object_get(out, "verdict")));
    assert_true(json_is_null(json_object_get(out, "phases_ms")));
    assert_true(json_is_array(json_object_get(out, "checks")));
    assert_int_equal(json_array_size(json_object_get(out, "checks")), 0);
    assert_true(json_is_null(json_object_get(out, "same_code_as")));
    /* Not valid until it has a version, a verdict and a message. */
    char msg[512];
    assert_int_not_equal(temper_result_validate(out, msg, sizeof(msg)), 0);
    json_decref(out);
}

static void test_normalize_round_trip(void **state)
{
    (void)state;
    json_t *j = load(sample);
    char msg[512];
    json_t *one = temper_result_normalize(j, msg, sizeof(msg));
    assert_non_null(one);
    assert_int_equal(temper_result_validate(one, msg, sizeof(msg)), 0);
    assert_int_equal(json_integer_value(json_object_get(one, "schema_version")), TEMPER_RESULT_SCHEMA_VERSION);
    /* Values survive: nested records, free-form JSON, an integer-valued number. */
    json_t *c0 = json_array_get(json_object_get(one, "checks"), 0);
    assert_true(json_is_null(json_object_get(c0, "deterministic")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(c0, "first_mismatch"), "output")), "y");
    json_t *t0 = json_array_get(json_object_get(one, "timings"), 0);
    assert_true(json_number_value(json_object_get(json_object_get(t0, "ceilings"), "copy_gbs")) == 10);
    assert_string_equal(json_string_value(json_object_get(json_object_get(one, "knobs"), "BLOCK")), "128");
    /* A second pass changes nothing. */
    json_t *two = temper_result_normalize(one, msg, sizeof(msg));
    assert_non_null(two);
    assert_true(json_equal(one, two));
    /* Validation notices a key gone from a nested record. */
    json_object_del(json_array_get(json_object_get(two, "timings"), 0), "gbps");
    assert_int_not_equal(temper_result_validate(two, msg, sizeof(msg)), 0);
    assert_contains(msg, "timings[0].gbps: missing");
    json_decref(two);
    json_decref(one);
    json_decref(j);
}

static void test_schema_markdown(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    temper_result_schema_markdown(m);
    fclose(m);
    assert_contains(text, "### result\n");
    assert_contains(text, "| `timings` | list of timing |");
    assert_contains(text, "| `first_mismatch` | mismatch |");
    assert_contains(text, "### device\n");
    free(text);
}

/* A result as a store may hold it: written before the one form or by hand. */
static void test_read_stored(void **state)
{
    (void)state;
    json_t *j = load("{\"verdict\": \"correct\", \"legacy_key\": {\"x\": 1}, \"seed\": \"one\","
                     " \"store_id\": 1024.0, \"secret_seed\": 2.5, \"message\": 7, \"cache_hit\": \"yes\","
                     " \"phases_ms\": [1, 2],"
                     " \"checks\": [{\"shape\": \"R=1 C=1\", \"passed\": true, \"note\": \"x\"}, 3,"
                     "   {\"shape\": \"R=9 C=9\", \"mismatches\": 2.0, \"max_abs_err\": \"big\"}],"
                     " \"timings\": {\"median_ms\": 1}}");
    struct temper_result r;
    assert_int_equal(temper_result_from_stored(j, &r), 0);
    assert_string_equal(r.verdict, "correct");
    assert_false(r.seed.set);                /* a string for an integer: null */
    assert_true(r.store_id.set);             /* 1024.0 written for an integer */
    assert_int_equal(r.store_id.v, 1024);
    assert_false(r.secret_seed.set);         /* 2.5 is no integer */
    assert_null(r.message);                  /* a number for a string */
    assert_false(r.cache_hit.set);           /* a string for a boolean */
    assert_null(r.phases_ms);                /* an array for a record */
    assert_int_equal(r.timings.n, 0);        /* an object for a list */
    assert_int_equal(r.checks.n, 3);         /* the entry that is no object keeps its place, empty */
    assert_string_equal(r.checks.v[0].shape, "R=1 C=1");
    assert_true(r.checks.v[0].passed.set && r.checks.v[0].passed.v);
    assert_null(r.checks.v[1].shape);
    assert_false(r.checks.v[1].passed.set);
    assert_false(r.checks.v[1].mismatches.set);
    assert_string_equal(r.checks.v[2].shape, "R=9 C=9");
    assert_true(r.checks.v[2].mismatches.set);
    assert_int_equal(r.checks.v[2].mismatches.v, 2);
    assert_false(r.checks.v[2].max_abs_err.set);
    temper_result_free(&r);
    /* the strict reader refuses the same object */
    char msg[256];
    assert_int_not_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    assert_null(r.verdict);
    json_decref(j);

    /* what is not an object reads as an empty result */
    json_t *a = load("[1, 2]");
    assert_int_equal(temper_result_from_stored(a, &r), 0);
    assert_null(r.verdict);
    assert_int_equal(r.checks.n, 0);
    temper_result_free(&r);
    json_decref(a);
    assert_int_equal(temper_result_from_stored(NULL, &r), 0);
    assert_null(r.verdict);
}

static void test_first_timing(void **state)
{
    (void)state;
    json_t *j = load(sample);
    struct temper_result r;
    char msg[512];
    assert_int_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    const struct temper_result_timing *t = temper_result_first_timing(&r);
    assert_non_null(t);
    assert_ptr_equal(t, &r.timings.v[0]);
    assert_string_equal(t->shape, "R=2 C=2");
    assert_true(t->median_ms.set && t->median_ms.v == 0.25);
    assert_int_equal(t->samples.v, 7);
    temper_result_free(&r);
    json_decref(j);

    j = load("{\"verdict\": \"incorrect\", \"timings\": []}");
    assert_int_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    assert_null(temper_result_first_timing(&r));
    temper_result_free(&r);
    json_decref(j);

    j = load("{\"timings\": [{\"shape\": \"N=1\", \"median_ms\": 2}, {\"shape\": \"N=2\", \"median_ms\": 3}]}");
    assert_int_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    assert_string_equal(temper_result_first_timing(&r)->shape, "N=1");
    assert_true(temper_result_first_timing(&r)->median_ms.v == 2.0);
    temper_result_free(&r);
    json_decref(j);
}

/* A timing is written with every key, null where unset, as the result writer writes it. */
static void test_write_timing(void **state)
{
    (void)state;
    json_t *j = load(sample);
    struct temper_result r;
    char msg[512];
    assert_int_equal(temper_result_from_json(j, &r, msg, sizeof(msg)), 0);
    json_t *t = temper_result_timing_to_json(temper_result_first_timing(&r));
    json_t *whole = temper_result_to_json(&r);
    assert_true(json_equal(t, json_array_get(json_object_get(whole, "timings"), 0)));
    assert_true(json_number_value(json_object_get(t, "median_ms")) == 0.25);
    assert_true(json_is_null(json_object_get(t, "spread")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "ceilings"), "copy_gbs")), 10);
    json_decref(t);
    json_decref(whole);
    t = temper_result_timing_to_json(NULL);
    assert_true(json_is_null(t));
    json_decref(t);
    temper_result_free(&r);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_typed),           cmocka_unit_test(test_read_rejects),
        cmocka_unit_test(test_write_every_key),      cmocka_unit_test(test_normalize_round_trip),
        cmocka_unit_test(test_schema_markdown),
        cmocka_unit_test(test_read_stored),          cmocka_unit_test(test_first_timing),
        cmocka_unit_test(test_write_timing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
