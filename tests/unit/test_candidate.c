/* test_candidate.c: unit tests of kernel.h: parsing @temper directives into every field, knobs,
 * requires, compiler options, launch expressions, malformed candidates (each error names
 * path:line), and the content-addressed build cache in a temporary TEMPER_CACHE. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "temper/kernel.h"

#include "unit.h"

/* The candidate most tests use; line numbers matter. */
static const char good_source[] =
    "// A test candidate: two launches over a scratch buffer.\n"                                        /* 1 */
    "// @temper task softmax\n"                                                                         /* 2 */
    "// @temper param BLOCK 256 128 512\n"                                                              /* 3 */
    "//   @temper   param VEC 4 1 2\n"                                                                  /* 4 */
    "// @temper require BLOCK * VEC <= 4096\n"                                                          /* 5 */
    "// @temper launch partial grid(ceil_div(C, BLOCK), R) block(BLOCK) smem(BLOCK*4) args(tmp, x, R, C)\n" /* 6 */
    "/* @temper launch finish grid(R) block(BLOCK, 1) */\n"                                             /* 7 */
    " * @temper scratch tmp f32 R * ceil_div(C, BLOCK)\n"                                               /* 8 */
    "// @temper flags -cl-fast-relaxed-math\n"                                                          /* 9 */
    "// @temper flags -DWIDTH=$VEC\n"                                                                   /* 10 */
    "int not_a_directive; // @temper task other\n"                                                      /* 11 */
    "// @temperature is not a directive\n"                                                              /* 12 */
    "__kernel void partial(__global float *tmp, __global const float *x, int R, int C) {}\n"            /* 13 */
    "__kernel void finish(__global float *y, __global const float *tmp, int R, int C) {}\n";            /* 14 */

static void parse_good(struct temper_candidate *c)
{
    char msg[512] = "";
    int err = temper_candidate_parse("dir/good.cl", good_source, strlen(good_source), c, msg, sizeof(msg));
    if (err)
        fail_msg("parse failed with %d: %s", err, msg);
}

static void test_parse_every_field(void **state)
{
    (void)state;
    struct temper_candidate c;
    parse_good(&c);
    assert_string_equal(c.path, "dir/good.cl");
    assert_int_equal(c.lang, TEMPER_LANG_OPENCL);
    assert_int_equal(c.source_len, strlen(good_source));
    assert_string_equal(c.source, good_source);
    assert_true(c.source != good_source);
    assert_true(c.source_hash == temper_hash64(good_source, strlen(good_source), 0));
    assert_string_equal(c.task, "softmax");

    assert_int_equal(c.nparams, 2);
    assert_string_equal(c.params[0].name, "BLOCK");
    assert_int_equal(c.params[0].nvalues, 3);
    assert_string_equal(c.params[0].values[0], "256");
    assert_string_equal(c.params[0].values[1], "128");
    assert_string_equal(c.params[0].values[2], "512");
    assert_int_equal(c.params[0].line, 3);
    assert_string_equal(c.params[1].name, "VEC");
    assert_int_equal(c.params[1].nvalues, 3);
    assert_string_equal(c.params[1].values[0], "4");
    assert_string_equal(c.params[1].values[1], "1");
    assert_string_equal(c.params[1].values[2], "2");
    assert_int_equal(c.params[1].line, 4);

    assert_int_equal(c.nrequires, 1);
    assert_string_equal(c.requires[0], "BLOCK * VEC <= 4096");
    assert_int_equal(c.require_lines[0], 5);

    assert_int_equal(c.nlaunches, 2);
    const struct temper_launch *l = &c.launches[0];
    assert_string_equal(l->kernel, "partial");
    assert_int_equal(l->grid_n, 2);
    assert_string_equal(l->grid[0], "ceil_div(C, BLOCK)");
    assert_string_equal(l->grid[1], "R");
    assert_int_equal(l->block_n, 1);
    assert_string_equal(l->block[0], "BLOCK");
    assert_string_equal(l->smem, "BLOCK*4");
    assert_int_equal(l->nargs, 4);
    assert_string_equal(l->args[0], "tmp");
    assert_string_equal(l->args[1], "x");
    assert_string_equal(l->args[2], "R");
    assert_string_equal(l->args[3], "C");
    assert_int_equal(l->line, 6);
    l = &c.launches[1];
    assert_string_equal(l->kernel, "finish");
    assert_int_equal(l->grid_n, 1);
    assert_string_equal(l->grid[0], "R");
    assert_int_equal(l->block_n, 2);
    assert_string_equal(l->block[0], "BLOCK");
    assert_string_equal(l->block[1], "1");
    assert_string_equal(l->smem, "");
    assert_int_equal(l->nargs, -1); /* no args(...): the task's argument order */
    assert_int_equal(l->line, 7);

    assert_int_equal(c.nscratch, 1);
    assert_string_equal(c.scratch[0].name, "tmp");
    assert_int_equal(c.scratch[0].dtype, TEMPER_DTYPE_F32);
    assert_string_equal(c.scratch[0].count, "R * ceil_div(C, BLOCK)");
    assert_int_equal(c.scratch[0].line, 8);

    assert_string_equal(c.flags, "-cl-fast-relaxed-math -DWIDTH=$VEC");
    temper_candidate_free(&c);
    assert_null(c.source);
}

