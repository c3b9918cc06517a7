/* test_expr.c: unit tests of the integer expression evaluator (util.h temper_expr_eval): precedence,
 * associativity, functions, comparisons and logic, names through a lookup, and every error with
 * its column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/util.h"

#include "unit.h"

/* The names the lookup callback knows. */
static const struct {
    const char *name; /* as written in expressions */
    int64_t value;    /* its value */
} variables[] = {
    {"BLOCK", 256}, {"VEC", 4}, {"N", 1000}, {"_x1", 7}, {"R", 33},
};

static int lookup(void *user, const char *name, size_t len, int64_t *value)
{
    int *calls = user;
    if (calls)
        (*calls)++;
    for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
        if (strlen(variables[i].name) == len && !strncmp(variables[i].name, name, len)) {
            *value = variables[i].value;
            return 0;
        }
    return 1;
}

/* An expression and the value it must have. */
struct value_case {
    const char *expr; /* the expression */
    int64_t want;     /* its value */
};

static void check_values(const struct value_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = -123456789;
        char msg[256] = "";
        int err = temper_expr_eval(cases[i].expr, lookup, NULL, &v, msg, sizeof(msg));
        if (err)
            fail_msg("'%s': failed with %d: %s", cases[i].expr, err, msg);
        if (v != cases[i].want)
            fail_msg("'%s' = %lld, want %lld", cases[i].expr, (long long)v, (long long)cases[i].want);
    }
}

static void test_precedence_and_associativity(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"2+3*4", 14},        {"(2+3)*4", 20},       {"10-4-3", 3},      {"7/2", 3},
        {"-7/2", -3},         {"7%3", 1},            {"-7%3", -1},       {"7%-3", 1},
        {"100/10/5", 2},      {"2*3+4*5", 26},       {"1+2*3-4/2", 5},   {"2-3", -1},
        {"--5", 5},           {"- 3 * 2", -6},       {"+4", 4},          {"-(2+3)", -5},
        {"  ( 1 + 2 )  * 3  ", 9}, {"((((7))))", 7}, {"0", 0},           {"2*-3", -6},
        {"1000000000 * 1000000000", 1000000000000000000LL},
        {"17 % 5 * 3", 6},    {"2 * 17 % 5", 4},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_functions(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"min(3, 5)", 3},           {"max(3,5)", 5},         {"min(-2,1)", -2},
        {"max(min(4,9), 2)", 4},    {"ceil_div(10,3)", 4},   {"ceil_div(9,3)", 3},
        {"ceil_div(0,5)", 0},       {"ceil_div(1,5)", 1},    {"ceil_div(N, BLOCK)", 4},
        {"ceil_div(-7, 2)", -3},    {"ceil_div(1024, 256)", 4}, {"min (1, 2)", 1},
        {"2 * max(1, 3) + 1", 7},   {"ceil_div(2+8, 1+2)", 4}, {"max(ceil_div(N, 3), min(R, 9))", 334},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_comparisons_and_logic(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"3 < 4", 1},
        {"4 < 4", 0},
        {"4 <= 4", 1},
        {"5 >= 6", 0},
        {"5 > 4", 1},
        {"3 == 3", 1},
        {"3 != 3", 0},
        {"1 < 2 == 1", 1},       /* comparisons bind tighter than equality */
        {"2 + 3 < 6", 1},        /* arithmetic binds tighter than comparisons: 5 < 6 */
        {"BLOCK*VEC <= 4096", 1}, /* 1024 */
        {"BLOCK*VEC*8 <= 4096", 0},
        {"1 && 0", 0},
        {"1 || 0", 1},
        {"0 || 0", 0},
        {"1 || 0 && 0", 1},      /* && binds tighter than || */
        {"0 && 1 || 1", 1},
        {"!0", 1},
        {"!5", 0},
        {"!!7", 1},
        {"!(BLOCK > 512)", 1},
        {"BLOCK % 32 == 0 && VEC <= 8", 1},
        {"3 && 4", 1},
        {"-1 < 0", 1},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_variables_through_lookup(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"N", 1000}, {"N - BLOCK*VEC", -24}, {"_x1 * 2", 14}, {"R*R", 1089}, {"ceil_div(R, VEC)", 9},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]));

    /* The callback is asked once per name occurrence and gets the user pointer. */
    int calls = 0;
    int64_t v = 0;
    assert_int_equal(temper_expr_eval("BLOCK + VEC + BLOCK", lookup, &calls, &v, NULL, 0), 0);
    assert_int_equal(v, 516);
    assert_int_equal(calls, 3);

    /* Without a lookup every name is unknown. */
    char msg[256] = "";
    assert_int_equal(temper_expr_eval("N + 1", NULL, NULL, &v, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "unknown name 'N'");
}

