/* test_report.c: unit tests of report.h with known answers: the line diff (a shortest edit by
 * longest common subsequence, with line numbers), the rl export's reward, the export format
 * names, and a run report's convergence line against its header's best (a real SQLite store in a
 * temporary folder). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "temper/error.h"
#include "report/report.h"
#include "temper/store.h"

#include "unit.h"

/* A diff and its expected form: each line as op followed by its text, joined by '|'. */
struct diff_case {
    const char *old_text; /* the old text */
    const char *new_text; /* the new text */
    const char *expect;   /* " a|-b|+B| c" */
};

static const struct diff_case diff_cases[] = {
    {"a\nb\nc\n", "a\nb\nc\n", " a| b| c"},
    {"a\nb\nc\n", "a\nc\n", " a|-b| c"},
    {"a\nb\n", "a\nx\nb\n", " a|+x| b"},
    {"a\nb\nc\n", "a\nB\nc\n", " a|-b|+B| c"},  /* a change: the removal first */
    {"", "x\ny\n", "+x|+y"},
    {"x\ny\n", "", "-x|-y"},
    {"x", "x\n", " x"},                       /* a missing last newline is the same line */
    {"a\n\nb\n", "a\nb\n", " a|-| b"},        /* an empty line is a line */
    /* the classic: the LCS of ABCBDAB and BDCABA has 4 lines (here BDAB), so 3 removed, 2 added */
    {"A\nB\nC\nB\nD\nA\nB\n", "B\nD\nC\nA\nB\nA\n", "-A| B|-C|-B| D|+C| A| B|+A"},
};

static void test_diff_cases(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(diff_cases) / sizeof(diff_cases[0]); c++) {
        struct temper_diff_line *d = NULL;
        size_t n = 0;
        assert_int_equal(temper_diff_lines(diff_cases[c].old_text, diff_cases[c].new_text, &d, &n), 0);
        char got[256] = "";
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(got);
            snprintf(got + len, sizeof(got) - len, "%s%c%.*s", i ? "|" : "", d[i].op, (int)d[i].len, d[i].text);
        }
        if (strcmp(got, diff_cases[c].expect))
            fail_msg("case %zu: got '%s', expected '%s'", c, got, diff_cases[c].expect);
        free(d);
    }
}

static void test_diff_line_numbers(void **state)
{
    (void)state;
    struct temper_diff_line *d = NULL;
    size_t n = 0;
    assert_int_equal(temper_diff_lines("a\nb\nc\n", "a\nB\nc\nd\n", &d, &n), 0);
    /* " a" (1,1), "-b" (2,0), "+B" (0,2), " c" (3,3), "+d" (0,4) */
    static const int old_no[] = {1, 2, 0, 3, 0}, new_no[] = {1, 0, 2, 3, 4};
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(d[i].old_no, old_no[i]);
        assert_int_equal(d[i].new_no, new_no[i]);
    }
    free(d);
}

static void test_diff_too_long(void **state)
{
    (void)state;
    size_t lines = TEMPER_DIFF_MAX_LINES + 1;
    char *big = malloc(2 * lines + 1);
    for (size_t i = 0; i < lines; i++)
        big[2 * i] = 'x', big[2 * i + 1] = '\n';
    big[2 * lines] = 0;
    struct temper_diff_line *d = (void *)1;
    size_t n = 7;
    assert_int_equal(temper_diff_lines("a\n", big, &d, &n), TEMPER_ERANGE);
    assert_null(d);
    assert_int_equal(n, 0);
    big[2 * (lines - 1)] = 0; /* exactly the limit */
    assert_int_equal(temper_diff_lines(big, big, &d, &n), 0);
    assert_int_equal(n, TEMPER_DIFF_MAX_LINES);
    free(d);
    free(big);
}

static void test_reward(void **state)
{
    (void)state;
    assert_true(temper_export_reward(0, 2.0) == 0.0);
    assert_true(temper_export_reward(0, NAN) == 0.0);
    assert_true(fabs(temper_export_reward(1, 1.0) - 1.0) < 1e-15);
    assert_true(fabs(temper_export_reward(1, 2.0) - 1.5) < 1e-15);
    assert_true(fabs(temper_export_reward(1, 0.5) - 0.5) < 1e-15);
    assert_true(fabs(temper_export_reward(1, 4.0) - 2.0) < 1e-15);
    assert_true(fabs(temper_export_reward(1, 1.5) - (1.0 + 0.5 * log2(1.5))) < 1e-15);
    assert_true(temper_export_reward(1, 0.0) == 1.0); /* not timed */
    assert_true(temper_export_reward(1, NAN) == 1.0);
    /* log2(speedup) is held to [-1, 2]: a correct kernel gets 0.5 to 2, and so does the gym's
     * compute_score for the same speedup */
    assert_true(temper_export_reward(1, 1e300) == 2.0 && temper_export_reward(1, 1e-300) == 0.5);
    assert_true(temper_export_reward(1, 0.06) == 0.5);
}