/* Small sources and one thing each must parse to. */
static void test_parse_variants(void **state)
{
    (void)state;
    struct temper_candidate c;
    char msg[512] = "";

    /* CUDA from the extension; CRLF line ends; args() empty means no arguments; 3-D grid. */
    const char *cu = "// @temper task vector_add\r\n"
                     "// @temper launch add grid(ceil_div(N, 256), 1, 1) block(256) args()\r\n";
    assert_int_equal(temper_candidate_parse("k.cu", cu, strlen(cu), &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.lang, TEMPER_LANG_CUDA);
    assert_string_equal(c.task, "vector_add");
    assert_int_equal(c.launches[0].grid_n, 3);
    assert_string_equal(c.launches[0].grid[0], "ceil_div(N, 256)");
    assert_string_equal(c.launches[0].grid[2], "1");
    assert_int_equal(c.launches[0].nargs, 0);
    assert_int_equal(c.nparams, 0);
    assert_string_equal(c.flags, "");
    temper_candidate_free(&c);

    /* Directives inside a block comment, with and without the leading star, and one line whose
     * directive closes the comment; tabs separate words. */
    const char *block = "/*\n"
                        " * @temper task\tsgemm\n"
                        "   @temper param TILE 16 32\n"
                        " * @temper launch mm grid(N, M) block(TILE, TILE) */\n";
    assert_int_equal(temper_candidate_parse("mm.cu", block, strlen(block), &c, msg, sizeof(msg)), 0);
    assert_string_equal(c.task, "sgemm");
    assert_int_equal(c.nparams, 0); /* line 3 is not a comment line: ignored */
    assert_int_equal(c.launches[0].line, 4);
    assert_string_equal(c.launches[0].block[1], "TILE");
    temper_candidate_free(&c);
}

static void test_knobs(void **state)
{
    (void)state;
    struct temper_candidate c;
    parse_good(&c);
    struct temper_knobs k;
    temper_knobs_default(&c, &k);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.names[0], "BLOCK");
    assert_string_equal(k.values[0], "256");
    assert_string_equal(k.names[1], "VEC");
    assert_string_equal(k.values[1], "4");

    /* Table: an assignment -> its result, its message, and the knob values afterwards. */
    static const struct {
        const char *assignment; /* NAME=VALUE */
        int err;                /* result */
        const char *reason;     /* part of the message when it fails */
        const char *block, *vec; /* the values afterwards */
    } cases[] = {
        {"BLOCK=128", 0, NULL, "128", "4"},
        {"BLOCK=1024", 0, NULL, "1024", "4"}, /* an integer knob takes any integer */
        {"VEC=2", 0, NULL, "1024", "2"},
        {"VEC=-8", 0, NULL, "1024", "-8"},
        {"VEC=abc", TEMPER_EINVALID, "'abc' is not one of VEC's values (4 1 2, line 4) nor an integer", "1024", "-8"},
        {"VEC=4.5", TEMPER_EINVALID, "is not one of VEC's values", "1024", "-8"},
        {"VEC=", TEMPER_EINVALID, "is not one of VEC's values", "1024", "-8"},
        {"NOPE=1", TEMPER_EINVALID, "no param 'NOPE'", "1024", "-8"},
        {"BLOC=1", TEMPER_EINVALID, "no param 'BLOC'", "1024", "-8"},
        {"BLOCK", TEMPER_EINVALID, "expected NAME=VALUE", "1024", "-8"},
        {"=5", TEMPER_EINVALID, "expected NAME=VALUE", "1024", "-8"},
        {"BLOCK=256", 0, NULL, "256", "-8"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        int err = temper_knobs_set(&c, &k, cases[i].assignment, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("set %s: returned %d, want %d (%s)", cases[i].assignment, err, cases[i].err, msg);
        if (cases[i].reason)
            assert_contains(msg, cases[i].reason);
        assert_string_equal(k.values[0], cases[i].block);
        assert_string_equal(k.values[1], cases[i].vec);
        assert_int_equal(k.n, 2);
    }

    int64_t v = 0;
    assert_int_equal(temper_knobs_int(&k, "BLOCK", 5, &v), 0);
    assert_int_equal(v, 256);
    assert_int_equal(temper_knobs_int(&k, "VECTOR", 3, &v), 0); /* a name given by length */
    assert_int_equal(v, -8);
    assert_true(temper_knobs_int(&k, "BLOCKS", 6, &v) != 0);
    temper_candidate_free(&c);

    /* A knob whose values are not integers takes only its listed values. */
    const char *src = "// @temper task t\n"
                      "// @temper param MODE fast precise\n"
                      "// @temper launch k grid(1) block(1)\n";
    char msg[512] = "";
    assert_int_equal(temper_candidate_parse("m.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    temper_knobs_default(&c, &k);
    assert_string_equal(k.values[0], "fast");
    assert_int_equal(temper_knobs_set(&c, &k, "MODE=precise", msg, sizeof(msg)), 0);
    assert_string_equal(k.values[0], "precise");
    assert_int_equal(temper_knobs_set(&c, &k, "MODE=1", msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "'1' is not one of MODE's values (fast precise, line 2)");
    assert_string_equal(k.values[0], "precise");
    assert_true(temper_knobs_int(&k, "MODE", 4, &v) != 0);
    temper_candidate_free(&c);
}

static void test_check_requires(void **state)
{
    (void)state;
    struct temper_candidate c;
    parse_good(&c);
    struct temper_knobs k;
    temper_knobs_default(&c, &k);

    /* Table: knob settings -> whether the require holds. */
    static const struct {
        const char *block, *vec; /* settings */
        int err;                 /* result of the check */
    } cases[] = {
        {"BLOCK=256", "VEC=4", 0},              /* 1024 */
        {"BLOCK=1024", "VEC=4", 0},             /* 4096: the boundary holds */
        {"BLOCK=1025", "VEC=4", TEMPER_EINVALID}, /* 4100 */
        {"BLOCK=2048", "VEC=4", TEMPER_EINVALID},
        {"BLOCK=512", "VEC=2", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        assert_int_equal(temper_knobs_set(&c, &k, cases[i].block, msg, sizeof(msg)), 0);
        assert_int_equal(temper_knobs_set(&c, &k, cases[i].vec, msg, sizeof(msg)), 0);
        int err = temper_candidate_check(&c, &k, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("%s %s: check returned %d, want %d (%s)", cases[i].block, cases[i].vec, err, cases[i].err,
                     msg);
        if (err) {
            assert_contains(msg, "dir/good.cl:5");
            assert_contains(msg, "BLOCK * VEC <= 4096");
        }
    }
    temper_candidate_free(&c);

    /* A require that cannot be evaluated names its line too; the second require fails here. */
    const char *src = "// @temper task t\n"
                      "// @temper param A 3\n"
                      "// @temper require A > 1\n"
                      "// @temper require A % 2 == 0 || B\n"
                      "// @temper launch k grid(1) block(1)\n";
    char msg[512] = "";
    assert_int_equal(temper_candidate_parse("r.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    temper_knobs_default(&c, &k);
    assert_int_equal(temper_candidate_check(&c, &k, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "r.cl:4");
    assert_contains(msg, "unknown name 'B'");
    /* Every name must resolve, even where || would not need its right side. */
    assert_int_equal(temper_knobs_set(&c, &k, "A=4", msg, sizeof(msg)), 0);
    assert_int_equal(temper_candidate_check(&c, &k, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "r.cl:4");
    assert_int_equal(temper_knobs_set(&c, &k, "A=0", msg, sizeof(msg)), 0);
    assert_int_equal(temper_candidate_check(&c, &k, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "r.cl:3");
    temper_candidate_free(&c);
}

static void test_options(void **state)
{
    (void)state;
    struct temper_candidate c;
    parse_good(&c);
    struct temper_knobs k;
    temper_knobs_default(&c, &k);
    char out[256], msg[512];
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), 0);
    assert_string_equal(out, "-DBLOCK=256 -DVEC=4 -cl-fast-relaxed-math -DWIDTH=4");
    assert_int_equal(temper_knobs_set(&c, &k, "VEC=2", msg, sizeof(msg)), 0);
    assert_int_equal(temper_knobs_set(&c, &k, "BLOCK=128", msg, sizeof(msg)), 0);
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), 0);
    assert_string_equal(out, "-DBLOCK=128 -DVEC=2 -cl-fast-relaxed-math -DWIDTH=2");

    /* Exactly the length fits; one byte less does not, and out is left alone. */
    size_t need = strlen(out) + 1;
    char exact[64];
    assert_int_equal(temper_candidate_options(&c, &k, exact, need, msg, sizeof(msg)), 0);
    assert_string_equal(exact, "-DBLOCK=128 -DVEC=2 -cl-fast-relaxed-math -DWIDTH=2");
    strcpy(exact, "untouched");
    assert_int_equal(temper_candidate_options(&c, &k, exact, need - 1, msg, sizeof(msg)), TEMPER_ERANGE);
    assert_string_equal(exact, "untouched");
    assert_contains(msg, "dir/good.cl");
    temper_candidate_free(&c);

    /* Table: small candidates -> their default options. */
    static const struct {
        const char *directives; /* after the task and launch lines */
        int err;                /* result */
        const char *want;       /* options, or a part of the message */
    } cases[] = {
        {"", 0, ""},
        {"// @temper flags -O3\n", 0, "-O3"},
        {"// @temper param T 8\n", 0, "-DT=8"},
        {"// @temper param T 8\n// @temper flags -DU=$T -DV=$T$T\n", 0, "-DT=8 -DU=8 -DV=88"},
        {"// @temper flags -DX=$NOPE\n", TEMPER_EPARSE, "'$NOPE' is not a param"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char src[512];
        snprintf(src, sizeof(src), "// @temper task t\n// @temper launch k grid(1) block(1)\n%s",
                 cases[i].directives);
        assert_int_equal(temper_candidate_parse("o.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
        temper_knobs_default(&c, &k);
        msg[0] = 0;
        int err = temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d, want %d (%s)", i, err, cases[i].err, msg);
        if (err)
            assert_contains(msg, cases[i].want);
        else
            assert_string_equal(out, cases[i].want);
        temper_candidate_free(&c);
    }

    /* A knob value "none" puts nothing where the flags name it. */
    const char *src = "// @temper task t\n// @temper launch k grid(1) block(1)\n"
                      "// @temper param MATH none -cl-mad-enable\n// @temper flags -O2 $MATH -w\n";
    assert_int_equal(temper_candidate_parse("o.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    temper_knobs_default(&c, &k);
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), 0);
    assert_string_equal(out, "-DMATH=none -O2  -w");
    assert_int_equal(temper_knobs_set(&c, &k, "MATH=-cl-mad-enable", msg, sizeof(msg)), 0);
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), 0);
    assert_string_equal(out, "-DMATH=-cl-mad-enable -O2 -cl-mad-enable -w");
    temper_candidate_free(&c);
}

static void test_launch_eval(void **state)
{
    (void)state;
    struct temper_candidate c;
    parse_good(&c);
    struct temper_knobs k;
    temper_knobs_default(&c, &k);
    struct temper_shape shape = {.n = 2, .names = {"R", "C"}, .values = {7, 1000}};
    static const struct {
        const char *expr; /* over the sizes and knobs */
        int64_t want;     /* its value */
    } cases[] = {
        {"ceil_div(C, BLOCK)", 4}, {"R * ceil_div(C, BLOCK)", 28}, {"BLOCK*4", 1024}, {"VEC + R", 11},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = 0;
        char msg[256] = "";
        assert_int_equal(temper_launch_eval(&shape, &k, cases[i].expr, &v, msg, sizeof(msg)), 0);
        if (v != cases[i].want)
            fail_msg("%s = %lld, want %lld", cases[i].expr, (long long)v, (long long)cases[i].want);
    }
    /* Sizes come before knobs of the same name. */
    struct temper_shape shadow = {.n = 1, .names = {"VEC"}, .values = {100}};
    int64_t v = 0;
    char msg[256] = "";
    assert_int_equal(temper_launch_eval(&shadow, &k, "VEC", &v, msg, sizeof(msg)), 0);
    assert_int_equal(v, 100);
    assert_int_equal(temper_launch_eval(&shape, &k, "N", &v, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "unknown name 'N'");
    assert_int_equal(temper_launch_eval(&shape, NULL, "BLOCK", &v, msg, sizeof(msg)), TEMPER_EPARSE);
    temper_candidate_free(&c);
}

/* A malformed candidate and what its error must say. */
struct bad_case {
    const char *path;   /* its path */
    const char *source; /* its text */
    const char *where;  /* "path:LINE", or "path:" for whole-file errors */
    const char *reason; /* a part of the message */
};

#define TASK_LINE "// @temper task t\n"
#define LAUNCH_LINE "// @temper launch k grid(N) block(64)\n"

static void test_malformed(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"bad.cl", TASK_LINE "// @temper launch k grid(N block(64)\n", "bad.cl:2", "grid( has no closing parenthesis"},
        {"bad.cl", TASK_LINE LAUNCH_LINE "// @temper frobnicate 3\n", "bad.cl:3", "unknown directive '@temper frobnicate'"},
        {"bad.cl", TASK_LINE "// @temper launch k grid(1) block(1) threads(4)\n", "bad.cl:2", "unknown clause 'threads'"},
        {"bad.cl", TASK_LINE "// @temper launch k grid(1)\n", "bad.cl:2", "needs both grid(...) and block(...)"},
        {"bad.cl", TASK_LINE "// @temper launch k block(1)\n", "bad.cl:2", "needs both grid(...) and block(...)"},
        {"bad.cl", "// nothing\n" LAUNCH_LINE, "bad.cl: ", "no '@temper task NAME' directive"},
        {"bad.cl", TASK_LINE "// @temper param A 1\n", "bad.cl: ", "no '@temper launch' directive"},
        {"bad.cl", TASK_LINE "// @temper param A 1\n// @temper param A 2\n" LAUNCH_LINE, "bad.cl:3",
         "declared twice (first on line 2)"},
        {"bad.c", TASK_LINE LAUNCH_LINE, "bad.c: ", "a .cu (CUDA) or .cl (OpenCL) file"},
        {"noext", TASK_LINE LAUNCH_LINE, "noext: ", "a .cu (CUDA) or .cl (OpenCL) file"},
        {"bad.cl", TASK_LINE LAUNCH_LINE "// @temper scratch tmp f128 N\n", "bad.cl:3", "scratch: expected NAME DTYPE COUNT"},
        {"bad.cl", TASK_LINE LAUNCH_LINE "// @temper scratch tmp f32\n", "bad.cl:3", "scratch: expected NAME DTYPE COUNT"},
        {"bad.cl", TASK_LINE "// @temper task u\n" LAUNCH_LINE, "bad.cl:2", "a second task directive"},
        {"bad.cl", "// @temper task t u\n" LAUNCH_LINE, "bad.cl:1", "task: expected one task name"},
        {"bad.cl", TASK_LINE "// @temper launch k grid(1, 2, 3, 4) block(1)\n", "bad.cl:2", "needs 1 to 3 expressions"},
        {"bad.cl", TASK_LINE "// @temper launch k grid() block(1)\n", "bad.cl:2", "needs 1 to 3 expressions"},
        {"bad.cl", TASK_LINE "// @temper launch k grid(1,,2) block(1)\n", "bad.cl:2", "needs 1 to 3 expressions"},
        {"bad.cl", TASK_LINE "// @temper launch grid(1) block(1)\n", "bad.cl:2", "launch: expected a kernel name first"},
        {"bad.cl", TASK_LINE "// @temper launch k grid(1) block(1) smem()\n", "bad.cl:2", "smem(...) needs one expression"},
        {"bad.cl", TASK_LINE "// @temper launch k grid 1 block(1)\n", "bad.cl:2", "expected grid(...), block(...)"},
        {"bad.cl", TASK_LINE "// @temper param A\n" LAUNCH_LINE, "bad.cl:2", "needs at least one value"},
        {"bad.cl", TASK_LINE "// @temper param 9A 1\n" LAUNCH_LINE, "bad.cl:2", "param: expected a name"},
        {"bad.cl", TASK_LINE "// @temper require\n" LAUNCH_LINE, "bad.cl:2", "require: expected one expression"},
        {"bad.cl", "\n\n\n\n" TASK_LINE "// @temper oops\n" LAUNCH_LINE, "bad.cl:6", "unknown directive"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct temper_candidate c;
        char msg[512] = "";
        int err = temper_candidate_parse(cases[i].path, cases[i].source, strlen(cases[i].source), &c, msg,
                                         sizeof(msg));
        if (err != TEMPER_EPARSE)
            fail_msg("case %zu (%s): returned %d, want TEMPER_EPARSE", i, cases[i].reason, err);
        if (strncmp(msg, cases[i].where, strlen(cases[i].where)))
            fail_msg("case %zu: '%s' does not start with '%s'", i, msg, cases[i].where);
        assert_contains(msg, cases[i].reason);
        assert_null(c.source); /* nothing left to free */
    }

    /* A NUL byte: the length, not the terminator, decides. */
    static const char with_nul[] = "// @temper task t\n\0// @temper launch k grid(1) block(1)\n";
    struct temper_candidate c;
    char msg[512] = "";
    assert_int_equal(temper_candidate_parse("nul.cl", with_nul, sizeof(with_nul) - 1, &c, msg, sizeof(msg)),
                     TEMPER_EPARSE);
    assert_contains(msg, "nul.cl: contains a NUL byte");
}

static void test_load_from_file(void **state)
{
    const char *dir = *state;
    char path[4096], msg[512];
    snprintf(path, sizeof(path), "%s/k/good.cl", dir);
    assert_int_equal(temper_write_file_atomic(path, good_source, strlen(good_source), msg, sizeof(msg)), 0);
    struct temper_candidate c;
    assert_int_equal(temper_candidate_load(path, &c, msg, sizeof(msg)), 0);
    assert_string_equal(c.path, path);
    assert_string_equal(c.source, good_source);
    assert_string_equal(c.task, "softmax");
    assert_int_equal(c.nlaunches, 2);
    temper_candidate_free(&c);

    snprintf(path, sizeof(path), "%s/k/missing.cu", dir);
    assert_int_equal(temper_candidate_load(path, &c, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_contains(msg, path);
}

static void test_build_cache(void **state)
{
    const char *dir = *state;
    /* Each part of the key changes it. */
    uint64_t key = temper_build_key("src", 3, "-O3", "nvrtc 13.0", "sm_90");
    /* The key depends on the first len bytes of the source and the strings' contents only. */
    char src_copy[] = "srcXYZ", opt_copy[] = "-O3";
    assert_true(key == temper_build_key(src_copy, 3, opt_copy, "nvrtc 13.0", "sm_90"));
    assert_true(key != temper_build_key("srd", 3, "-O3", "nvrtc 13.0", "sm_90"));
    assert_true(key != temper_build_key("src", 3, "-O2", "nvrtc 13.0", "sm_90"));
    assert_true(key != temper_build_key("src", 3, "-O3", "nvrtc 12.0", "sm_90"));
    assert_true(key != temper_build_key("src", 3, "-O3", "nvrtc 13.0", "sm_80"));
    assert_true(temper_build_key("src", 3, "a", "bc", "t") != temper_build_key("src", 3, "ab", "c", "t"));

    void *data = NULL;
    size_t size = 0;
    assert_int_equal(temper_build_cache_get(key, &data, &size), TEMPER_ENOTFOUND);
    const unsigned char binary[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff};
    assert_int_equal(temper_build_cache_put(key, binary, sizeof(binary)), 0);
    assert_int_equal(temper_build_cache_get(key, &data, &size), 0);
    assert_int_equal(size, sizeof(binary));
    assert_memory_equal(data, binary, sizeof(binary));
    free(data);
    assert_int_equal(temper_build_cache_get(key + 1, &data, &size), TEMPER_ENOTFOUND);

    /* It lives under $TEMPER_CACHE/build/ named by the key. */
    char hex[17], path[4096];
    temper_hash_hex(key, hex);
    snprintf(path, sizeof(path), "%s/cache/build/%.2s/%s.bin", dir, hex, hex + 2);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, sizeof(binary));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_every_field),
        cmocka_unit_test(test_parse_variants),
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_check_requires),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_launch_eval),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test_setup_teardown(test_load_from_file, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_build_cache, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests_name("candidate", tests, NULL, NULL);
}