/* An expression that must fail, and what its message must say. */
struct error_case {
    const char *expr;   /* the expression */
    const char *column; /* "column N" for where the error is */
    const char *reason; /* a part of the message saying what is wrong */
};

static void test_errors(void **state)
{
    (void)state;
    static const struct error_case cases[] = {
        {"1/0", "column 4", "division by zero"},
        {"7 % (2-2)", "column 10", "division by zero"},
        {"N / (VEC - 4)", "column 14", "division by zero"},
        {"ceil_div(5, 0)", "column 15", "ceil_div by zero"},
        {"BLOCK * FOO", "column 9", "unknown name 'FOO'"},
        {"pow(2, 3)", "column 1", "unknown function"},
        {"1 + sqrt(4)", "column 5", "unknown function"},
        {"(1+2", "column 5", "expected ')'"},
        {"((1)", "column 5", "expected ')'"},
        {"1+2)", "column 4", "unexpected text after the expression"},
        {"2 3", "column 3", "unexpected text after the expression"},
        {"", "column 1", "unexpected end of expression"},
        {"   ", "column 4", "unexpected end of expression"},
        {"1 +", "column 4", "unexpected end of expression"},
        {"1.5", "column 2", "not an integer"},
        {"12abc", "column 3", "not an integer"},
        {"min(1)", "column 6", "expected ','"},
        {"min(1, 2", "column 9", "expected ')' after a function's arguments"},
        {"* 3", "column 1", "expected a number, a name or '('"},
        {"99999999999999999999", "column 19", "number too large"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = 0;
        char msg[256] = "";
        int err = temper_expr_eval(cases[i].expr, lookup, NULL, &v, msg, sizeof(msg));
        if (err != TEMPER_EPARSE)
            fail_msg("'%s': returned %d (value %lld), want TEMPER_EPARSE", cases[i].expr, err, (long long)v);
        assert_contains(msg, cases[i].column);
        assert_contains(msg, cases[i].reason);
        /* The message quotes the expression so the column can be read against it. */
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "'%s'", cases[i].expr);
        assert_contains(msg, quoted);
    }
}

static void test_error_without_message_buffer(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(temper_expr_eval("1/0", NULL, NULL, &v, NULL, 0), TEMPER_EPARSE);
    char tiny[8];
    memset(tiny, 'x', sizeof(tiny));
    assert_int_equal(temper_expr_eval("1/0", NULL, NULL, &v, tiny, sizeof(tiny)), TEMPER_EPARSE);
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
}

/* ---- known bugs: each checks the correct behaviour (see CMakeLists.txt) ---- */

/* ceil_div rounds toward +infinity for every sign; with a negative divisor it gives one less. */
static void bug_ceil_div_negative_divisor(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"ceil_div(10, -3)", -3}, /* ceil(-3.33) */
        {"ceil_div(-7, -2)", 4},  /* ceil(3.5) */
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]));
}

/* INT64_MIN / -1 overflows; from a candidate's require line it must be an error, not SIGFPE. */
static void bug_division_overflow_crashes(void **state)
{
    (void)state;
    static const char *const exprs[] = {"(-4611686018427387904*2) / -1", "(-4611686018427387904*2) % -1"};
    for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
        int64_t v = 0;
        char msg[256] = "";
        int err = temper_expr_eval(exprs[i], NULL, NULL, &v, msg, sizeof(msg));
        if (err == 0)
            fail_msg("'%s' = %lld, want an overflow error", exprs[i], (long long)v);
        assert_true(msg[0] != 0);
    }
}

