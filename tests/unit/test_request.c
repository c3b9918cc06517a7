/* test_request.c: unit tests of request.h: the knob value's text (the same as the API's %lld and
 * MCP's %.17g gave), the item codec's round trip, and every refusal of an item with its kind and
 * message (the API's, byte for byte). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "temper/error.h"
#include "temper/request.h"

#include "unit.h"

/* A knob value and the text it must give. */
struct text_case {
    struct temper_knob_value v; /* the value */
    const char *want;           /* its text */
};

static void test_knob_text(void **state)
{
    (void)state;
    static const struct text_case cases[] = {
        {{"B", TEMPER_KNOB_INT, 64, 0, NULL}, "64"},
        {{"B", TEMPER_KNOB_INT, -7, 0, NULL}, "-7"},
        {{"B", TEMPER_KNOB_INT, INT64_MAX, 0, NULL}, "9223372036854775807"},
        {{"B", TEMPER_KNOB_INT, INT64_MIN, 0, NULL}, "-9223372036854775808"},
        {{"R", TEMPER_KNOB_REAL, 0, 1.5, NULL}, "1.5"},
        {{"R", TEMPER_KNOB_REAL, 0, 0.1, NULL}, "0.10000000000000001"},
        {{"R", TEMPER_KNOB_REAL, 0, 1e300, NULL}, "1.0000000000000001e+300"},
        {{"R", TEMPER_KNOB_REAL, 0, 0, NULL}, "0"},
        {{"T", TEMPER_KNOB_TEXT, 0, 0, "float4"}, "float4"},
        {{"T", TEMPER_KNOB_TEXT, 0, 0, "064"}, "064"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[128], old[192], set[192];
        int n = temper_knob_value_text(&cases[i].v, out, sizeof(out));
        assert_string_equal(out, cases[i].want);
        assert_int_equal(n, (int)strlen(cases[i].want));
        /* what the API, the consumer and MCP wrote by hand before */
        if (cases[i].v.kind == TEMPER_KNOB_INT)
            snprintf(old, sizeof(old), "%s=%lld", cases[i].v.name, (long long)cases[i].v.i);
        else if (cases[i].v.kind == TEMPER_KNOB_REAL)
            snprintf(old, sizeof(old), "%s=%.17g", cases[i].v.name, cases[i].v.r);
        else
            snprintf(old, sizeof(old), "%s=%s", cases[i].v.name, cases[i].v.text);
        n = temper_knob_value_assignment(&cases[i].v, set, sizeof(set));
        assert_string_equal(set, old);
        assert_int_equal(n, (int)strlen(old));
    }
    /* a short buffer is cut, and the length needed still returned */
    struct temper_knob_value v = {"BLOCK", TEMPER_KNOB_INT, 12345, 0, NULL};
    char small[8];
    assert_int_equal(temper_knob_value_assignment(&v, small, sizeof(small)), 11);
    assert_string_equal(small, "BLOCK=1");
}

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return j;
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *text = "{\"id\": \"a1\", \"source\": \"// @temper task x\\n\", \"lang\": "
                       "\"opencl\", \"task\": \"vec_add\","
                       " \"knobs\": {\"BLOCK\": 64, \"VEC\": \"float4\", \"TILE\": 8.0},"
                       " \"options\": {\"timing\": false, \"seed\": 7, \"keep_going\": true, "
                       "\"checks_only\": true,"
                       " \"time_budget_s\": 0.5}, \"parent\": 12, \"origin\": \"agent:me\"}";
    json_t *item = parse(text);
    struct temper_request r;
    const char *kind = NULL;
    char msg[512] = "";
    assert_int_equal(temper_request_from_json(item, "items[0]", 1000, &r, &kind, msg, sizeof(msg)), 0);
    assert_string_equal(r.path, "a1");
    assert_string_equal(r.lang, "opencl");
    assert_string_equal(r.task, "vec_add");
    assert_int_equal(r.source_len, strlen("// @temper task x\n"));
    assert_int_equal(r.nknobs, 3);
    assert_int_equal(r.no_timing, 1);
    assert_int_equal(r.seed, 7);
    assert_int_equal(r.keep_going, 1);
    assert_int_equal(r.checks_only, 1);
    assert_true(r.time_budget_s == 0.5);
    assert_int_equal(r.parent_id, 12);
    assert_string_equal(r.made_by, "agent:me");
    for (int i = 0; i < r.nknobs; i++) {
        char t[64];
        temper_knob_value_text(&r.knobs[i], t, sizeof(t));
        if (!strcmp(r.knobs[i].name, "TILE")) /* 8.0 is the integer 8 */
            assert_true(r.knobs[i].kind == TEMPER_KNOB_INT && !strcmp(t, "8"));
        if (!strcmp(r.knobs[i].name, "VEC"))
            assert_true(r.knobs[i].kind == TEMPER_KNOB_TEXT && !strcmp(t, "float4"));
    }
    json_t *back = temper_request_to_json(&r);
    assert_non_null(back);
    /* the same item, with TILE as the integer it is */
    json_object_set_new(json_object_get(item, "knobs"), "TILE", json_integer(8));
    assert_true(json_equal(back, item));
    struct temper_request again, copy;
    assert_int_equal(temper_request_from_json(back, "items[0]", 0, &again, NULL, msg, sizeof(msg)), 0);
    assert_int_equal(temper_request_copy(&copy, &again), 0);
    json_t *third = temper_request_to_json(&copy);
    assert_true(json_equal(third, item));
    json_decref(third);
    json_decref(back);
    json_decref(item);
    temper_request_free(&r);
    temper_request_free(&again);
    temper_request_free(&copy);
    /* an item with only what it must have has nothing else set, and writes back the same */
    item = parse("{\"source\": \"s\", \"lang\": \"cuda\"}");
    assert_int_equal(temper_request_from_json(item, "items[1]", 0, &r, NULL, msg, sizeof(msg)), 0);
    assert_null(r.path);
    assert_int_equal(r.nknobs, 0);
    assert_int_equal(r.seed, 0);
    back = temper_request_to_json(&r);
    assert_true(json_equal(back, item));
    json_decref(back);
    json_decref(item);
    temper_request_free(&r);
}