static void test_format_names(void **state)
{
    (void)state;
    assert_int_equal(temper_export_format_parse("jsonl"), TEMPER_EXPORT_JSONL);
    assert_int_equal(temper_export_format_parse("sft"), TEMPER_EXPORT_SFT);
    assert_int_equal(temper_export_format_parse("rl"), TEMPER_EXPORT_RL);
    assert_int_equal(temper_export_format_parse("json"), -1);
    assert_int_equal(temper_export_format_parse(""), -1);
}

/* A correct result of vector_add at options, timed at median_ms, in tune phase phase. */
static json_t *timed_result(const char *options, double median_ms, const char *phase)
{
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:f, s:f, s:f, s:f, s:f}], s:s, "
                          "s:{s:s, s:s, s:s}}",
                          "source_hash", "00000000000000a1", "task", "vector_add", "candidate", "k.cl", "verdict",
                          "correct", "message", "passed", "device", "opencl:0", "options", options, "tune_phase", phase,
                          "timings", "shape", "N=1024", "median_ms", median_ms, "spread", 0.01, "baseline_median_ms",
                          20.0, "flops", 1024.0, "bytes", 12288.0, "task_hash", "0123456789abcdef", "device_info", "id",
                          "opencl:0", "name", "X", "driver", "1");
    assert_non_null(r);
    return r;
}

/* The y value of a convergence line's last point, read back through the plot's axis mapping. */
static double line_end_ms(const char *html)
{
    const char *svg = strstr(html, "id=\"convergence\"");
    assert_non_null(svg);
    const char *frame = strstr(svg, "class=\"plot\"");
    assert_non_null(frame);
    double top = NAN, height = NAN, lo = NAN, hi = NAN;
    int log_y = -1;
    assert_non_null(strstr(frame, "data-top=\""));
    sscanf(strstr(frame, "data-top=\"") + 10, "%lf", &top);
    sscanf(strstr(frame, "data-height=\"") + 13, "%lf", &height);
    sscanf(strstr(frame, "data-y-lo=\"") + 11, "%lf", &lo);
    sscanf(strstr(frame, "data-y-hi=\"") + 11, "%lf", &hi);
    sscanf(strstr(frame, "data-y-log=\"") + 12, "%d", &log_y);
    assert_int_equal(log_y, 0); /* the times span under 20x: linear */
    const char *line = strstr(svg, "class=\"best-line\"");
    assert_non_null(line);
    const char *points = strstr(line, "points=\"") + 8, *end = strchr(points, '"');
    const char *last = end;
    while (last > points && last[-1] != ' ')
        last--;
    double px = NAN, py = NAN;
    assert_int_equal(sscanf(last, "%lf,%lf", &px, &py), 2);
    return lo + (1 - (py - top) / height) * (hi - lo);
}

/* The convergence line of a run follows the header's rule (each configuration counts with its
 * latest timed evaluation), so it ends at the header's best: a configuration screened fastest but
 * re-timed slower no longer holds the line down at its screening time. */
static void test_convergence_ends_at_the_best(void **state)
{
    void *dir = NULL;
    (void)state;
    assert_int_equal(make_tmp(&dir), 0);
    char msg[512] = "";
    struct temper_store *store = NULL;
    assert_int_equal(temper_store_open(NULL, &store, msg, sizeof(msg)), 0);
    json_t *settings = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "tune", "source_hash", "00000000000000a1",
                                 "task_hash", "0123456789abcdef", "device_key", "opencl|X|1", "device", "opencl:0",
                                 "strategy", "random");
    int64_t run = 0;
    assert_int_equal(temper_store_run_begin(store, settings, &run, msg, sizeof(msg)), 0);
    json_decref(settings);
    /* A screened at 4.85 ms and B at 6 ms; re-timed, A takes 9.437 ms and B 7 ms: B is the best */
    struct {
        const char *options, *phase;
        double ms;
    } evals[] = {{"-DX=1", "screen", 4.85}, {"-DX=2", "screen", 6.0}, {"-DX=1", "retime", 9.437},
                 {"-DX=2", "retime", 7.0}};
    for (size_t i = 0; i < 4; i++) {
        json_t *r = timed_result(evals[i].options, evals[i].ms, evals[i].phase);
        assert_int_equal(temper_store_record_run(store, r, "__kernel void k(void) {}\n", run, NULL, msg, sizeof(msg)),
                         0);
        json_decref(r);
    }
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    assert_non_null(f);
    struct temper_report_request req = {0};
    req.run_id = run;
    int err = temper_report_write(store, &req, f, msg, sizeof(msg));
    fclose(f);
    if (err)
        fail_msg("report: %s", msg);
    assert_contains(html, "<div class=\"k\">best time</div><div class=\"v\">7 ms</div>");
    double end_ms = line_end_ms(html);
    if (fabs(end_ms - 7.0) > 0.05)
        fail_msg("the convergence line ends at %g ms, the header's best is 7 ms", end_ms);
    free(html);
    temper_store_close(store);
    remove_tmp(&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_cases),  cmocka_unit_test(test_diff_line_numbers), cmocka_unit_test(test_diff_too_long),
        cmocka_unit_test(test_reward),      cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_convergence_ends_at_the_best),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
