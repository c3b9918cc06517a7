/* test_metrics.c: unit tests of the bench metrics (bench.h) with known answers: the unbiased
 * pass@k estimator against its closed form 1 - C(n-c,k)/C(n,k) computed with exact integers,
 * and fast_p, the geometric means, speed against the expert and the both-backends share on a
 * small fixture computed by hand (the computation is written beside each assertion). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "temper/bench.h"

#define assert_near(got, want) assert_true(fabs((got) - (double)(want)) <= 1e-12 * (1 + fabs((double)(want))))

/* C(n, k) exactly, for n <= 60 (each step's product is divisible and stays under 2^64). */
static uint64_t binomial(int n, int k)
{
    if (k < 0 || k > n)
        return 0;
    uint64_t r = 1;
    for (int i = 1; i <= k; i++)
        r = r * (uint64_t)(n - k + i) / (uint64_t)i;
    return r;
}

static void test_pass_at_k_closed_form(void **state)
{
    (void)state;
    for (int n = 1; n <= 30; n++)
        for (int c = 0; c <= n; c++)
            for (int k = 1; k <= n; k++) {
                double want = 1.0 - (double)binomial(n - c, k) / (double)binomial(n, k);
                double got = temper_metric_pass_at_k(n, c, k);
                if (!(fabs(got - want) <= 1e-12))
                    fail_msg("pass@%d with n=%d c=%d: %.17g, closed form %.17g", k, n, c, got, want);
            }
}

static void test_pass_at_k_known_values(void **state)
{
    (void)state;
    assert_near(temper_metric_pass_at_k(10, 3, 1), 0.3);               /* c/n */
    assert_near(temper_metric_pass_at_k(10, 3, 5), 1.0 - 21.0 / 252);  /* 1 - C(7,5)/C(10,5) */
    assert_near(temper_metric_pass_at_k(10, 0, 5), 0.0);
    assert_near(temper_metric_pass_at_k(10, 6, 5), 1.0);               /* only 4 wrong: any 5 hold a correct one */
    assert_near(temper_metric_pass_at_k(200, 1, 1), 0.005);
    /* Large n, where C(n,k) overflows a double: 1 - C(2500,10)/C(3000,10) agrees with lgamma. */
    double want = 1.0 - exp(lgamma(2501) - lgamma(2491) - lgamma(3001) + lgamma(2991));
    assert_true(fabs(temper_metric_pass_at_k(3000, 500, 10) - want) < 1e-9);
    /* Outside its domain: NAN. */
    assert_true(isnan(temper_metric_pass_at_k(4, 1, 5)));
    assert_true(isnan(temper_metric_pass_at_k(4, 5, 1)));
    assert_true(isnan(temper_metric_pass_at_k(4, -1, 1)));
    assert_true(isnan(temper_metric_pass_at_k(4, 1, 0)));
}

static void test_geomean(void **state)
{
    (void)state;
    const double a[] = {1, 2, 4};              /* (1*2*4)^(1/3) = 8^(1/3) = 2 */
    assert_near(temper_metric_geomean(a, 3), 2.0);
    const double b[] = {0.5, 2, 4, 1};         /* (0.5*2*4*1)^(1/4) = 4^(1/4) = sqrt(2) */
    assert_near(temper_metric_geomean(b, 4), sqrt(2.0));
    const double c[] = {8, 0, -1, NAN, INFINITY, 2}; /* only 8 and 2 count: sqrt(16) = 4 */
    assert_near(temper_metric_geomean(c, 6), 4.0);
    assert_true(isnan(temper_metric_geomean(c + 1, 4))); /* nothing positive and finite */
    assert_true(isnan(temper_metric_geomean(NULL, 0)));
}

/* The fixture: five tasks.
 *   A: 3 samples, 2 correct, best speedup 1.2, expert 1.6x slower than A's best (vs expert 1.6),
 *      run on CUDA (1 sample, correct) and OpenCL (2, 1 correct)
 *   B: 2 samples, none correct, has an expert
 *   C: 4 samples, 1 correct, best speedup 0.6, run on CUDA (1, none correct) and OpenCL (3, 1)
 *   D: 1 sample, correct, best speedup 2.5, vs expert 0.8
 *   E: 5 samples, 3 correct, none timed (best speedup 0) */
static const struct temper_metric_task fixture[] = {
    {3, 2, 1.2, 1, 1.6, 1, 2, 1, 1},
    {2, 0, 0, 1, 0, 0, 2, 0, 0},
    {4, 1, 0.6, 0, 0, 1, 3, 0, 1},
    {1, 1, 2.5, 1, 0.8, 0, 1, 0, 1},
    {5, 3, 0, 0, 0, 0, 5, 0, 3},
};

