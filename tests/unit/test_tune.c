/* test_tune.c: the tune state machine (temper_tune_*), without a device or a store: the author's
 * defaults come first; every screening point carries its knobs, the run's one secret seed and the
 * screening budget; the budget is kept, points whose code was an earlier one's are not counted
 * against it; the best few distinct points are re-timed in full; the summary's best is the
 * fastest re-timing; a stopped tune reports its best screening point; failed points say why. Results are built here
 * from a known landscape (time = BLOCK / VEC), which is what the machine is tested against. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "temper/error.h"
#include "search/tune.h"

static const char candidate_src[] =
    "// @temper task vector_add\n"
    "// @temper param BLOCK 512 256 128 64\n"
    "// @temper param VEC 1 2 4\n"
    "// @temper launch k grid(N) block(BLOCK)\n"
    "__kernel void k(void) {}\n";

/* The knob's value in a point's settings. */
static int knob(const struct temper_tune_point *p, const char *name)
{
    for (int i = 0; i < p->req.nknobs; i++)
        if (!strcmp(p->req.knobs[i].name, name))
            return atoi(p->req.knobs[i].text);
    fail_msg("no knob %s", name);
    return 0;
}

/* A correct, timed result whose time is BLOCK / VEC; same_code: it took an earlier one's code. */
static json_t *result_for(const struct temper_tune_point *p, int same_code)
{
    double ms = (double)knob(p, "BLOCK") / knob(p, "VEC");
    json_t *r = json_pack("{s:s, s:[{s:f}], s:s}", "verdict", "correct", "timings", "median_ms", ms, "options",
                          p->options);
    if (same_code)
        json_object_set_new(r, "same_code_as", json_string("-DBLOCK=512 -DVEC=1"));
    return r;
}

static struct temper_tune *start(int budget, int retime)
{
    struct temper_tune_request req = {0};
    req.path = "t.cl";
    req.source = candidate_src;
    req.strategy = "random";
    req.budget = budget;
    req.retime = retime;
    req.batch = 3;
    req.seed = 1;
    struct temper_tune *t = NULL;
    char msg[512];
    assert_int_equal(temper_tune_init(&req, "opencl:0", NULL, 0, &t, msg, sizeof(msg)), 0);
    return t;
}

static void test_screening_then_retiming(void **state)
{
    (void)state;
    struct temper_tune *t = start(5, 2);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    int screened = 0, retimed = 0, first = 1, last_index = 0;
    uint64_t secret = 0;
    double best = INFINITY;
    int n;
    while ((n = temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH)) > 0) {
        assert_true(n <= 3);
        for (int i = 0; i < n; i++) {
            if (first) {
                /* the author's defaults first */
                assert_int_equal(knob(&pts[0], "BLOCK"), 512);
                assert_int_equal(knob(&pts[0], "VEC"), 1);
                secret = pts[0].req.secret_seed;
                first = 0;
            }
            assert_true(secret != 0);
            assert_true(pts[i].req.secret_seed == secret);
            assert_true(pts[i].req.reuse_same_code);
            assert_string_equal(pts[i].req.source, candidate_src);
            assert_true(strstr(pts[i].options, "-DBLOCK=") != NULL);
            assert_true(pts[i].req.time_budget_s == (pts[i].retime ? 2.0 : 0.3));
            json_t *r = result_for(&pts[i], 0);
            struct temper_tune_event ev;
            temper_tune_observe(t, &pts[i], r, 0, &ev);
            assert_int_equal(ev.index, last_index + 1);
            last_index = ev.index;
            assert_string_equal(ev.verdict, "correct");
            assert_string_equal(ev.config, pts[i].config);
            assert_int_equal(ev.retime, pts[i].retime);
            if (pts[i].retime) {
                retimed++;
            } else {
                screened++;
                best = fmin(best, ev.time_ms);
                assert_true(ev.best_ms == best);
            }
            json_decref(r);
        }
    }
    assert_int_equal(screened, 5);
    assert_int_equal(retimed, 2);
    assert_int_equal(temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH), 0);
    json_t *s = temper_tune_summary(t, 0);
    assert_int_equal(json_integer_value(json_object_get(s, "evaluations")), 5);
    assert_int_equal(json_array_size(json_object_get(s, "history")), 5);
    assert_int_equal(json_array_size(json_object_get(s, "retimed")), 2);
    assert_null(json_object_get(s, "interrupted"));
    assert_string_equal(json_string_value(json_object_get(s, "ranked_by")), "time"); /* no expert */
    json_t *b = json_object_get(s, "best");
    assert_non_null(b);
    /* the best is the fastest screened point, re-timed */
    assert_true(json_number_value(json_object_get(json_object_get(b, "timing"), "median_ms")) == best);
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

