/* test_report.c: unit tests of report.h with known answers: the line diff (a shortest edit by
 * longest common subsequence, with line numbers), the rl export's reward, and the export
 * format names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "temper/error.h"
#include "temper/report.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_cases),  cmocka_unit_test(test_diff_line_numbers), cmocka_unit_test(test_diff_too_long),
        cmocka_unit_test(test_reward),      cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
