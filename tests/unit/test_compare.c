/* test_compare.c: unit tests of output comparison (eval/eval_internal.h temper_compare_values) for every case
 * of the correctness protocol's rule |out - want| <= atol + rtol*|want| with NaN and inf, in f32,
 * integer and low-precision outputs; the verdict names; and the reading of compute-sanitizer's
 * output. Values are binary fractions so that every expected error is exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "eval/eval_internal.h"
#include "util/util.h"

#define N_MAX 8

/* One comparison of f32 outputs and everything it must report. */
struct f32_case {
    const char *what;       /* what the case shows */
    int n;                  /* elements */
    float out[N_MAX];       /* the outputs */
    double want[N_MAX];     /* the expected values */
    double atol, rtol;      /* tolerances */
    int64_t mismatches;     /* elements outside the tolerance */
    int64_t first_bad;      /* index of the first, -1 if none */
    double first_got;       /* the output there (NaN compares as NaN) */
    double first_want;      /* the expected value there */
    int64_t nonfinite;      /* NaN or inf where a finite value was expected */
    double max_abs_err;     /* over finite pairs */
    double max_rel_err;     /* over finite pairs with want != 0 */
};

static int same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

static void check_result(const char *what, const struct temper_compare *r, int64_t n, int64_t mismatches,
                         int64_t first_bad, double first_got, double first_want, int64_t nonfinite, double max_abs,
                         double max_rel)
{
    if (r->count != n)
        fail_msg("%s: count %lld, want %lld", what, (long long)r->count, (long long)n);
    if (r->mismatches != mismatches)
        fail_msg("%s: mismatches %lld, want %lld", what, (long long)r->mismatches, (long long)mismatches);
    if (r->first_bad != first_bad)
        fail_msg("%s: first_bad %lld, want %lld", what, (long long)r->first_bad, (long long)first_bad);
    if (first_bad >= 0 && (!same(r->first_got, first_got) || !same(r->first_want, first_want)))
        fail_msg("%s: first mismatch got %.17g want %.17g, expected got %.17g want %.17g", what, r->first_got,
                 r->first_want, first_got, first_want);
    if (r->nonfinite != nonfinite)
        fail_msg("%s: nonfinite %lld, want %lld", what, (long long)r->nonfinite, (long long)nonfinite);
    if (r->max_abs_err != max_abs)
        fail_msg("%s: max_abs_err %.17g, want %.17g", what, r->max_abs_err, max_abs);
    if (r->max_rel_err != max_rel)
        fail_msg("%s: max_rel_err %.17g, want %.17g", what, r->max_rel_err, max_rel);
}