/* Signed overflow is undefined behaviour; it must be reported, not wrap to a wrong size. */
static void bug_multiplication_overflow_wraps(void **state)
{
    (void)state;
    static const char *const exprs[] = {"3037000500 * 3037000500", "4611686018427387904 + 4611686018427387904"};
    for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
        int64_t v = 0;
        char msg[256] = "";
        int err = temper_expr_eval(exprs[i], NULL, NULL, &v, msg, sizeof(msg));
        if (err == 0)
            fail_msg("'%s' = %lld, want an overflow error", exprs[i], (long long)v);
    }
}

/* -INT64_MIN is not representable: an error, and no undefined negation on the way (found by
 * fuzz_expr; the sanitizer build catches the negation). */
static void bug_negate_int64_min(void **state)
{
    (void)state;
    static const char *const exprs[] = {"-(-9223372036854775807 - 1)", "--(-9223372036854775807 - 1) + 0"};
    for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
        int64_t v = 0;
        char msg[256] = "";
        int err = temper_expr_eval(exprs[i], NULL, NULL, &v, msg, sizeof(msg));
        if (err != TEMPER_EPARSE)
            fail_msg("'%s': returned %d (value %lld), want an overflow error", exprs[i], err, (long long)v);
        assert_contains(msg, "integer overflow");
    }
}

/* Nesting is bounded: a long require line of parentheses or minus signs is an error, not a stack
 * overflow (found by fuzz_expr); nesting as deep as real expressions get still evaluates. */
static void bug_deep_nesting_overflows_stack(void **state)
{
    (void)state;
    const size_t deep = 200000;
    char *expr = malloc(2 * deep + 2);
    assert_non_null(expr);
    static const char *const opens[] = {"(", "-", "!"};
    for (size_t k = 0; k < sizeof(opens) / sizeof(opens[0]); k++) {
        memset(expr, opens[k][0], deep);
        expr[deep] = '1';
        memset(expr + deep + 1, k == 0 ? ')' : ' ', deep);
        expr[2 * deep + 1] = 0;
        int64_t v = 0;
        char msg[256] = "";
        int err = temper_expr_eval(expr, NULL, NULL, &v, msg, sizeof(msg));
        if (err != TEMPER_EPARSE)
            fail_msg("%zu nested '%s': returned %d, want an error", deep, opens[k], err);
        assert_contains(msg, "nested more than");
    }
    /* 150 levels of each still evaluate */
    const size_t fine = 150;
    for (size_t k = 0; k < sizeof(opens) / sizeof(opens[0]); k++) {
        memset(expr, opens[k][0], fine);
        expr[fine] = '5';
        memset(expr + fine + 1, k == 0 ? ')' : ' ', fine);
        expr[2 * fine + 1] = 0;
        int64_t v = 0;
        char msg[256] = "";
        if (temper_expr_eval(expr, NULL, NULL, &v, msg, sizeof(msg)))
            fail_msg("%zu nested '%s': %s", fine, opens[k], msg);
        assert_int_equal(v, k == 2 ? 5 != 0 : 5); /* an even number of '-'; '!!' gives 1 */
    }
    free(expr);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence_and_associativity),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_comparisons_and_logic),
        cmocka_unit_test(test_variables_through_lookup),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_without_message_buffer),
    };
    const struct CMUnitTest known_bugs[] = {
        cmocka_unit_test(bug_ceil_div_negative_divisor),
        cmocka_unit_test(bug_division_overflow_crashes),
        cmocka_unit_test(bug_multiplication_overflow_wraps),
        cmocka_unit_test(bug_negate_int64_min),
        cmocka_unit_test(bug_deep_nesting_overflows_stack),
    };
    if (argc == 3 && !strcmp(argv[1], "--known-bug"))
        return unit_run_known_bug("expr known bugs", known_bugs, sizeof(known_bugs) / sizeof(known_bugs[0]),
                                  argv[2]);
    return cmocka_run_group_tests_name("expr", tests, NULL, NULL);
}
