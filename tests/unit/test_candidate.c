/* test_candidate.c: unit tests of temper/kernel.h and kernel/kernel_internal.h: parsing @temper
 * directives into every field, knobs, requires, compiler options, launch expressions, malformed
 * candidates (each error names path:line), and the content-addressed build cache in a temporary
 * TEMPER_CACHE. */
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

#include "device/device.h"
#include "kernel/kernel_internal.h"

#include "unit.h"
#include "util/util.h"

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
        {"VEC= 8", TEMPER_EINVALID, "is not one of VEC's values", "1024", "-8"}, /* no space in a -D value */
        {"VEC=\t-8", TEMPER_EINVALID, "is not one of VEC's values", "1024", "-8"},
        {"VEC=8 -I/tmp", TEMPER_EINVALID, "is not one of VEC's values", "1024", "-8"},
        {"VEC=99999999999999999999", TEMPER_EINVALID, "as an integer it does not fit in 64 bits", "1024", "-8"},
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
        {"// @temper flags -DU=$T\n// @temper param T 8\n", 0, "-DT=8 -DU=8"},
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
        {"bad.c", TASK_LINE LAUNCH_LINE, "bad.c: ", "a .cu (CUDA), .cl (OpenCL) or .py (Triton) file"},
        {"noext", TASK_LINE LAUNCH_LINE, "noext: ", "a .cu (CUDA), .cl (OpenCL) or .py (Triton) file"},
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
        /* A flags line naming no param: its own line, not only the file. */
        {"bad.cl", TASK_LINE LAUNCH_LINE "// @temper param T 8\n// @temper flags -O2\n// @temper flags -DX=$NOPE\n",
         "bad.cl:5", "flags: '$NOPE' is not a param"},
        {"bad.cl", TASK_LINE LAUNCH_LINE "// @temper flags -DX=$T\n", "bad.cl:3",
         "flags: '$T' is not a param (the candidate has none)"},
        /* args(...) against the kernel's parameter list, when that list is certain. */
        {"bad.cl", TASK_LINE "// @temper launch k grid(1) block(1) args(y, x)\n"
         "__kernel void k(__global float *y, __global const float *x, int n) {}\n", "bad.cl:2",
         "launch k: args(...) passes 2 arguments but kernel k takes 3 parameters"},
        {"bad.cu", TASK_LINE "// @temper launch k grid(1) block(1) args(y, x, n, n)\n"
         "extern \"C\" __global__ void k(float *y, const float *x, int n) {}\n", "bad.cu:2",
         "launch k: args(...) passes 4 arguments but kernel k takes 3 parameters"},
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
    assert_contains(msg, "nul.cl: contains a NUL byte at byte offset 18 (line 2)");
}

/* Builds "// @temper task t\n" + middle + "// @temper launch k grid(1) block(1)\n" into a malloc'ed
 * string. */
static char *with_directives(const char *middle)
{
    size_t n = strlen(middle) + 128;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "// @temper task t\n%s// @temper launch k grid(1) block(1)\n", middle);
    return s;
}

/* Directive lines of any length: what fits its fields parses, past a field's limit is an error
 * naming the line and the limit; nothing is dropped in silence. */