static void test_f32(void **state)
{
    (void)state;
    static struct f32_case cases[] = {
        {"exact match", 4, {1, -2, 0, 3.5f}, {1, -2, 0, 3.5}, 0, 0, 0, -1, 0, 0, 0, 0, 0},
        {"within tolerance, two on the boundary", 4,
         {1 + 0x1p-10f, 64.0625f, 0x1p-10f, -8 - 0x1p-7f - 0x1p-10f}, {1, 64, 0, -8}, 0x1p-10, 0x1p-10,
         0, -1, 0, 0, 0, 0x1p-4, 0x1p-10 + 0x1p-13},
        {"just outside the tolerance", 4,
         {1 + 0x1p-10f, 64.0625f, 0x1p-10f + 0x1p-20f, -8 - 0x1p-7f - 0x1p-10f - 0x1p-20f}, {1, 64, 0, -8},
         0x1p-10, 0x1p-10, 2, 2, 0x1p-10 + 0x1p-20, 0, 0, 0x1p-4, 0x1p-10 + 0x1p-13 + 0x1p-23},
        {"relative tolerance does the work", 2, {1000.5f, -1000.5f}, {1000, -1000}, 0, 1e-3,
         0, -1, 0, 0, 0, 0.5, 0.5 / 1000},
        {"relative tolerance too tight", 2, {1000.5f, -1000.5f}, {1000, -1000}, 0, 0x1p-12,
         2, 0, 1000.5, 1000, 0, 0.5, 0.5 / 1000},
        {"NaN and inf where finite expected", 4, {1, NAN, INFINITY, 3}, {1, 2, 3, 3}, 1, 1,
         2, 1, NAN, 2, 2, 0, 0},
        {"-inf where finite expected, huge tolerance", 1, {-INFINITY}, {5}, 1e300, 1e300,
         1, 0, -INFINITY, 5, 1, 0, 0},
        {"inf expected, inf got", 3, {INFINITY, -INFINITY, 1}, {INFINITY, -INFINITY, 1}, 0, 0,
         0, -1, 0, 0, 0, 0, 0},
        {"NaN expected, NaN got", 2, {NAN, 2}, {NAN, 2}, 0, 0, 0, -1, 0, 0, 0, 0, 0},
        {"inf expected, wrong sign or finite or NaN got", 3, {-INFINITY, 3e38f, NAN},
         {INFINITY, INFINITY, INFINITY}, 1e300, 1e300, 3, 0, -INFINITY, INFINITY, 0, 0, 0},
        {"NaN expected, number got", 2, {0, INFINITY}, {NAN, NAN}, 1, 1, 2, 0, 0, NAN, 0, 0, 0},
        {"zero expected: no relative error", 2, {0.25f, 0}, {0, 0}, 0.5, 0, 0, -1, 0, 0, 0, 0.25, 0},
        {"nothing to compare", 0, {0}, {0}, 0, 0, 0, -1, 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct f32_case *c = &cases[i];
        struct temper_compare r;
        memset(&r, 0x5a, sizeof(r)); /* every field must be written */
        temper_compare_values(TEMPER_DTYPE_F32, c->out, c->want, c->n, c->atol, c->rtol, &r);
        check_result(c->what, &r, c->n, c->mismatches, c->first_bad, c->first_got, c->first_want, c->nonfinite,
                     c->max_abs_err, c->max_rel_err);
    }
}

static void test_i32_exact(void **state)
{
    (void)state;
    const int32_t out[] = {1, -5, 2147483647, 1, -2147483647 - 1, 9};
    const double want[] = {1, -5, 2147483647, 0, -2147483648.0, 7};
    struct temper_compare r;
    temper_compare_values(TEMPER_DTYPE_I32, out, want, 6, 0, 0, &r);
    check_result("i32 exact", &r, 6, 2, 3, 1, 0, 0, 2, 2.0 / 7);
    /* atol 2 forgives both; atol 1.5 only the first. */
    temper_compare_values(TEMPER_DTYPE_I32, out, want, 6, 2, 0, &r);
    check_result("i32 atol 2", &r, 6, 0, -1, 0, 0, 0, 2, 2.0 / 7);
    temper_compare_values(TEMPER_DTYPE_I32, out, want, 6, 1.5, 0, &r);
    check_result("i32 atol 1.5", &r, 6, 1, 5, 9, 7, 0, 2, 2.0 / 7);
}

static void test_low_precision_outputs(void **state)
{
    (void)state;
    /* bf16: 3.140625 (0x4049) for pi errs 9.67e-4; -0.10009765625 (0xbdcd) for -0.1 errs 9.77e-5. */
    const uint16_t bf[] = {0x3f80, 0x4049, 0xbdcd};
    const double want[] = {1.0, 3.14159265358979, -0.1};
    const double err_pi = 3.14159265358979 - 3.140625, err_tenth = 0.10009765625 - 0.1;
    struct temper_compare r;
    temper_compare_values(TEMPER_DTYPE_BF16, bf, want, 3, 0, 0x1p-8, &r);
    check_result("bf16 within rtol 2^-8", &r, 3, 0, -1, 0, 0, 0, err_pi, err_tenth / 0.1);
    temper_compare_values(TEMPER_DTYPE_BF16, bf, want, 3, 0, 1e-4, &r);
    check_result("bf16 rtol 1e-4", &r, 3, 2, 1, 3.140625, 3.14159265358979, 0, err_pi, err_tenth / 0.1);
    temper_compare_values(TEMPER_DTYPE_BF16, bf, want, 3, 1e-3, 0, &r);
    check_result("bf16 atol 1e-3", &r, 3, 0, -1, 0, 0, 0, err_pi, err_tenth / 0.1);

    /* f16: 0x3555 = 0.333251953125 for 1/3; 0x7e00 is NaN. */
    const uint16_t h[] = {0x3555, 0x7e00};
    const double hw[] = {1.0 / 3, 1};
    temper_compare_values(TEMPER_DTYPE_F16, h, hw, 2, 0, 0x1p-10, &r);
    double err = 1.0 / 3 - 0.333251953125;
    check_result("f16", &r, 2, 1, 1, NAN, 1, 1, err, err / (1.0 / 3));

    /* u8 and i8 load as their exact values. */
    const uint8_t u[] = {255, 0};
    const double uw[] = {255, 1};
    temper_compare_values(TEMPER_DTYPE_U8, u, uw, 2, 0, 0, &r);
    check_result("u8", &r, 2, 1, 1, 0, 1, 0, 1, 1);
    const int8_t s[] = {-128, 127};
    const double sw[] = {-128, 127};
    temper_compare_values(TEMPER_DTYPE_I8, s, sw, 2, 0, 0, &r);
    check_result("i8", &r, 2, 0, -1, 0, 0, 0, 0, 0);
}

static void test_verdict_names(void **state)
{
    (void)state;
    static const struct {
        enum temper_verdict v; /* a verdict */
        const char *name;      /* its name in results and the store */
    } table[] = {
        {TEMPER_VERDICT_CORRECT, "correct"},         {TEMPER_VERDICT_INCORRECT, "incorrect"},
        {TEMPER_VERDICT_COMPILE_ERROR, "compile_error"}, {TEMPER_VERDICT_RUNTIME_ERROR, "runtime_error"},
        {TEMPER_VERDICT_TIMEOUT, "timeout"},         {TEMPER_VERDICT_INVALID, "invalid"},
    };
    /* Every verdict, up to the last, has a name of its own that reads back as that verdict
     * (results are stored and read back by name), and the table spells out each of them. */
    assert_int_equal(sizeof(table) / sizeof(table[0]), TEMPER_VERDICT_INVALID + 1);
    for (int v = 0; v <= TEMPER_VERDICT_INVALID; v++) {
        assert_non_null(temper_verdict_name((enum temper_verdict)v));
        assert_int_equal(temper_verdict_parse(temper_verdict_name((enum temper_verdict)v)), v);
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        assert_string_equal(temper_verdict_name(table[i].v), table[i].name);
        assert_int_equal(temper_verdict_parse(table[i].name), table[i].v);
    }
    static const char *const unknown[] = {"Correct", "", "wrong", "compile-error", "correct "};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        assert_int_equal(temper_verdict_parse(unknown[i]), -1);
}

static void test_default_limits(void **state)
{
    (void)state;
    struct temper_limits l;
    memset(&l, 0, sizeof(l));
    temper_limits_default(&l);
    assert_true(l.launch_timeout_s > 0);
    assert_true(l.compile_timeout_s > 0);
    assert_true(l.job_timeout_s >= l.launch_timeout_s);
    assert_true(l.job_timeout_s >= l.compile_timeout_s);
}

/* compute-sanitizer's output, as its tools print it, and what must be read from it. */
static void test_sanitizer_findings(void **state)
{
    (void)state;
    static const struct {
        const char *output;
        int exit_code, timed_out;
        long errors;
        int incomplete;
        const char *first_line; /* NULL: no findings kept */
    } table[] = {
        {"========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0, 0, 0, 0, "COMPUTE-SANITIZER"},
        {"========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
         "=========     at add+0x70\n========= ERROR SUMMARY: 1 error\n",
         1, 0, 1, 0, "COMPUTE-SANITIZER"},
        /* two processes (temper's worker and its parent) each print a summary */
        {"========= ERROR SUMMARY: 2 errors\n========= ERROR SUMMARY: 3 errors\n", 1, 0, 5, 0, NULL},
        /* racecheck prints its own summary, with the errors in parentheses */
        {"========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", 0,
         0, 0, 0, "COMPUTE-SANITIZER"},
        {"========= Error: Race reported between Write access at red+0x90\n"
         "========= RACECHECK SUMMARY: 4 hazards displayed (3 errors, 1 warning)\n",
         1, 0, 3, 0, "Error: Race reported between Write access at red+0x90"},
        /* no summary: the tool died or was killed; never read as clean */
        {"========= COMPUTE-SANITIZER\n", 139, 0, 0, 1, "COMPUTE-SANITIZER"},
        {"========= ERROR SUMMARY: 0 errors\n", 137, 1, 0, 1, NULL},
        {"", 1, 0, 0, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        json_t *r = temper_sanitizer_findings(table[i].output, table[i].exit_code, table[i].timed_out);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "errors")), table[i].errors);
        assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), table[i].exit_code);
        assert_int_equal(json_object_get(r, "incomplete") != NULL, table[i].incomplete);
        json_t *report = json_object_get(r, "report");
        if (table[i].first_line)
            assert_string_equal(json_string_value(json_array_get(report, 0)), table[i].first_line);
        else
            assert_int_equal(json_array_size(report), 0);
        json_decref(r);
    }
}