/* "best_found_at" names the evaluation that made the best best: the re-timing of the configuration
 * that won the re-timings (the evaluation temper_store_best counts for it), not a screening point,
 * even when the screening's fastest point lost in its re-timing. */
static void test_best_found_at_names_the_winning_retiming(void **state)
{
    (void)state;
    struct temper_tune *t = start(5, 2);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    double screen_best = INFINITY;
    char screen_best_config[512] = "", winner[512] = "";
    int n, screen_best_at = 0, winner_at = 0;
    while ((n = temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH)) > 0) {
        for (int i = 0; i < n; i++) {
            json_t *r = result_for(&pts[i], 0);
            /* re-timed, the screening's fastest point is slow and the other fast */
            if (pts[i].retime)
                json_real_set(json_object_get(json_array_get(json_object_get(r, "timings"), 0), "median_ms"),
                              strcmp(pts[i].config, screen_best_config) ? 1.0 : 1000.0);
            struct temper_tune_event ev;
            temper_tune_observe(t, &pts[i], r, 0, &ev);
            if (!pts[i].retime && ev.time_ms < screen_best) {
                screen_best = ev.time_ms;
                screen_best_at = ev.index;
                snprintf(screen_best_config, sizeof(screen_best_config), "%s", pts[i].config);
            } else if (pts[i].retime && strcmp(pts[i].config, screen_best_config)) {
                winner_at = ev.index;
                snprintf(winner, sizeof(winner), "%s", pts[i].config);
            }
            json_decref(r);
        }
    }
    assert_true(screen_best_at >= 1 && screen_best_at <= 5);
    assert_true(winner_at > 5); /* a re-timing, after the 5 screening points */
    json_t *s = temper_tune_summary(t, 0);
    json_t *b = json_object_get(s, "best");
    assert_non_null(b);
    assert_true(json_number_value(json_object_get(json_object_get(b, "timing"), "median_ms")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(s, "best_found_at")), winner_at);
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

/* For a task with an expert, configurations rank by their time over the expert's timed beside them:
 * here the fastest configuration (BLOCK 64, VEC 4: 16) always meets a GPU three times slower (its
 * median 48, the expert's 30 instead of 10), which on time alone would lose to 32. It wins, and
 * every time shown is the measured one. */
static void test_ranked_against_the_expert(void **state)
{
    (void)state;
    struct temper_tune *t = start(12, 3);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    int n, seen_best = 0;
    while ((n = temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH)) > 0) {
        for (int i = 0; i < n; i++) {
            json_t *r = result_for(&pts[i], 0);
            const double slow = knob(&pts[i], "BLOCK") == 64 && knob(&pts[i], "VEC") == 4 ? 3.0 : 1.0;
            json_t *tm = json_array_get(json_object_get(r, "timings"), 0);
            json_real_set(json_object_get(tm, "median_ms"), json_number_value(json_object_get(tm, "median_ms")) * slow);
            json_object_set_new(tm, "expert_median_ms", json_real(10.0 * slow));
            struct temper_tune_event ev;
            temper_tune_observe(t, &pts[i], r, 0, &ev);
            if (slow > 1) {
                assert_true(ev.time_ms == 48.0); /* measured, not scaled */
                seen_best = 1;
            }
            if (seen_best && !pts[i].retime)
                assert_true(ev.best_ms == 48.0); /* the best so far is that one, by its measured time */
            json_decref(r);
        }
    }
    assert_true(seen_best);
    json_t *s = temper_tune_summary(t, 0);
    assert_string_equal(json_string_value(json_object_get(s, "ranked_by")), "time over the expert's");
    json_t *b = json_object_get(s, "best");
    assert_non_null(b);
    assert_string_equal(json_string_value(json_object_get(b, "config")), "BLOCK=64 VEC=4");
    assert_true(json_number_value(json_object_get(json_object_get(b, "timing"), "median_ms")) == 48.0);
    json_t *h = json_object_get(s, "history");
    assert_true(json_number_value(json_array_get(h, json_array_size(h) - 1)) == 48.0);
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