static void test_long_directives(void **state)
{
    (void)state;
    struct temper_candidate c;
    char msg[512] = "";
    /* A launch line of over 2048 bytes: 24 arguments padded with spaces, and padded clauses. */
    size_t cap = 8192, used = 0;
    char *line = malloc(cap);
    assert_non_null(line);
    used += (size_t)snprintf(line + used, cap - used, "// @temper launch k grid(N)%600s block(64) args(", "");
    for (int i = 0; i < 24; i++)
        used += (size_t)snprintf(line + used, cap - used, "%sarg_%02d%100s", i ? ", " : "", i, "");
    used += (size_t)snprintf(line + used, cap - used, ")\n");
    assert_true(used > 3000);
    char *src = malloc(cap + 64);
    assert_non_null(src);
    snprintf(src, cap + 64, "// @temper task t\n%s", line);
    assert_int_equal(temper_candidate_parse("long.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.nlaunches, 1);
    assert_int_equal(c.launches[0].nargs, 24);
    assert_string_equal(c.launches[0].args[23], "arg_23");
    assert_int_equal(c.launches[0].line, 2);
    temper_candidate_free(&c);

    /* A require of 3000 bytes: once dropped without a word, now an error naming its line. */
    char *req = malloc(4096);
    assert_non_null(req);
    size_t r = (size_t)snprintf(req, 4096, "// @temper param A 1 2\n// @temper require A");
    for (int i = 0; i < 1000; i++)
        r += (size_t)snprintf(req + r, 4096 - r, " +0");
    snprintf(req + r, 4096 - r, " <= 1\n");
    free(src);
    src = with_directives(req);
    assert_int_equal(temper_candidate_parse("req.cl", src, strlen(src), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "req.cl:3: require: the expression is 3006 bytes, over the limit of 255");
    free(src);

    /* A require long in padding only (trailing spaces) still holds. */
    snprintf(req, 4096, "// @temper param A 1 2\n// @temper require A <= 1%3000s\n", "");
    src = with_directives(req);
    assert_int_equal(temper_candidate_parse("pad.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.nrequires, 1);
    assert_string_equal(c.requires[0], "A <= 1");
    temper_candidate_free(&c);
    free(src);

    /* Each field's limit, named. */
    static const struct {
        const char *directive; /* with %s for a long word */
        const char *reason;    /* part of the message */
    } cases[] = {
        {"// @temper param %s 1\n", "param: the name is longer than 63 bytes"},
        {"// @temper param P %s\n", "param P: a value is longer than 63 bytes"},
        {"// @temper scratch %s f32 4\n", "scratch: the name is longer than 63 bytes"},
        {"// @temper launch %s grid(1) block(1)\n", "launch: the kernel name is longer than 127 bytes"},
        {"// @temper launch k grid(%s) block(1)\n", "an expression in grid(...) is longer than 255 bytes"},
        {"// @temper launch k grid(1) block(1) smem(%s)\n", "smem(...) is longer than 255 bytes"},
        {"// @temper launch k grid(1) block(1) args(%s)\n", "args(...)'s entry 1 ('aaaaaaaaaaaaaaaaaaaaaaaa...') is longer than 63 bytes"},
        {"// @temper launch k grid(1) block(1) args(y, f(x, 2), %s)\n", "args(...)'s entry 3 ('aaaaaaaaaaaaaaaaaaaaaaaa...') is longer than 63 bytes"},
        {"// @temper flags -D%s\n", "flags: the flags of all lines together are over the limit of 1022 bytes"},
    };
    char word[1500];
    memset(word, 'a', sizeof(word) - 1);
    word[sizeof(word) - 1] = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char directive[2048];
        snprintf(directive, sizeof(directive), cases[i].directive, word);
        src = with_directives(directive);
        int err = temper_candidate_parse("f.cl", src, strlen(src), &c, msg, sizeof(msg));
        if (err != TEMPER_EPARSE)
            fail_msg("case %zu: returned %d (%s)", i, err, msg);
        assert_contains(msg, "f.cl:2: ");
        assert_contains(msg, cases[i].reason);
        free(src);
    }
    /* The task name too. */
    snprintf(req, 4096, "// @temper task %s\n// @temper launch k grid(1) block(1)\n", word);
    assert_int_equal(temper_candidate_parse("t.cl", req, strlen(req), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "t.cl:1: task: the name is longer than 63 bytes");
    free(req);
    free(line);
}

/* Any byte but NUL in a source; a NUL is refused naming its byte offset; directives are ASCII. */
static void test_bytes(void **state)
{
    (void)state;
    struct temper_candidate c;
    char msg[512] = "";
    /* Latin-1 comments and identifiers' neighbours: parsed, kept byte for byte. */
    static const char latin1[] = "// caf\xe9 cr\xe8me br\xfbl\xe9" "e\n"
                                 "// @temper task t\n"
                                 "int x; /* \xff\xfe\x80 */ // @temper launch k grid(2) block(1)\n"
                                 "// @temper launch k grid(1) block(1)\n"
                                 "__kernel void k(void) { /* \xe9 */ }\n";
    assert_int_equal(temper_candidate_parse("l1.cl", latin1, sizeof(latin1) - 1, &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.source_len, sizeof(latin1) - 1);
    assert_memory_equal(c.source, latin1, sizeof(latin1));
    assert_int_equal(c.nlaunches, 1);
    assert_int_equal(c.launches[0].line, 4);
    temper_candidate_free(&c);

    /* The length decides, not a terminator: a source may be passed without one. */
    char *exact = malloc(sizeof(latin1) - 1);
    assert_non_null(exact);
    memcpy(exact, latin1, sizeof(latin1) - 1);
    assert_int_equal(temper_candidate_parse("l1.cl", exact, sizeof(latin1) - 1, &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.source[c.source_len], 0);
    temper_candidate_free(&c);
    free(exact);

    /* A NUL byte: its offset and line. */
    static const char with_nul[] = "// @temper task t\n// @temper launch k grid(1) block(1)\nint x;\0 int y;\n";
    assert_int_equal(temper_candidate_parse("nul.cl", with_nul, sizeof(with_nul) - 1, &c, msg, sizeof(msg)),
                     TEMPER_EPARSE);
    assert_contains(msg, "nul.cl: contains a NUL byte at byte offset 61 (line 3)");
    assert_null(c.source);

    /* A non-ASCII byte inside a directive is named by line and column. */
    static const char in_directive[] = "// @temper task t\n// @temper param MODE caf\xe9\n"
                                       "// @temper launch k grid(1) block(1)\n";
    assert_int_equal(temper_candidate_parse("d.cl", in_directive, sizeof(in_directive) - 1, &c, msg, sizeof(msg)),
                     TEMPER_EPARSE);
    assert_contains(msg, "d.cl:2: column 26: byte 0xe9 is not allowed in a directive");

    /* Lines end at \n, \r\n or a lone \r, as compilers count them. */
    static const char cr[] = "// x\r// @temper task t\r\n\r// @temper launch k grid(1) block(1)\r";
    assert_int_equal(temper_candidate_parse("cr.cl", cr, sizeof(cr) - 1, &c, msg, sizeof(msg)), 0);
    assert_string_equal(c.task, "t");
    assert_int_equal(c.launches[0].line, 4);
    temper_candidate_free(&c);

    /* Over the size limit. */
    size_t big = TEMPER_SOURCE_MAX + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, ' ', big);
    assert_int_equal(temper_candidate_parse("big.cl", huge, big, &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "big.cl: the source is 1048577 bytes, over the limit of 1048576");
    free(huge);
}

/* The language given by name; the extension only as the default. */
static void test_language(void **state)
{
    (void)state;
    struct temper_candidate c;
    char msg[512] = "";
    const char *src = TASK_LINE LAUNCH_LINE;
    assert_int_equal(temper_lang_parse("cuda"), TEMPER_LANG_CUDA);
    assert_int_equal(temper_lang_parse("opencl"), TEMPER_LANG_OPENCL);
    assert_int_equal(temper_lang_parse("CUDA"), -1);
    assert_int_equal(temper_lang_parse(NULL), -1);
    assert_string_equal(temper_lang_name(TEMPER_LANG_CUDA), "cuda");
    assert_string_equal(temper_lang_name(TEMPER_LANG_OPENCL), "opencl");

    static const struct {
        const char *path, *lang; /* arguments */
        int err;                 /* result */
        int want;                /* the language when it succeeds; else unused */
        const char *reason;      /* part of the message when it fails */
    } cases[] = {
        {"<stdin>", "cuda", 0, TEMPER_LANG_CUDA, NULL},
        {"<stdin>", "opencl", 0, TEMPER_LANG_OPENCL, NULL},
        {"k.cl", "cuda", 0, TEMPER_LANG_CUDA, NULL}, /* named beats the extension */
        {"k.cu", "opencl", 0, TEMPER_LANG_OPENCL, NULL},
        {"k.cu", NULL, 0, TEMPER_LANG_CUDA, NULL},
        {NULL, "opencl", 0, TEMPER_LANG_OPENCL, NULL},
        {"<stdin>", NULL, TEMPER_EPARSE, 0, "<stdin>: a candidate is a .cu (CUDA), .cl (OpenCL) or .py (Triton) "
                                            "file, or its language must be given"},
        {"k.cu", "fortran", TEMPER_EPARSE, 0, "k.cu: unknown language 'fortran' (cuda, opencl or triton)"},
        {"k.cu", "", TEMPER_EPARSE, 0, "k.cu: unknown language '' (cuda, opencl or triton)"},
        {"k.cu", "c\xe9\n", TEMPER_EPARSE, 0, "k.cu: unknown language 'c?\?' (cuda, opencl or triton)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int err = temper_candidate_parse_lang(cases[i].path, cases[i].lang, src, strlen(src), &c, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d, want %d (%s)", i, err, cases[i].err, msg);
        if (err) {
            assert_contains(msg, cases[i].reason);
            continue;
        }
        assert_int_equal(c.lang, cases[i].want);
        assert_string_equal(c.path, cases[i].path ? cases[i].path : "<source>");
        temper_candidate_free(&c);
    }
}

/* A source and whether the include rule takes it. */
struct include_case {
    const char *lang;   /* "cuda" or "opencl" */
    const char *body;   /* after the task and launch lines (lines 1 and 2) */
    int line;           /* the line the message must name; 0: the source is taken */
    const char *reason; /* part of the message */
};

static void test_include_rule(void **state)
{
    (void)state;
    static const struct include_case cases[] = {
        /* The issue's case: a host file inside an array initialiser. */
        {"opencl", "__constant float t[] = {\n#include \"/tmp/x/secret.h\"\n};\n", 4, "#include \"/tmp/x/secret.h\": "
                                                                                      "a candidate may include only"},
        {"opencl", "#include <stdio.h>\n", 3, "(OpenCL: none)"},
        {"opencl", "#include \"cuda_fp16.h\"\n", 3, "only the toolkit's own headers"},
        {"cuda", "#include \"/etc/passwd\"\n", 3, "only the toolkit's own headers (CUDA: cuda_fp16.h, cuda_bf16.h"},
        {"cuda", "#include <../../../../etc/passwd>\n", 3, "only the toolkit's own headers"},
        {"cuda", "#include <cuda/../../../etc/passwd>\n", 3, "only the toolkit's own headers"},
        {"cuda", "#include </usr/local/cuda/include/cuda_fp16.h>\n", 3, "only the toolkit's own headers"},
        {"cuda", "#include < cuda_fp16.h>\n", 3, "only the toolkit's own headers"},
        {"cuda", "   #   include \"x.h\"\n", 3, "#include"},
        {"cuda", "/* a */ # /* b */ include /* c */ \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"cuda", "/* a\n b */ #include \"x.h\"\n", 4, "only the toolkit's own headers"},
        {"cuda", "#inc\\\nlude \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"cuda", "#include \\\n  \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"cuda", "#inc\\   \nlude \"x.h\"\n", 3, "only the toolkit's own headers"}, /* spaces after the \ */
        {"cuda", "#include /* a\n b */ \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"cuda", "%:include \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"opencl", "%: include <x.h>\n", 3, "only the toolkit's own headers"},
        {"opencl", "?\?=include \"x.h\"\n", 3, "the trigraph '?\?=' is not allowed"},
        {"opencl", "// a comment ?\?/\n#include \"x.h\"\n", 3, "the trigraph '?\?/' is not allowed"},
        {"cuda", "#define H \"/etc/passwd\"\n#include H\n", 4, "#include H: the operand must be <name> or \"name\""},
        {"cuda", "#define H(x) #x\n#include H(/etc/passwd)\n", 4, "the operand must be"},
        {"cuda", "#include \"cuda_fp16.h\n", 3, "the operand must be"},
        {"cuda", "#include <cuda_fp16.h> \"/etc/passwd\"\n", 3, "text after the header name"},
        {"cuda", "#include_next <cuda_fp16.h>\n", 3, "#include_next is not allowed"},
        {"cuda", "#import \"x.h\"\n", 3, "#import is not allowed"},
        {"opencl", "__constant char d[] = {\n#embed \"/etc/passwd\"\n};\n", 4, "#embed is not allowed"},
        {"opencl", "#__include_macros \"x.h\"\n", 3, "#__include_macros is not allowed"},
        {"opencl", "#line 10 \"/etc/passwd\"\n", 3, "#line is not allowed"},
        {"opencl", "#line 10\n", 3, "#line is not allowed"},
        {"opencl", "# 10 \"/etc/passwd\"\n", 3, "line markers are not allowed"},
        {"opencl", "#if __has_include(\"/etc/passwd\")\n#endif\n", 3, "__has_include is not allowed"},
        {"cuda", "#if defined(__has_include)\n#endif\n", 3, "__has_include is not allowed"},
        {"cuda", "#if __has_inc\\\nlude(<x>)\n#endif\n", 3, "__has_include is not allowed"},
        {"opencl", "#if __has_embed(\"/etc/passwd\")\n#endif\n", 3, "__has_embed is not allowed"},
        {"opencl", "#if 0\n#include \"x.h\"\n#endif\n", 4, "only the toolkit's own headers"}, /* even dead code */
        {"opencl", "int x; // c\r#include \"x.h\"\n", 4, "only the toolkit's own headers"},  /* a lone \r ends a line */
        {"opencl", "\xc2\xa0#include \"x.h\"\n", 3, "only the toolkit's own headers"},     /* a Unicode space */
        {"opencl", "\f\v#include \"x.h\"\n", 3, "only the toolkit's own headers"},
        {"opencl", "#\\u0069nclude \"x.h\"\n", 3, "a directive name may hold only letters"},
        {"opencl", "#incl\\u0075de \"x.h\"\n", 3, "a directive name may hold only letters"},
        {"opencl", "#includ \"x.h\"\n", 3, "unknown preprocessing directive '#includ'"},
        {"opencl", "int y; /* c */ #includex \"x.h\"\n", 3, "#includex is not allowed"},
        {"opencl", "#frobnicate\n", 3, "unknown preprocessing directive '#frobnicate'"},
        {"opencl", "#pragma GCC dependency \"/etc/passwd\"\n", 3, "a pragma that names files is not allowed"},
        /* A raw string the scan does not follow cannot hide a directive on a later line. */
        {"cuda", "const char *s = R\"x(\" /* )x\";\n#include \"/etc/passwd\"\n// */\n", 4, "only the toolkit's"},
        /* The toolkit's folders: by relative path in angle brackets only, within the folder. */
        {"cuda", "#include \"cub/block/block_reduce.cuh\"\n", 3, "only the toolkit's"},
        {"cuda", "#include <cub/../../../etc/passwd>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cuda/std/.hidden>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cub//block_reduce.cuh>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cub/>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cub>\n", 3, "only the toolkit's"},
        {"cuda", "#include <thrust/reduce.h>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cubx/a.h>\n", 3, "only the toolkit's"},
        {"cuda", "#include </usr/local/cuda/include/cub/cub.cuh>\n", 3, "only the toolkit's"},
        {"opencl", "#include <cub/cub.cuh>\n", 3, "only the toolkit's"},
        {"cuda", "#include <cuda/std/limits>\n#if _CCCL_HAS_INCLUDE(</etc/passwd>)\n#endif\n", 4,
         "_CCCL_HAS_INCLUDE is not allowed"},
        /* Probes built where no word shows them (issue 28): token pasting, digraph pasting, a
         * universal character name, _Pragma and its macros, a pragma carried on by a comment. */
        {"opencl", "#define H(x) __has_##x\n#if H(include)(\"/etc/passwd\")\n#endif\n", 3,
         "token pasting ('##') could build __has_include from identifiers of the source: '__has_' (line 3) + "
         "'include' (line 4)"},
        {"cuda", "#define H(x) __has_##x\n#if H(include)(<x>)\n#endif\n", 3, "could build __has_include"},
        {"cuda", "#define C(a, b) a ## b\n#if C(__ha, s_include)(<x>)\n#endif\n", 3, "could build __has_include"},
        {"opencl", "#define C(a, b) a %:%: b\n#if C(__has, _embed)(\"x\")\n#endif\n", 3,
         "token pasting ('%:%:') could build __has_embed"},
        {"cuda", "#define C(a, b) a##b\n#if C(_CCCL_HAS_, INCLUDE)(<x>)\n#endif\n", 3, "could build _CCCL_HAS_INCLUDE"},
        {"opencl", "#if __h\\u0061s_include(\"/etc/passwd\")\n#endif\n", 3, "__has_include is not allowed"},
        {"opencl", "#if __h\\U00000061s_include(\"x\")\n#endif\n", 3, "__has_include is not allowed"},
        {"opencl", "#if __h\\u{61}s_include(\"x\")\n#endif\n", 3, "__has_include is not allowed"},
        {"opencl", "int \\N{LATIN SMALL LETTER A};\n", 3, "a named character escape"},
        {"opencl", "_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n", 3, "a pragma that names files"},
        {"opencl", "_Pragma(\"clang module import x\")\n", 3, "a pragma that names files"},
        {"opencl", "#define S(x) #x\n_Pragma(S(GCC dependency \"/etc/passwd\"))\n", 4, "_Pragma must be written"},
        {"opencl", "#define P _Pragma\nP(\"GCC dependency \\\"/etc/passwd\\\"\")\n", 3, "_Pragma must be written"},
        {"opencl", "_Pragma(\"GCC dep\\u0065ndency \\\"x\\\"\")\n", 3, "a pragma that names files"},
        {"opencl", "_Pragma(\"GCC dep\\\\u0065ndency \\\"x\\\"\")\n", 3, "no escape but"},
        {"cuda", "#define P(a, b) a##b\nP(_Pra, gma)(\"GCC dependency \\\"x\\\"\")\n", 3, "could build _Pragma"},
        {"cuda", "#include <cuda/std/limits>\n_CCCL_PRAGMA(GCC dependency \"/etc/passwd\")\n", 4,
         "_CCCL_PRAGMA is not allowed"},
        {"cuda", "__pragma(GCC dependency \"/etc/passwd\")\n", 3, "__pragma is not allowed"},
        {"opencl", "#pragma GCC /* a comment\n goes on */ dependency \"/etc/passwd\"\n", 3, "a pragma that names files"},
        {"opencl", "#pragma GCC dep\\u0065ndency \"/etc/passwd\"\n", 3, "nor one holding a backslash"},
        {"opencl", "#pragma clang module import x\n", 3, "a pragma that names files"},
        {"opencl", "#pragma clang __debug module_map x\n", 3, "a pragma that names files"},
        /* Inline assembly in OpenCL C, written or pasted; CUDA's inline PTX is taken (below). */
        {"opencl", "__kernel void k(void) { __asm__(\"syscall\"); }\n", 3, "inline assembly ('__asm__') is not allowed"},
        {"opencl", "__kernel void k(void) { __asm volatile(\"nop\"); }\n", 3, "inline assembly ('__asm')"},
        {"opencl", "__kernel void k(void) {\n asm(\"nop\"); }\n", 4, "inline assembly ('asm')"},
        {"opencl", "__kernel void k(void) { __\\u0061sm__(\"nop\"); }\n", 3, "inline assembly ('__asm__')"},
        {"opencl", "#define A(x, y) x##y\n__kernel void k(void) { A(__as, m__)(\"syscall\"); }\n", 3,
         "could build __asm__ from identifiers of the source: '__as' (line 4) + 'm__' (line 4)"},
        {"opencl", "#define A(x, y) x##y\n#define B(x) A(x, sm)\n__kernel void k(void) { B(__a)(\"nop\"); }\n", 3,
         "could build __asm"},
        /* Taken. */
        {"cuda", "__device__ float t(float x) { float y; asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); "
                 "return y; }\n", 0, NULL},
        {"cuda", "#define UNROLL _Pragma(\"unroll\")\n__device__ void f() { UNROLL for (;;) {} }\n", 0, NULL},
        {"opencl", "_Pragma(\"OPENCL EXTENSION cl_khr_fp16 : enable\")\n", 0, NULL},
        /* Pasting among names that cannot spell a refused word (a, s and m spell plain asm, left to
         * the build, which defines it away). */
        {"opencl", "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\nfloat a, s, m; int LOAD4;\n", 0, NULL},
        {"cuda", "#include <cub/block/block_reduce.cuh>\n#include <cuda/std/limits>\n#include <nv/target>\n"
                 "#include <cooperative_groups/scan.h>\n#include <cuda/std/__cccl/version.h>\n", 0, NULL},
        {"cuda", "#include <cuda_fp16.h>\n#include \"cuda_bf16.h\" // bf16 too\n", 0, NULL},
        {"cuda", "  #  include /* c */ <cooperative_groups.h> /* c */\n", 0, NULL},
        {"opencl", "#define X 1\n#if defined(X) && X > 0\n#pragma unroll 4\n#elif 0\n#else\n#endif\n#undef X\n", 0, NULL},
        {"opencl", "#define STR(x) \\\n    #x\n#define CAT(a, b) a \\\n ## b\n", 0, NULL},
        {"opencl", "// we include nothing; #include lines are refused\n/* @include */ int x;\n", 0, NULL},
        {"opencl", "// caf\xe9: a Latin-1 comment\n__kernel void k(void) { /* \xe9\xe8 */ }\n", 0, NULL},
        {"opencl", "int a = 1 ? 2 : 3; // ? ?\n", 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char src[1024];
        snprintf(src, sizeof(src), TASK_LINE LAUNCH_LINE "%s", cases[i].body);
        struct temper_candidate c;
        char msg[1024] = "";
        int err = temper_candidate_parse_lang("inc.src", cases[i].lang, src, strlen(src), &c, msg, sizeof(msg));
        if (!cases[i].line) {
            if (err)
                fail_msg("case %zu: refused: %s", i, msg);
            temper_candidate_free(&c);
            continue;
        }
        if (err != TEMPER_EPARSE)
            fail_msg("case %zu (%s): returned %d, want TEMPER_EPARSE", i, cases[i].reason, err);
        char where[32];
        snprintf(where, sizeof(where), "inc.src:%d: ", cases[i].line);
        if (strncmp(msg, where, strlen(where)))
            fail_msg("case %zu: '%s' does not start with '%s'", i, msg, where);
        assert_contains(msg, cases[i].reason);
        assert_null(c.source);
    }
    const char *const *h = temper_allowed_headers(TEMPER_LANG_OPENCL);
    assert_null(h[0]);
    assert_string_equal(temper_allowed_headers(TEMPER_LANG_CUDA)[0], "cuda_fp16.h");
    assert_null(temper_allowed_header_folders(TEMPER_LANG_OPENCL)[0]);
    assert_string_equal(temper_allowed_header_folders(TEMPER_LANG_CUDA)[1], "cub/");
}

/* The include scan stays linear in the source's length whatever the source holds: each of these
 * 1 MiB sources would take hours to scan if a comment, a line or a directive were read again
 * from every position that reaches it (the test's time limit catches that). */
static void test_scan_linear(void **state)
{
    (void)state;
    static const struct {
        const char *unit, *tail; /* repeated, then once at the end */
        int err;                 /* the verdict on the whole */
    } cases[] = {
        {"/*\n", "*/                                                              x\n", 0},
        {"/**/", "\n/**/#aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", TEMPER_EPARSE},
        {"*/#pragma x ", "\n", 0},
        {"*/#include <", "\n", TEMPER_EPARSE},
        {"*/#", "\n", 0},
        {" \\\n", "\n", 0},
    };
    char *src = malloc(TEMPER_SOURCE_MAX + 1);
    assert_non_null(src);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = (size_t)snprintf(src, 128, TASK_LINE LAUNCH_LINE), u = strlen(cases[i].unit);
        while (n + u + 200 < TEMPER_SOURCE_MAX) {
            memcpy(src + n, cases[i].unit, u);
            n += u;
        }
        n += (size_t)snprintf(src + n, 200, "%s", cases[i].tail);
        struct temper_candidate c;
        char msg[512] = "";
        int err = temper_candidate_parse("big.cl", src, n, &c, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d (%s)", i, err, msg);
        if (!err)
            temper_candidate_free(&c);
    }
    free(src);
}

/* Compiler options: an allow-list per language; nothing that names a file. */
static void test_option_rule(void **state)
{
    (void)state;
    static const struct {
        const char *lang;    /* "cuda" or "opencl" */
        const char *options; /* as the compiler would get them */
        int ok;              /* 1: taken */
    } cases[] = {
        {"cuda", "-DBLOCK=256 -DMODE=fast --use_fast_math --maxrregcount=64 -Xptxas -dlcm=cg -Xptxas -dscm=cs", 1},
        {"cuda", "--ptxas-options=-v,-dlcm=ca -arch sm_90a -arch=compute_90 --std=c++17 -lineinfo -UFOO", 1},
        {"opencl", "-DX=1 -cl-fast-relaxed-math -cl-mad-enable -cl-std=CL1.2 -w -Werror -O2", 1},
        {"opencl", "", 1},
        {"cuda", "-I/tmp", 0},
        {"cuda", "-I /tmp", 0},
        {"cuda", "--include-path=/tmp", 0},
        {"cuda", "-include /tmp/x/secret.h", 0},
        {"cuda", "--pre-include=/tmp/x/secret.h", 0},
        {"cuda", "--time=/tmp/out.csv", 0},
        {"cuda", "--create-pch=/tmp/p.pch", 0},
        {"cuda", "-Xptxas --options-file=/tmp/o", 0},
        {"cuda", "-Xptxas", 0},
        {"cuda", "-arch /tmp", 0},
        {"cuda", "-DX=\"a b\"", 0},
        {"cuda", "-DX=a\\ -I/tmp", 0},
        {"cuda", "-cl-fast-relaxed-math", 0}, /* OpenCL's, not CUDA's */
        {"opencl", "-I/tmp", 0},
        {"opencl", "-include /tmp/x", 0},
        {"opencl", "-cl-std=CL1.2 -save-temps", 0},
        {"opencl", "--use_fast_math", 0},
        {"opencl", "-cl-x/../y", 0},
        {"opencl", "-D", 0},
        {"opencl", "-D1X", 0},
        {"opencl", "-UX=1", 0},
        {"opencl", "-DX=\xe9", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[512] = "";
        int err = temper_compiler_options_check(temper_lang_parse(cases[i].lang), cases[i].options, msg,
                                                sizeof(msg));
        if (cases[i].ok ? err != 0 : err != TEMPER_EPARSE)
            fail_msg("case %zu '%s': returned %d (%s)", i, cases[i].options, err, msg);
    }

    /* In a candidate: a flags line is checked where it stands; a knob named by the flags when its
     * value is known. */
    struct temper_candidate c;
    struct temper_knobs k;
    char msg[512] = "", out[512];
    const char *src = TASK_LINE LAUNCH_LINE "// @temper flags -cl-mad-enable\n// @temper flags -I/tmp/x\n";
    assert_int_equal(temper_candidate_parse("fl.cl", src, strlen(src), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "fl.cl:4: flags: compiler option '-I/tmp/x' is not allowed for OpenCL");
    src = TASK_LINE LAUNCH_LINE "// @temper param INC -cl-mad-enable -I/tmp/x\n// @temper flags $INC\n";
    assert_int_equal(temper_candidate_parse("fl.cl", src, strlen(src), &c, msg, sizeof(msg)), 0);
    temper_knobs_default(&c, &k);
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), 0);
    assert_string_equal(out, "-DINC=-cl-mad-enable -cl-mad-enable");
    assert_int_equal(temper_knobs_set(&c, &k, "INC=-I/tmp/x", msg, sizeof(msg)), 0);
    assert_int_equal(temper_candidate_options(&c, &k, out, sizeof(out), msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "fl.cl: compiler option '-I/tmp/x' is not allowed");
    temper_candidate_free(&c);
    /* A quote in a knob's value is refused where it is declared. */
    src = TASK_LINE LAUNCH_LINE "// @temper param Q a\"b\n";
    assert_int_equal(temper_candidate_parse("q.cl", src, strlen(src), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "q.cl:3: param Q: a value may not hold '\"'");
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

    /* It lives under $TEMPER_CACHE/build/ named by the key, sealed (the bytes, then a trailer). */
    char hex[17], path[4096];
    temper_hash_hex(key, hex);
    snprintf(path, sizeof(path), "%s/cache/build/%.2s/%s.bin", dir, hex, hex + 2);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > (off_t)sizeof(binary));
    assert_true(temper_build_cache_has(key));

    /* A binary changed on disk, or another entry's copied over it, is a miss: written by
     * something without the key (a worker where nothing confined it), never loaded. */
    const unsigned char wrong[] = {0x7f, 'E', 'L', 'F', 9, 9, 9, 9};
    assert_int_equal(temper_build_cache_put(key + 1, wrong, sizeof(wrong)), 0);
    char other[4096];
    temper_hash_hex(key + 1, hex);
    snprintf(other, sizeof(other), "%s/cache/build/%.2s/%s.bin", dir, hex, hex + 2);
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(temper_build_cache_get(key, &data, &size), TEMPER_ENOTFOUND);
    assert_false(temper_build_cache_has(key));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(wrong, 1, sizeof(wrong), f);
    fclose(f);
    assert_int_equal(temper_build_cache_get(key, &data, &size), TEMPER_ENOTFOUND);

    /* Specialisations stored beside a binary are read back; without them, none. */
    char specs[256];
    temper_build_cache_specs(key, specs, sizeof(specs));
    assert_string_equal(specs, "");
    assert_int_equal(temper_build_cache_put_specs(key, binary, sizeof(binary), "64-1-1-goffs0"), 0);
    temper_build_cache_specs(key, specs, sizeof(specs));
    assert_string_equal(specs, "64-1-1-goffs0");
    assert_int_equal(temper_build_cache_get(key, &data, &size), 0);
    free(data);
}

/* The kernel's parameter list read from the source: how an integer expression is passed. */
static void test_param_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *src, *kernel;
        int n;                          /* parameters, -1 not found */
        enum temper_param_kind kinds[6];
    } cases[] = {
        {"extern \"C\" __global__ void __launch_bounds__(256, 2) k(float *y, const float *__restrict__ x,\n"
         "    int N, long long M, size_t S, unsigned U) {}", "k", 6,
         {TEMPER_PARAM_OTHER, TEMPER_PARAM_OTHER, TEMPER_PARAM_I32, TEMPER_PARAM_I64, TEMPER_PARAM_U64,
          TEMPER_PARAM_U32}},
        {"__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(__global float *y, long n, ulong m,\n"
         "    const int c, uint u, float f) {}", "k", 6,
         {TEMPER_PARAM_OTHER, TEMPER_PARAM_I64, TEMPER_PARAM_U64, TEMPER_PARAM_I32, TEMPER_PARAM_U32,
          TEMPER_PARAM_OTHER}},
        /* A call or a device function of the same name is not the kernel; comments are skipped. */
        {"__device__ int k2(long a);\n/* __global__ void k(long x) */\nkernel void k(int64_t a, index_t b) { k2(a); }",
         "k", 2, {TEMPER_PARAM_I64, TEMPER_PARAM_UNKNOWN}},
        {"extern \"C\" __global__ void k(void) {}", "k", 0, {TEMPER_PARAM_UNKNOWN}},
        {"extern \"C\" __global__ void kk(int a) {}", "k", -1, {TEMPER_PARAM_UNKNOWN}},
        {"__device__ void k(int a) {}", "k", -1, {TEMPER_PARAM_UNKNOWN}},
        {"extern \"C\" __global__ void k(unsigned long n, uint32_t m, int32_t q, const Foo<int, 4> t) {}", "k", 4,
         {TEMPER_PARAM_U64, TEMPER_PARAM_U32, TEMPER_PARAM_I32, TEMPER_PARAM_UNKNOWN}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum temper_param_kind kinds[8];
        int n = temper_kernel_param_kinds(cases[i].src, strlen(cases[i].src), cases[i].kernel, kinds, 8);
        if (n != cases[i].n)
            fail_msg("case %zu: %d parameters, want %d", i, n, cases[i].n);
        for (int k = 0; k < n; k++)
            if (kinds[k] != cases[i].kinds[k])
                fail_msg("case %zu: parameter %d is kind %d, want %d", i, k + 1, (int)kinds[k], (int)cases[i].kinds[k]);
    }
    /* Linear in the source's length whatever it holds (each of these 1 MiB sources would take
     * hours if every occurrence of the name or a keyword were followed to the end). */
    static const char *const units[] = {"__kernel ", "__kernel k(", "k(", "kernel k (k(", "__global__ kk k "};
    char *big = malloc(TEMPER_SOURCE_MAX + 1);
    assert_non_null(big);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        size_t n = 0, ul = strlen(units[u]);
        while (n + ul <= TEMPER_SOURCE_MAX) {
            memcpy(big + n, units[u], ul);
            n += ul;
        }
        big[n] = 0;
        enum temper_param_kind kinds[8];
        assert_int_equal(temper_kernel_param_kinds(big, n, "k", kinds, 8), -1);
    }
    free(big);
    assert_true(temper_launch_arg_is_name("R_1"));
    assert_false(temper_launch_arg_is_name("R*C"));
    assert_false(temper_launch_arg_is_name("1R"));
    assert_false(temper_launch_arg_is_name(""));

    /* Whether the count is the compiler's: not where a macro may stand for several parameters or
     * a preprocessor line may take some away. */
    static const struct {
        const char *src; /* a kernel k */
        int n;           /* its parameters as read */
        int certain;     /* whether that count is sure */
    } counts[] = {
        {"__kernel void k(__global float *y, real_t a, const int n) {}", 3, 1},
        {"__kernel void k(void) {}", 0, 1},
        {"__kernel void k(KERNEL_ARGS) {}", 1, 0},
        {"__kernel void k(__global float *y, EXTRA) {}", 2, 0},
        {"__kernel void k(__global float *y,\n#if WIDE\n long n\n#else\n int n\n#endif\n) {}", 2, 0},
        {"__kernel void k(int, float *) ;", 2, 0},
        /* two definitions (#if's branches) that differ: not sure; a prototype and its definition: sure */
        {"#if W\n__kernel void k(__global float *y, int n) {}\n#else\n"
         "__kernel void k(__global float *y, int n, int m) {}\n#endif\n", 2, 0},
        {"__kernel void k(__global float *y, int n);\n__kernel void x(int a) {}\n"
         "__kernel void k(__global float *y, int n) {}\n", 2, 1},
        {"__kernel void kk(int a) {}", -1, 0},
    };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        enum temper_param_kind kinds[8];
        int certain = -1;
        int n = temper_kernel_params(counts[i].src, strlen(counts[i].src), "k", kinds, 8, &certain);
        if (n != counts[i].n || certain != counts[i].certain)
            fail_msg("count case %zu: %d parameters (certain %d), want %d (certain %d)", i, n, certain, counts[i].n,
                     counts[i].certain);
    }
    /* An uncertain count is not held against args(...): the driver decides at launch. */
    const char *src = "// @temper task t\n// @temper launch k grid(1) block(1) args(y, x, n)\n"
                      "__kernel void k(__global float *y, KERNEL_ARGS) {}\n";
    struct temper_candidate c;
    char msg[512] = "";
    if (temper_candidate_parse("m.cl", src, strlen(src), &c, msg, sizeof(msg)))
        fail_msg("%s", msg);
    assert_int_equal(c.launches[0].kernel_nparams, -1);
    temper_candidate_free(&c);
}

/* Expressions see sizes, then knobs, then device attributes. */
static void test_launch_eval_dev(void **state)
{
    (void)state;
    struct temper_device_info info;
    memset(&info, 0, sizeof(info));
    info.compute_units = 132;
    info.local_mem_bytes = 49152;
    info.local_mem_optin_bytes = 232448;
    info.local_mem_per_cu_bytes = 233472;
    info.warp_size = 32;
    info.cache_bytes = 52428800;
    info.max_work_group = 1024;
    info.cc_major = 9;
    struct temper_dev_attrs attrs;
    temper_dev_attrs_fill(&info, &attrs);
    struct temper_shape shape = {.n = 2, .names = {"R", "WARP"}, .values = {7, 5}};
    struct temper_knobs knobs = {.n = 2, .names = {"BLOCK", "SMS"}, .values = {"256", "3"}};
    static const struct {
        const char *expr;
        int64_t want;
    } cases[] = {
        {"R * SMEM_PER_BLOCK", 7 * 49152},     {"WARP", 5}, /* a size wins */
        {"SMS", 3},                            /* a knob wins */
        {"SMEM_PER_BLOCK_OPTIN", 232448},      {"SMEM_PER_SM", 233472},
        {"L2_BYTES / 1024", 51200},            {"MAX_THREADS_PER_BLOCK / BLOCK", 4},
        {"CC", 90},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = -1;
        char msg[256] = "";
        if (temper_launch_eval_dev(&shape, &knobs, &attrs, cases[i].expr, &v, msg, sizeof(msg)))
            fail_msg("%s: %s", cases[i].expr, msg);
        if (v != cases[i].want)
            fail_msg("%s = %lld, want %lld", cases[i].expr, (long long)v, (long long)cases[i].want);
    }
    struct temper_knobs none = {0};
    int64_t v;
    char msg[256];
    assert_int_equal(temper_launch_eval_dev(&shape, &none, &attrs, "SMS * 2", &v, msg, sizeof(msg)), 0);
    assert_int_equal(v, 264);
    assert_int_not_equal(temper_launch_eval_dev(&shape, &none, NULL, "SMS", &v, msg, sizeof(msg)), 0);
    info.warp_size = 0; /* an OpenCL device without a warp */
    temper_dev_attrs_fill(&info, &attrs);
    assert_int_equal(temper_launch_eval_dev(NULL, NULL, &attrs, "WARP", &v, msg, sizeof(msg)), 0);
    assert_int_equal(v, 1);
}

/* args(...) takes expressions; when(...) begins a launch group and must be on the first line. */
/* tensormap(NAME, SWIZZLE, BOX...) in args(...): split into its parts; malformed forms refused
 * with the entry quoted; OpenCL candidates refused; and TMA's rules checked on a filled map. */
static void test_tensormap_args(void **state)
{
    (void)state;
    struct temper_tensormap_arg tm;
    char msg[512] = "";
    assert_int_equal(temper_launch_arg_tensormap("tensormap(A, 128, 64, BM * 2)", &tm, msg, sizeof(msg)), 0);
    assert_string_equal(tm.name, "A");
    assert_string_equal(tm.swizzle, "128");
    assert_int_equal(tm.rank, 2);
    assert_string_equal(tm.box[0], "64");
    assert_string_equal(tm.box[1], "BM * 2");
    assert_int_equal(temper_launch_arg_tensormap(" tensormap ( x, 0, min(R, 4) ) ", &tm, msg, sizeof(msg)), 0);
    assert_int_equal(tm.rank, 1);
    assert_string_equal(tm.box[0], "min(R, 4)");
    assert_int_equal(temper_launch_arg_tensormap("tensormaps", &tm, msg, sizeof(msg)), 1);
    assert_int_equal(temper_launch_arg_tensormap("R * C", &tm, msg, sizeof(msg)), 1);
    static const struct {
        const char *arg;
        const char *error;
    } bad[] = {
        {"tensormap(A, 128)", "1 to 5 box sizes"},
        {"tensormap(A, 128, 1, 2, 3, 4, 5, 6)", "1 to 5 box sizes"},
        {"tensormap(A, , 64)", "none empty"},
        {"tensormap(A * 2, 0, 64)", "must be a task argument's name"},
        {"tensormap(A, 0, 64) + 1", "nothing after it"},
        {"tensormap(A, 0, 64", "nothing after it"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        msg[0] = 0;
        assert_int_equal(temper_launch_arg_tensormap(bad[i].arg, &tm, msg, sizeof(msg)), TEMPER_EPARSE);
        assert_contains(msg, bad[i].error);
    }

    const char *cu = "// @temper task t\n// @temper launch k grid(1) block(32) args(y, tensormap(x, 128, 64, 8), R)\n";
    struct temper_candidate c;
    assert_int_equal(temper_candidate_parse("w.cu", cu, strlen(cu), &c, msg, sizeof(msg)), 0);
    assert_string_equal(c.launches[0].args[1], "tensormap(x, 128, 64, 8)");
    temper_candidate_free(&c);
    const char *ocl = "// @temper task t\n// @temper launch k grid(1) block(32) args(y, tensormap(x, 128, 64), R)\n";
    assert_int_equal(temper_candidate_parse("w.cl", ocl, strlen(ocl), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "w.cl:2");
    assert_contains(msg, "tensor maps are CUDA's");
    const char *broken = "// @temper task t\n// @temper launch k grid(1) block(32) args(y, tensormap(x))\n";
    assert_int_equal(temper_candidate_parse("w.cu", broken, strlen(broken), &c, msg, sizeof(msg)), TEMPER_EPARSE);
    assert_contains(msg, "w.cu:2");
    assert_contains(msg, "'tensormap(x)'");

    /* TMA's rules: a valid 2-D bf16 map, then one rule broken at a time */
    struct temper_tensormap m;
    memset(&m, 0, sizeof(m));
    m.dtype = TEMPER_DTYPE_BF16;
    m.rank = 2;
    m.dims[0] = 4096;
    m.dims[1] = 300;
    m.strides[1] = 4096 * 2;
    m.box[0] = 64;
    m.box[1] = 128;
    m.swizzle = 128;
    assert_int_equal(temper_tensormap_check(&m, msg, sizeof(msg)), 0);
    struct temper_tensormap b = m;
    b.strides[1] = 17 * 2;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "stride is 34 bytes");
    b = m;
    b.box[1] = 257;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "box size 1 is 257");
    b = m;
    b.box[0] = 4;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "inner size is 8 bytes");
    b = m;
    b.swizzle = 64;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "over the 64-byte swizzle span");
    b = m;
    b.swizzle = 16;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "swizzle 16");
    b = m;
    b.dims[1] = 0;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "dimension 1");
    b = m;
    b.rank = 6;
    assert_int_equal(temper_tensormap_check(&b, msg, sizeof(msg)), TEMPER_EINVALID);
}

static void test_args_and_when(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *error; /* NULL: parses */
    } cases[] = {
        {"// @temper launch k grid(R) block(64) args(y, x, R * C, ceil_div(C, 4))\n", NULL},
        {"// @temper launch a grid(R) block(64) when(C <= 1024)\n// @temper launch b grid(R) block(256) when(1)\n",
         NULL},
        {"// @temper launch a grid(R) block(64) when(C > 4)\n// @temper launch a2 grid(R) block(64)\n", NULL},
        {"// @temper launch a grid(R) block(64)\n// @temper launch b grid(R) block(64) when(C > 4)\n",
         "not on this first one"},
        {"// @temper launch a grid(R) block(64) when()\n", "when(...) needs one expression"},
        {"// @temper launch a grid(R) block(64) args(y, x[0])\n", "neither a name nor an integer expression"},
        {"// @temper launch a grid(R) block(64) args(y, \"x\")\n", "neither a name nor an integer expression"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char src[1024];
        snprintf(src, sizeof(src), "// @temper task t\n%s", cases[i].body);
        struct temper_candidate c;
        char msg[1024] = "";
        int err = temper_candidate_parse("w.cu", src, strlen(src), &c, msg, sizeof(msg));
        if (!cases[i].error && err)
            fail_msg("case %zu refused: %s", i, msg);
        if (cases[i].error) {
            assert_int_equal(err, TEMPER_EPARSE);
            assert_contains(msg, cases[i].error);
        }
        temper_candidate_free(&c);
    }
    const char *src = "// @temper task t\n// @temper launch k grid(R) block(64) args(y, R * C, 7) when(R > 1)\n"
                      "extern \"C\" __global__ void k(float *y, long long n, unsigned m) {}\n";
    struct temper_candidate c;
    char msg[1024];
    assert_int_equal(temper_candidate_parse("w.cu", src, strlen(src), &c, msg, sizeof(msg)), 0);
    assert_string_equal(c.launches[0].args[1], "R * C");
    assert_string_equal(c.launches[0].when, "R > 1");
    assert_int_equal(c.launches[0].arg_kind[1], TEMPER_PARAM_I64);
    assert_int_equal(c.launches[0].arg_kind[2], TEMPER_PARAM_U32);
    temper_candidate_free(&c);
    /* a `__grid_constant__` struct is a tensor map's place; a `__grid_constant__` int stays an int */
    const char *gc = "// @temper task t\n// @temper launch k grid(R) block(64) args(y, tensormap(x, 0, 64), R)\n"
                     "struct m { long v[16]; };\n"
                     "extern \"C\" __global__ void k(float *y, const __grid_constant__ m map, const __grid_constant__ int n) {}\n";
    assert_int_equal(temper_candidate_parse("g.cu", gc, strlen(gc), &c, msg, sizeof(msg)), 0);
    assert_int_equal(c.launches[0].arg_kind[0], TEMPER_PARAM_OTHER);
    assert_int_equal(c.launches[0].arg_kind[1], TEMPER_PARAM_GRID_CONSTANT);
    assert_int_equal(c.launches[0].arg_kind[2], TEMPER_PARAM_I32);
    temper_candidate_free(&c);
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
        cmocka_unit_test(test_long_directives),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_language),
        cmocka_unit_test(test_include_rule),
        cmocka_unit_test(test_scan_linear),
        cmocka_unit_test(test_param_kinds),
        cmocka_unit_test(test_launch_eval_dev),
        cmocka_unit_test(test_args_and_when),
        cmocka_unit_test(test_tensormap_args),
        cmocka_unit_test(test_option_rule),
        cmocka_unit_test_setup_teardown(test_load_from_file, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_build_cache, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests_name("candidate", tests, NULL, NULL);
}