/* racecheck's summary counts every hazard in its errors and warnings, but with --print-limit only
 * the first are reported, and "N hazards displayed" counts those (on the H200, 20 errors and 4
 * warnings over 20 reported pairs, --print-limit 20): the rest is said as not printed, of no known
 * kind, in the findings and in the summary line. */
static void test_sanitizer_not_printed(void **state)
{
    (void)state;
    const char *output = "========= COMPUTE-SANITIZER\n"
                         "========= Error: Race reported between Write access at k(float *)+0x90\n"
                         "=========     and Read access at k(float *)+0xb0 [64 hazards]\n"
                         "========= \n"
                         "========= Error: Race reported between Write access at k(float *)+0x120\n"
                         "=========     and Read access at k(float *)+0x140 [32 hazards]\n"
                         "========= \n"
                         "========= RACECHECK SUMMARY: 2 hazards displayed (4 errors, 1 warning)\n";
    json_t *r = temper_sanitizer_findings(output, 1, 0);
    json_t *h = json_object_get(r, "hazards");
    assert_int_equal(json_integer_value(json_object_get(h, "read_write")), 2);
    assert_int_equal(json_integer_value(json_object_get(h, "not_printed")), 3);
    json_t *san = json_pack("{s:O}", "racecheck", r);
    char text[512];
    temper_sanitize_summary(san, text, sizeof(text));
    assert_non_null(strstr(text, "read_write 2, 3 past the print limit"));
    json_decref(san);
    json_decref(r);
    /* every hazard reported: nothing said of a limit */
    r = temper_sanitizer_findings("========= Error: Race reported between Write access at k+0x90\n"
                                  "=========     and Read access at k+0xb0 [4 hazards]\n"
                                  "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
                                  1, 0);
    assert_null(json_object_get(json_object_get(r, "hazards"), "not_printed"));
    json_decref(r);
}