static void test_same_code_is_not_counted(void **state)
{
    (void)state;
    struct temper_tune *t = start(3, 1);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    int screened = 0, n, k = 0;
    while ((n = temper_tune_propose(t, pts, 1)) > 0 && !pts[0].retime) {
        /* every other point had an earlier one's code */
        json_t *r = result_for(&pts[0], k++ % 2 == 1);
        struct temper_tune_event ev;
        temper_tune_observe(t, &pts[0], r, k == 1, &ev);
        assert_int_equal(ev.from_store, k == 1);
        json_decref(r);
        screened++;
    }
    /* 3 counted against the budget, and the 2 that reused code on top */
    assert_int_equal(screened, 5);
    json_t *s = temper_tune_summary(t, 0);
    assert_int_equal(json_integer_value(json_object_get(s, "same_code")), 2);
    assert_int_equal(json_integer_value(json_object_get(s, "from_store")), 1);
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

static void test_stopped_tune_reports_its_best_screening_point(void **state)
{
    (void)state;
    struct temper_tune *t = start(8, 2);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    int n = temper_tune_propose(t, pts, 2);
    assert_int_equal(n, 2);
    double best = INFINITY;
    int best_at = 0;
    for (int i = 0; i < n; i++) {
        json_t *r = result_for(&pts[i], 0);
        struct temper_tune_event ev;
        temper_tune_observe(t, &pts[i], r, 0, &ev);
        if (ev.time_ms < best)
            best_at = ev.index;
        best = fmin(best, ev.time_ms);
        json_decref(r);
    }
    json_t *s = temper_tune_summary(t, 1);
    assert_int_equal(json_integer_value(json_object_get(s, "best_found_at")), best_at); /* its screening point */
    assert_true(json_is_true(json_object_get(s, "interrupted")));
    assert_int_equal(json_integer_value(json_object_get(s, "evaluations")), 2);
    json_t *b = json_object_get(s, "best");
    assert_non_null(b);
    assert_true(json_number_value(json_object_get(json_object_get(b, "timing"), "median_ms")) == best);
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

static void test_settings_and_resume(void **state)
{
    (void)state;
    struct temper_tune *t = start(4, 1);
    json_t *settings = temper_tune_settings(t);
    assert_string_equal(json_string_value(json_object_get(settings, "strategy")), "random");
    assert_int_equal(json_integer_value(json_object_get(settings, "budget")), 4);
    assert_string_equal(json_string_value(json_object_get(settings, "source_hash")), temper_tune_source_hash(t));
    assert_string_equal(temper_tune_task(t), "vector_add");
    temper_tune_free(t);
    /* a resumed run continues with its own settings, whatever was asked now */
    json_object_set_new(settings, "budget", json_integer(2));
    struct temper_tune_request req = {0};
    req.path = "t.cl";
    req.source = candidate_src;
    req.budget = 40;
    char msg[512];
    assert_int_equal(temper_tune_init(&req, "opencl:0", settings, 7, &t, msg, sizeof(msg)), 0);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    int screened = 0, n;
    while ((n = temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH)) > 0 && !pts[0].retime)
        for (int i = 0; i < n; i++, screened++) {
            json_t *r = result_for(&pts[i], 0);
            struct temper_tune_event ev;
            temper_tune_observe(t, &pts[i], r, 0, &ev);
            json_decref(r);
        }
    assert_int_equal(screened, 2);
    json_t *s = temper_tune_summary(t, 0);
    assert_int_equal(json_integer_value(json_object_get(s, "resumed_run")), 7);
    assert_string_equal(json_string_value(json_object_get(s, "strategy")), "random");
    json_decref(s);
    json_decref(settings);
    free(pts);
    temper_tune_free(t);
}

/* Failed configurations say why: each event carries its verdict message's first line (a compile
 * error's first compiler-log error line), and the summary lists each distinct failure once with
 * its count, the most frequent first, a compile error with its log's first lines. */
static void test_failures_say_why(void **state)
{
    (void)state;
    struct temper_tune *t = start(5, 1);
    struct temper_tune_point *pts = calloc(TEMPER_TUNE_MAX_BATCH, sizeof(*pts));
    assert_non_null(pts);
    char log[1024] = "In file included from t.cl:1:\n";
    for (int i = 0; i < 12; i++)
        snprintf(log + strlen(log), sizeof(log) - strlen(log), "%st.cl:%d: error: nope %d\n", i ? "" : "  ", i, i);
    int k = 0, n;
    while ((n = temper_tune_propose(t, pts, TEMPER_TUNE_MAX_BATCH)) > 0)
        for (int i = 0; i < n; i++, k++) {
            assert_false(pts[i].retime); /* nothing correct: nothing to re-time */
            /* points 1, 3 and 5 are invalid, 2 and 4 do not compile */
            json_t *r = k % 2 == 0 ? json_pack("{s:s, s:s}", "verdict", "invalid", "message",
                                               "t.cl:4: args(...) names 'bta'\nmore")
                                   : json_pack("{s:s, s:s, s:s}", "verdict", "compile_error", "message",
                                               "t.cl: OpenCL build failed", "compile_log", log);
            struct temper_tune_event ev;
            temper_tune_observe(t, &pts[i], r, 0, &ev);
            assert_string_equal(ev.why, k % 2 == 0 ? "t.cl:4: args(...) names 'bta'" : "t.cl:0: error: nope 0");
            json_decref(r);
        }
    assert_int_equal(k, 5);
    json_t *s = temper_tune_summary(t, 0);
    assert_null(json_object_get(s, "best"));
    json_t *f = json_object_get(s, "failures");
    assert_int_equal(json_array_size(f), 2);
    json_t *f0 = json_array_get(f, 0), *f1 = json_array_get(f, 1);
    assert_string_equal(json_string_value(json_object_get(f0, "verdict")), "invalid");
    assert_string_equal(json_string_value(json_object_get(f0, "message")), "t.cl:4: args(...) names 'bta'\nmore");
    assert_int_equal(json_integer_value(json_object_get(f0, "count")), 3);
    assert_int_equal(json_integer_value(json_object_get(f0, "first_at")), 1);
    assert_true(json_is_null(json_object_get(f0, "compile_log")));
    assert_string_equal(json_string_value(json_object_get(f1, "verdict")), "compile_error");
    assert_int_equal(json_integer_value(json_object_get(f1, "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(f1, "first_at")), 2);
    /* the log's first 8 lines, no trailing newline */
    const char *head = json_string_value(json_object_get(f1, "compile_log"));
    assert_non_null(head);
    assert_non_null(strstr(head, "In file included from t.cl:1:\n  t.cl:0: error: nope 0\n"));
    assert_non_null(strstr(head, "t.cl:6: error: nope 6"));
    assert_null(strstr(head, "nope 7"));
    assert_true(head[strlen(head) - 1] != '\n');
    json_decref(s);
    free(pts);
    temper_tune_free(t);
}

static void test_bad_candidate_and_strategy(void **state)
{
    (void)state;
    struct temper_tune_request req = {0};
    req.path = "t.cl";
    req.source = "// @temper task\n";
    struct temper_tune *t = NULL;
    char msg[512];
    assert_int_not_equal(temper_tune_init(&req, "opencl:0", NULL, 0, &t, msg, sizeof(msg)), 0);
    assert_null(t);
    req.source = candidate_src;
    req.strategy = "hillclimb";
    assert_int_equal(temper_tune_init(&req, "opencl:0", NULL, 0, &t, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_non_null(strstr(msg, "hillclimb"));
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_screening_then_retiming),
        cmocka_unit_test(test_best_found_at_names_the_winning_retiming),
        cmocka_unit_test(test_ranked_against_the_expert),
        cmocka_unit_test(test_same_code_is_not_counted),
        cmocka_unit_test(test_stopped_tune_reports_its_best_screening_point),
        cmocka_unit_test(test_settings_and_resume),
        cmocka_unit_test(test_bad_candidate_and_strategy),
        cmocka_unit_test(test_failures_say_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