/* An item and the refusal it must get. */
struct refusal_case {
    const char *item; /* the item's JSON */
    const char *kind; /* the gym's error kind */
    const char *msg;  /* the message, exactly */
};

#define SRC "\"source\": \"s\", \"lang\": \"opencl\""

static void test_refusals(void **state)
{
    (void)state;
    static const struct refusal_case cases[] = {
        {"[1]", "invalid_request", "items[2] must be an object"},
        {"{" SRC ", \"colour\": 1}", "invalid_request", "items[2]: unknown field 'colour'"},
        {"{" SRC ", \"id\": \"...\"}", "invalid_id", "items[2].id must be 1 to 128 of [A-Za-z0-9._:-] (not only dots)"},
        {"{" SRC ", \"id\": 5}", "invalid_id", "items[2].id must be 1 to 128 of [A-Za-z0-9._:-] (not only dots)"},
        {"{\"source\": \"\", \"lang\": \"cuda\"}", "invalid_request", "items[2].source must be a non-empty string"},
        {"{\"lang\": \"cuda\"}", "invalid_request", "items[2].source must be a non-empty string"},
        {"{\"source\": \"0123456789abc\", \"lang\": \"cuda\"}", "source_too_large",
         "items[2].source has 13 bytes, over this server's limit of 12"},
        {"{\"source\": \"s\", \"lang\": \"fortran\"}", "invalid_request",
         "items[2].lang must be \"cuda\", \"opencl\" or \"triton\""},
        {"{" SRC ", \"knobs\": [1]}", "invalid_request", "items[2].knobs must be an object of NAME: value"},
        {"{" SRC ", \"knobs\": {\"9x\": 1}}", "invalid_request",
         "items[2].knobs: '9x' is not a knob name ([A-Za-z_][A-Za-z0-9_]*, under "
         "64 bytes)"},
        {"{" SRC ", \"knobs\": {\"X\": 1.5}}", "invalid_request",
         "items[2].knobs.X must be an integer or 1 to 63 printable ASCII "
         "characters without spaces, quotes or "
         "backslashes"},
        {"{" SRC ", \"knobs\": {\"X\": \"a b\"}}", "invalid_request",
         "items[2].knobs.X must be an integer or 1 to 63 printable ASCII "
         "characters without spaces, quotes or "
         "backslashes"},
        {"{" SRC ", \"options\": 3}", "invalid_request", "items[2].options must be an object"},
        {"{" SRC ", \"options\": {\"fast\": true}}", "invalid_request", "items[2].options: unknown field 'fast'"},
        {"{" SRC ", \"options\": {\"timing\": 1}}", "invalid_request", "items[2].options.timing must be true or false"},
        {"{" SRC ", \"options\": {\"keep_going\": \"y\"}}", "invalid_request",
         "items[2].options.keep_going must be true or false"},
        {"{" SRC ", \"options\": {\"checks_only\": null}}", "invalid_request",
         "items[2].options.checks_only must be true or false"},
        {"{" SRC ", \"options\": {\"seed\": 0}}", "invalid_request", "items[2].options.seed must be an integer from 1"},
        {"{" SRC ", \"options\": {\"time_budget_s\": 0.001}}", "invalid_request",
         "items[2].options.time_budget_s must be a number from 0.01 to 3600"},
        {"{" SRC ", \"parent\": 0}", "invalid_request", "items[2].parent must be a store row id (an integer from 1)"},
        {"{" SRC ", \"origin\": \"a\\u0007\"}", "invalid_request",
         "items[2].origin must be a string of at most 128 characters, none of "
         "them a control character"},
        {"{" SRC ", \"task\": \"Vec\"}", "invalid_request", "items[2].task must be a task name ([a-z0-9_])"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *item = parse(cases[i].item);
        struct temper_request r;
        const char *kind = NULL;
        char msg[512] = "";
        int err = temper_request_from_json(item, "items[2]", 12, &r, &kind, msg, sizeof(msg));
        if (!err)
            fail_msg("case %zu (%s) was taken", i, cases[i].item);
        assert_string_equal(kind, cases[i].kind);
        assert_string_equal(msg, cases[i].msg);
        assert_int_equal(err, !strcmp(cases[i].kind, "source_too_large") ? TEMPER_ERANGE : TEMPER_EINVALID);
        temper_request_free(&r);
        json_decref(item);
    }
}

static void test_id_ok(void **state)
{
    (void)state;
    char long_id[130];
    memset(long_id, 'a', 129);
    long_id[129] = 0;
    assert_true(temper_request_id_ok("job-1.a_b:c"));
    assert_false(temper_request_id_ok(""));
    assert_false(temper_request_id_ok(".."));
    assert_false(temper_request_id_ok("a/b"));
    assert_false(temper_request_id_ok(long_id));
    long_id[128] = 0;
    assert_true(temper_request_id_ok(long_id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knob_text),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_id_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