/* compute-sanitizer's output as real runs printed it, quoted line for line from public logs,
 * and what must be read from it: errors and warnings, and racecheck's pairs by kind. */
static void test_sanitizer_real_logs(void **state)
{
    (void)state;
    static const struct {
        const char *from; /* where the lines were published */
        const char *output;
        long errors, warnings, write_write, read_write, read_write_instances;
        int incomplete;
    } table[] = {
        {"a public reproduction, 'Race condition reported in cg::reduce()' (README; nvcc 12.2, Quadro RTX 5000)",
         "========= COMPUTE-SANITIZER\n"
         "========= Error: Race reported between Write access at 0xa60 in void Kernel<(int)256>(const int *, int, int *)\n"
         "=========     and Read access at 0xcc0 in void Kernel<(int)256>(const int *, int, int *) [28 hazards]\n"
         "=========\n"
         "========= Error: Race reported between Write access at 0xd60 in void Kernel<(int)256>(const int *, int, int *)\n"
         "=========     and Read access at 0xf30 in void Kernel<(int)256>(const int *, int, int *) [4 hazards]\n"
         "=========\n"
         "Host min = 10; Device min = 10\n"
         "Host and device calculation match - we're good!\n"
         "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n",
         2, 0, 0, 2, 32, 0},
        {"github.com/kokkos/kokkos/pull/4855 (the description's racecheck run, before the change)",
         "========= COMPUTE-SANITIZER\n"
         "Running with n = 1\n"
         "========= WARNING: Race reported between Read access at 0xf10 in /scratch/pbmille/kokkos/install/cuda10/"
         "include/impl/Kokkos_FunctorAdapter.hpp:1571:Kokkos::Impl::CudaReductionsFunctor<Sum,void,bool=0,bool=0>::"
         "scalar_intra_warp_reduction(Sum const &,double*,bool,int)\n"
         "=========     and Write access at 0x8a0 in /scratch/pbmille/kokkos/install/cuda10/include/Cuda/"
         "Kokkos_Cuda_ReduceScan.hpp:557:Kokkos::Impl::CudaReductionsFunctor<Sum,void,bool=0,bool=0>::"
         "scalar_intra_block_reduction(Sum const &,double,bool,double*,int,double*) [3968 hazards]\n"
         "========= \n",
         /* no summary in the quoted part: counted from the lines, and incomplete */
         0, 1, 0, 1, 3968, 1},
        {"github.com/kynema/kynema-ugf/issues/943 (racecheck --racecheck-report all, CUDA 11.0.3)",
         "========= WARNING: Race reported between Write access at 0x4c60 in __nv_static_82__69_tmpxft_001d866f_"
         "00000000_7_Tpetra_Details_FixedHashTable_Cuda_cpp1_ii_b028c491__ZN6Kokkos4Impl33cuda_parallel_launch_local_"
         "memoryINS0_21ParallelScanWithTotalIN6Tpetra7Details93_GLOBAL__N__69_tmpxft_001d866f_00000000_7_Tpetra_"
         "Details_FixedHashTable_Cuda_cpp1_ii_b028c49124ComputeOffsetsFromCountsIiijEENS_11RangePolicyIJNS_4CudaEjEEEi"
         "S9_EEEEvT_\n"
         "=========     and Read access at 0x4f70 in __nv_static_82__69_tmpxft_001d866f_00000000_7_Tpetra_Details_"
         "FixedHashTable_Cuda_cpp1_ii_b028c491__ZN6Kokkos4Impl33cuda_parallel_launch_local_memoryINS0_21ParallelScan"
         "WithTotalIN6Tpetra7Details93_GLOBAL__N__69_tmpxft_001d866f_00000000_7_Tpetra_Details_FixedHashTable_Cuda_"
         "cpp1_ii_b028c49124ComputeOffsetsFromCountsIiijEENS_11RangePolicyIJNS_4CudaEjEEEiS9_EEEEvT_ [4 hazards]\n"
         "=========\n"
         "========= WARNING: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x80 in block "
         "(0,0,0) :\n",
         0, 2, 0, 2, 5, 1},
        {"github.com/gunrock/gunrock/issues/844 (cuda-memcheck racecheck --racecheck-report hazard)",
         "========= WARN:(Warp Level Programming) Potential RAW hazard detected at __shared__ 0xf4 in block (0, 0, 0) :\n",
         0, 1, 0, 1, 1, 1},
        {"a public CUDA course's 'Actual Sanitizer Output' of memory_errors.cu (memcheck, --print-limit reached)",
         "========= COMPUTE-SANITIZER\n"
         "========= Invalid __global__ write of size 4 bytes\n"
         "=========     at misaligned_access_kernel(char *, int)+0x380 in memory_errors.cu:61\n"
         "=========     by thread (65,0,0) in block (0,0,0)\n"
         "=========     Access to 0x7bd889c03041 is misaligned\n"
         "=========     and is inside the nearest allocation at 0x7bd889c03000 of size 1,024 bytes\n"
         "========= ERROR SUMMARY: 769 errors\n"
         "========= ERROR SUMMARY: 669 errors were not printed. Use --print-limit option\n",
         769, 0, -1, -1, -1, 0},
        /* No public write-write log was found: this one was captured for this test on an H200
         * (compute-sanitizer 2025.3.1.0 of CUDA 13.0, --tool racecheck), from two kernels: every
         * thread writing one of two shared words (waw) and a shared read without a barrier
         * (raw). Its blank separator lines end in a space. */
        {"captured on an H200 for this test (compute-sanitizer 2025.3.1.0)",
         "========= COMPUTE-SANITIZER\n"
         "========= Error: Race reported between Write access at waw(float *)+0x90\n"
         "=========     and Write access at waw(float *)+0x90 [267 hazards]\n"
         "========= \n"
         "========= Error: Race reported between Write access at raw(float *)+0xa0\n"
         "=========     and Read access at raw(float *)+0xb0 [1024 hazards]\n"
         "========= \n"
         "done\n"
         "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n",
         2, 0, 1, 1, 1024, 0},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        json_t *r = temper_sanitizer_findings(table[i].output, 0, 0);
        assert_non_null(r);
        if (json_integer_value(json_object_get(r, "errors")) != table[i].errors ||
            json_integer_value(json_object_get(r, "warnings")) != table[i].warnings)
            fail_msg("%s: %lld errors, %lld warnings; want %ld, %ld", table[i].from,
                     (long long)json_integer_value(json_object_get(r, "errors")),
                     (long long)json_integer_value(json_object_get(r, "warnings")), table[i].errors, table[i].warnings);
        json_t *h = json_object_get(r, "hazards"), *n = json_object_get(r, "hazard_instances");
        if (table[i].write_write < 0) {
            assert_null(h);
        } else {
            assert_non_null(h);
            if (json_integer_value(json_object_get(h, "write_write")) != table[i].write_write ||
                json_integer_value(json_object_get(h, "read_write")) != table[i].read_write ||
                json_integer_value(json_object_get(n, "read_write")) != table[i].read_write_instances)
                fail_msg("%s: hazards write_write %lld, read_write %lld (%lld instances)", table[i].from,
                         (long long)json_integer_value(json_object_get(h, "write_write")),
                         (long long)json_integer_value(json_object_get(h, "read_write")),
                         (long long)json_integer_value(json_object_get(n, "read_write")));
        }
        assert_int_equal(json_object_get(r, "incomplete") != NULL, table[i].incomplete);
        json_decref(r);
    }
    /* The summary line for people names each tool, its warnings and hazards by kind. */
    json_t *san = json_pack("{s:{s:i, s:i}, s:{s:i, s:i, s:{s:i, s:i}}, s:s}", "memcheck", "errors", 0, "warnings", 0,
                            "racecheck", "errors", 0, "warnings", 3, "hazards", "write_write", 3, "read_write", 0,
                            "mode", "strict");
    char line[512];
    temper_sanitize_summary(san, line, sizeof(line));
    assert_string_equal(line, "memcheck 0 errors; racecheck 0 errors, 3 warnings (write_write 3)");
    json_decref(san);
    san = json_pack("{s:s}", "error", "--sanitize is not supported on opencl device opencl:0");
    temper_sanitize_summary(san, line, sizeof(line));
    assert_string_equal(line, "not run: --sanitize is not supported on opencl device opencl:0");
    json_decref(san);
}

