/* test_option.c: unit tests of option.h: numeric command-line options in and out of range,
 * overflow, signs, hexadecimal, junk, NaN and infinity; every message names the option. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "temper/error.h"
#include "util/option.h"

#include "unit.h"

static void test_i64(void **state)
{
    (void)state;
    /* Table: text and range -> result, value, and a part of the message. */
    static const struct {
        const char *text;  /* as typed */
        int64_t min, max;  /* the range */
        int err;           /* result */
        int64_t want;      /* the value when it succeeds */
        const char *reason; /* part of the message when it fails */
    } cases[] = {
        {"1", 1, 100, 0, 1, NULL},
        {"100", 1, 100, 0, 100, NULL},
        {"+7", 1, 100, 0, 7, NULL},
        {"0x10", 0, 100, 0, 16, NULL},
        {"0XfF", 0, 1000, 0, 255, NULL},
        {"-5", -10, 10, 0, -5, NULL},
        {"007", 0, 10, 0, 7, NULL}, /* decimal, not octal */
        {"9223372036854775807", 0, INT64_MAX, 0, INT64_MAX, NULL},
        {"-9223372036854775808", INT64_MIN, 0, 0, INT64_MIN, NULL},
        {"0", 1, 100, TEMPER_ERANGE, 0, "--opt: 0 is out of range: it must be between 1 and 100"},
        {"-1", 1, 100, TEMPER_ERANGE, 0, "--opt: -1 is out of range"},
        {"101", 1, 100, TEMPER_ERANGE, 0, "between 1 and 100"},
        {"99999999999", 1, 1000000, TEMPER_ERANGE, 0, "--opt: 99999999999 is out of range"},
        {"9223372036854775808", 0, INT64_MAX, TEMPER_ERANGE, 0, "does not fit in 64 bits"},
        {"-9223372036854775809", INT64_MIN, 0, TEMPER_ERANGE, 0, "does not fit in 64 bits"},
        {"18446744073709551617", 0, INT64_MAX, TEMPER_ERANGE, 0, "does not fit in 64 bits"},
        {"0xffffffffffffffff", 0, INT64_MAX, TEMPER_ERANGE, 0, "does not fit in 64 bits"},
        {"", 0, 10, TEMPER_EINVALID, 0, "--opt: '' is not an integer"},
        {"-", 0, 10, TEMPER_EINVALID, 0, "is not an integer"},
        {"0x", 0, 10, TEMPER_EINVALID, 0, "is not an integer"},
        {"1.5", 0, 10, TEMPER_EINVALID, 0, "'1.5' is not an integer"},
        {"1e3", 0, 10000, TEMPER_EINVALID, 0, "is not an integer"},
        {" 5", 0, 10, TEMPER_EINVALID, 0, "is not an integer"},
        {"5 ", 0, 10, TEMPER_EINVALID, 0, "is not an integer"},
        {"12abc", 0, 100, TEMPER_EINVALID, 0, "'12abc' is not an integer"},
        {"--5", -10, 10, TEMPER_EINVALID, 0, "is not an integer"},
        {"0x1g", 0, 100, TEMPER_EINVALID, 0, "is not an integer"},
        {"\xe9t\xe9", 0, 10, TEMPER_EINVALID, 0, "'\\xe9t\\xe9' is not an integer"}, /* bytes shown escaped */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = 12345;
        char msg[256] = "";
        int err = temper_parse_i64_option("--opt", cases[i].text, cases[i].min, cases[i].max, &v, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu '%s': returned %d, want %d (%s)", i, cases[i].text, err, cases[i].err, msg);
        if (err) {
            assert_contains(msg, cases[i].reason);
            assert_true(!strncmp(msg, "--opt: ", 7));
            assert_true(v == 12345); /* left alone */
        } else if (v != cases[i].want) {
            fail_msg("case %zu '%s': %lld, want %lld", i, cases[i].text, (long long)v, (long long)cases[i].want);
        }
    }

    /* The int variant: the range is an int's. */
    int n = 0;
    char msg[256] = "";
    assert_int_equal(temper_parse_int_option("--budget", "40", 1, 1000000, &n, msg, sizeof(msg)), 0);
    assert_int_equal(n, 40);
    assert_int_equal(temper_parse_int_option("--budget", "4294967297", 1, 1000000, &n, msg, sizeof(msg)),
                     TEMPER_ERANGE);
    assert_contains(msg, "--budget: 4294967297 is out of range");
    assert_int_equal(n, 40);
    /* A message buffer may be absent. */
    assert_int_equal(temper_parse_int_option("--x", "nope", 0, 1, &n, NULL, 0), TEMPER_EINVALID);
}

static void test_double(void **state)
{
    (void)state;
    static const struct {
        const char *text;   /* as typed */
        double min, max;    /* the range */
        int err;            /* result */
        double want;        /* the value when it succeeds */
        const char *reason; /* part of the message when it fails */
    } cases[] = {
        {"0.5", 0.01, 3600, 0, 0.5, NULL},
        {"2", 0.01, 3600, 0, 2, NULL},
        {".25", 0.01, 3600, 0, 0.25, NULL},
        {"1e-2", 0.01, 3600, 0, 0.01, NULL},
        {"3600", 0.01, 3600, 0, 3600, NULL},
        {"+1.5", 0, 10, 0, 1.5, NULL},
        {"0", 0.01, 3600, TEMPER_ERANGE, 0, "--opt: 0 is out of range: it must be between 0.01 and 3600"},
        {"-5", 0.01, 3600, TEMPER_ERANGE, 0, "--opt: -5 is out of range"},
        {"3600.5", 0.01, 3600, TEMPER_ERANGE, 0, "is out of range"},
        {"1e400", 0, 1e9, TEMPER_ERANGE, 0, "is out of range"},
        {"nan", 0, 10, TEMPER_EINVALID, 0, "--opt: 'nan' is not a number"},
        {"inf", 0, 10, TEMPER_EINVALID, 0, "'inf' is not a number"},
        {"-infinity", -10, 10, TEMPER_EINVALID, 0, "is not a number"},
        {"0x10", 0, 100, TEMPER_EINVALID, 0, "is not a number"},
        {"", 0, 10, TEMPER_EINVALID, 0, "'' is not a number"},
        {".", 0, 10, TEMPER_EINVALID, 0, "is not a number"},
        {"e5", 0, 10, TEMPER_EINVALID, 0, "is not a number"},
        {" 1", 0, 10, TEMPER_EINVALID, 0, "is not a number"},
        {"1 ", 0, 10, TEMPER_EINVALID, 0, "is not a number"},
        {"2s", 0, 10, TEMPER_EINVALID, 0, "'2s' is not a number"},
        {"1,5", 0, 10, TEMPER_EINVALID, 0, "is not a number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double v = 123.0;
        char msg[256] = "";
        int err = temper_parse_double_option("--opt", cases[i].text, cases[i].min, cases[i].max, &v, msg,
                                             sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu '%s': returned %d, want %d (%s)", i, cases[i].text, err, cases[i].err, msg);
        if (err) {
            assert_contains(msg, cases[i].reason);
            assert_true(v == 123.0);
        } else if (v != cases[i].want) {
            fail_msg("case %zu '%s': %g, want %g", i, cases[i].text, v, cases[i].want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_double),
    };
    return cmocka_run_group_tests_name("option", tests, NULL, NULL);
}