static void test_fast_p(void **state)
{
    (void)state;
    /* Tasks with a correct sample faster than p times the baseline, over all 5 tasks:
     *   p=0:   A, C, D, E (any correct sample, timed or not)  4/5 = 0.8
     *   p=0.5: A (1.2), C (0.6), D (2.5)                      3/5 = 0.6
     *   p=0.8: A, D                                           2/5 = 0.4
     *   p=1:   A, D                                           2/5 = 0.4
     *   p=1.5: D                                              1/5 = 0.2
     *   p=2:   D                                              1/5 = 0.2
     *   p=2.5: none (strictly faster)                         0 */
    const double p[] = {0, 0.5, 0.8, 1, 1.5, 2, 2.5};
    const double want[] = {0.8, 0.6, 0.4, 0.4, 0.2, 0.2, 0};
    for (int i = 0; i < 7; i++)
        assert_near(temper_metric_fast_p(fixture, 5, p[i]), want[i]);
    assert_true(isnan(temper_metric_fast_p(fixture, 0, 1)));
    /* The bench reports exactly these p values. */
    assert_int_equal(temper_metric_fast_p_count, 6);
    for (int i = 0; i < 6; i++)
        assert_true(temper_metric_fast_p_values[i] == p[i]);
}

static void test_suite_pass_at_k(void **state)
{
    (void)state;
    int counted = -1;
    /* pass@1 = c/n per task: 2/3 + 0 + 1/4 + 1 + 3/5 = 151/60, over 5 tasks: 151/300 */
    assert_near(temper_metric_suite_pass_at_k(fixture, 5, 1, &counted), 151.0 / 300);
    assert_int_equal(counted, 5);
    /* pass@2 over the tasks with 2 samples or more (not D):
     *   A: 1 wrong of 3, so any 2 hold a correct one: 1;  B: 0
     *   C: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5;  E: 1 - C(2,2)/C(5,2) = 1 - 1/10 = 0.9
     *   mean (1 + 0 + 0.5 + 0.9) / 4 = 0.6 */
    assert_near(temper_metric_suite_pass_at_k(fixture, 5, 2, &counted), 0.6);
    assert_int_equal(counted, 4);
    /* pass@5: only E (n=5, c=3): 1 */
    assert_near(temper_metric_suite_pass_at_k(fixture, 5, 5, &counted), 1.0);
    assert_int_equal(counted, 1);
    /* pass@10: no task has 10 samples */
    assert_true(isnan(temper_metric_suite_pass_at_k(fixture, 5, 10, &counted)));
    assert_int_equal(counted, 0);
}

static void test_vs_expert_and_backends(void **state)
{
    (void)state;
    double geomean = 0, faster = 0;
    int experts = 0;
    /* Tasks with an expert: A, B, D. Timed against it with a correct sample: A (1.6), D (0.8):
     * geomean sqrt(1.6 * 0.8) = sqrt(1.28); faster than the expert: A only, 1 of 3. */
    temper_metric_vs_expert(fixture, 5, &geomean, &faster, &experts);
    assert_near(geomean, sqrt(1.28));
    assert_near(faster, 1.0 / 3);
    assert_int_equal(experts, 3);
    temper_metric_vs_expert(fixture + 2, 1, &geomean, &faster, &experts); /* C alone: no expert */
    assert_true(isnan(geomean) && isnan(faster));
    assert_int_equal(experts, 0);
    /* Run on both backends: A (correct on both) and C (correct on OpenCL only): 1 of 2. */
    int counted = -1;
    assert_near(temper_metric_both_backends(fixture, 5, &counted), 0.5);
    assert_int_equal(counted, 2);
    assert_true(isnan(temper_metric_both_backends(fixture + 3, 2, &counted)));
    assert_int_equal(counted, 0);
}

static void test_ratio(void **state)
{
    (void)state;
    struct temper_metric_ratio r;
    /* Rounds x/y: 2/1 = 2, 4/2 = 2, 3/2 = 1.5, and a round where y was not timed (skipped).
     * Sorted 1.5, 2, 2: median 2, min 1.5, max 2, spread (2 - 1.5) / 2 = 0.25. */
    const double x[] = {2, 4, 3, 5}, y[] = {1, 2, 2, 0};
    assert_int_equal(temper_metric_ratio(x, y, 4, &r), 3);
    assert_int_equal(r.rounds, 3);
    assert_near(r.median, 2);
    assert_near(r.min, 1.5);
    assert_near(r.max, 2);
    assert_near(r.spread, 0.25);
    /* An even count takes the mean of the middle two: 1/4, 1/2 -> 0.375. */
    const double x2[] = {1, 1}, y2[] = {4, 2};
    temper_metric_ratio(x2, y2, 2, &r);
    assert_near(r.median, 0.375);
    assert_int_equal(temper_metric_ratio(x + 3, y + 3, 1, &r), 0);
    assert_true(r.rounds == 0 && isnan(r.median) && isnan(r.spread));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass_at_k_closed_form), cmocka_unit_test(test_pass_at_k_known_values),
        cmocka_unit_test(test_geomean),               cmocka_unit_test(test_fast_p),
        cmocka_unit_test(test_suite_pass_at_k),       cmocka_unit_test(test_vs_expert_and_backends),
        cmocka_unit_test(test_ratio),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