/* A folder put first on PATH for a stand-in compute-sanitizer (no CPU machine has the real one):
 * its path in dir (a mkdtemp template), the tool's in tool; the old PATH is kept in *saved. */
struct stand_in {
    char dir[32];
    char tool[128];
    char *saved;
};

static void stand_in_begin(struct stand_in *s)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/temper_deep_XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->tool, sizeof(s->tool), "%s/compute-sanitizer", s->dir);
    const char *old_path = getenv("PATH");
    char path[4096];
    snprintf(path, sizeof(path), "%s:%s", s->dir, old_path ? old_path : "/usr/bin:/bin");
    s->saved = old_path ? strdup(old_path) : NULL;
    setenv("PATH", path, 1);
}

/* Removes the stand-in's folder (after the files the test made there) and restores PATH. */
static void stand_in_end(struct stand_in *s)
{
    unlink(s->tool);
    rmdir(s->dir);
    if (s->saved)
        setenv("PATH", s->saved, 1);
    free(s->saved);
}

/* What the findings do to a CUDA verdict, through temper_deep_check with a stand-in
 * compute-sanitizer on the PATH (no CPU machine has the real one): errors fail in both modes,
 * warnings only with strict, and a non-CUDA device is not checked at all. */
static void test_deep_check_verdicts(void **state)
{
    (void)state;
    struct stand_in si;
    stand_in_begin(&si);
    const char *tool = si.tool;
    static const struct {
        const char *race_lines, *mem_summary; /* what the stand-in prints for racecheck, memcheck */
        int mode;                             /* TEMPER_SANITIZE_* */
        const char *language;
        const char *verdict, *phrase; /* the verdict after, a phrase of its message (or sanitize's error) */
    } cases[] = {
        {"echo '========= Warning: Race reported between Write access at 0x290 in k'\n"
         "echo '=========     and Write access at 0x290 in k [64 hazards]'\n"
         "echo '========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)'\n",
         "0 errors", TEMPER_SANITIZE_REPORT, "cuda", "correct", "passed"},
        {"echo '========= Warning: Race reported between Write access at 0x290 in k'\n"
         "echo '=========     and Write access at 0x290 in k [64 hazards]'\n"
         "echo '========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)'\n",
         "0 errors", TEMPER_SANITIZE_STRICT, "cuda", "incorrect", "1 warning, which --sanitize=strict fails"},
        {"echo '========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)'\n", "2 errors",
         TEMPER_SANITIZE_REPORT, "cuda", "incorrect", "compute-sanitizer reported 2 errors (memcheck 2 errors"},
        {"echo '========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)'\n", "2 errors",
         TEMPER_SANITIZE_STRICT, "opencl", "correct", "not supported on opencl device opencl:0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen(tool, "w");
        assert_non_null(f);
        fprintf(f, "#!/bin/sh\ncase \"$2\" in\nracecheck)\n%s;;\nmemcheck) echo '========= ERROR SUMMARY: %s';;\n"
                   "*) echo '========= ERROR SUMMARY: 0 errors';;\nesac\n",
                cases[i].race_lines, cases[i].mem_summary);
        fclose(f);
        chmod(tool, 0755);
        json_t *result = json_pack("{s:s, s:s, s:{s:s, s:s}}", "verdict", "correct", "message", "passed",
                                   "device_info", "language", cases[i].language, "id",
                                   !strcmp(cases[i].language, "cuda") ? "cuda:0" : "opencl:0");
        struct temper_deep_request req = {"/bin/true", "k.cu", NULL, NULL, NULL, 0, 30, NULL};
        temper_deep_check(&req, result, cases[i].mode, 0);
        const char *verdict = json_string_value(json_object_get(result, "verdict"));
        const char *message = json_string_value(json_object_get(result, "message"));
        const char *error = json_string_value(json_object_get(json_object_get(result, "sanitize"), "error"));
        if (strcmp(verdict, cases[i].verdict))
            fail_msg("case %zu: verdict %s, want %s (%s)", i, verdict, cases[i].verdict, message);
        if (!strstr(error ? error : message, cases[i].phrase))
            fail_msg("case %zu: '%s' lacks '%s'", i, error ? error : message, cases[i].phrase);
        if (!error) {
            json_t *race = json_object_get(json_object_get(result, "sanitize"), "racecheck");
            assert_non_null(json_object_get(json_object_get(result, "sanitize"), "initcheck"));
            assert_non_null(json_object_get(race, "hazards"));
        }
        json_decref(result);
    }
    stand_in_end(&si);
}

/* The deep checks run the candidate with the knob values it was evaluated with, whatever their
 * kind: each goes to the tool's `temper eval` as --set NAME=TEXT through the one formatter (a
 * request from the API or MCP carries typed values and no --set texts). */
static void test_deep_check_knobs(void **state)
{
    (void)state;
    struct stand_in si;
    stand_in_begin(&si);
    char args[128];
    snprintf(args, sizeof(args), "%s/args", si.dir);
    FILE *f = fopen(si.tool, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$*\" >>%s\necho '========= ERROR SUMMARY: 0 errors'\n", args);
    fclose(f);
    chmod(si.tool, 0755);
    const struct temper_knob_value knobs[] = {
        {.name = "BLOCK", .kind = TEMPER_KNOB_INT, .i = 64},
        {.name = "SCALE", .kind = TEMPER_KNOB_REAL, .r = 0.5},
        {.name = "MODE", .kind = TEMPER_KNOB_TEXT, .text = "fast"},
    };
    json_t *result = json_pack("{s:s, s:s, s:{s:s, s:s}}", "verdict", "correct", "message", "passed", "device_info",
                               "language", "cuda", "id", "cuda:0");
    struct temper_deep_request req = {.self_exe = "/bin/true", .path = "k.cu", .knobs = knobs, .nknobs = 3,
                                      .timeout_s = 30};
    temper_deep_check(&req, result, TEMPER_SANITIZE_REPORT, 0);
    char *text = NULL;
    assert_int_equal(temper_read_file(args, 1 << 20, &text, NULL, NULL, 0), 0);
    /* one line per tool, each ending in the eval's arguments */
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++)
        if (!strstr(line, "eval k.cu --no-store --json --no-timing --checks-only --set BLOCK=64 --set SCALE=0.5 "
                          "--set MODE=fast"))
            fail_msg("a tool ran '%s', without the three knob values as --set", line);
    assert_int_equal(lines, 4);
    free(text);
    json_decref(result);
    unlink(args);
    stand_in_end(&si);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32),
        cmocka_unit_test(test_i32_exact),
        cmocka_unit_test(test_low_precision_outputs),
        cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_default_limits),
        cmocka_unit_test(test_sanitizer_findings),
        cmocka_unit_test(test_sanitizer_not_printed),
        cmocka_unit_test(test_sanitizer_real_logs),
        cmocka_unit_test(test_deep_check_verdicts),
        cmocka_unit_test(test_deep_check_knobs),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
