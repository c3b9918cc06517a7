/* test_search.c: the parameter space and the search strategies, on a synthetic landscape whose
 * optimum is known: every strategy proposes only valid, new points; exhaustive covers the space;
 * the model-based default finds the optimum of a smooth landscape with a small budget more often
 * than random search does. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "temper/search.h"
#include "util/util.h"

static const char candidate_src[] =
    "// @temper task softmax\n"
    "// @temper param BLOCK 32 64 128 256 512 1024\n"
    "// @temper param VEC 1 2 4 8\n"
    "// @temper param UNROLL 1 2 4\n"
    "// @temper param MODE fast exact\n"
    "// @temper require BLOCK * VEC <= 2048\n"
    "// @temper launch k grid(R) block(BLOCK)\n"
    "__kernel void k(void) {}\n";

/* A smooth landscape with one optimum at BLOCK=256 VEC=4 UNROLL=2 MODE=fast, regcap=64. */
static double landscape(const struct temper_space *s, const struct temper_config *c)
{
    double t = 1.0;
    t += 0.3 * fabs((double)c->v[0] - 3);
    t += 0.4 * fabs((double)c->v[1] - 2);
    t += 0.2 * fabs((double)c->v[2] - 1);
    t += c->v[3] == 0 ? 0 : 0.5;
    for (int d = 4; d < s->ndims; d++)
        if (!strcmp(s->dims[d].name, "regcap"))
            t += 0.15 * fabs((double)c->v[d] - 2);
    return t;
}

static void load(struct temper_candidate *c, struct temper_space *s, int compiler)
{
    char msg[512];
    assert_int_equal(temper_candidate_parse("t.cl", candidate_src, strlen(candidate_src), c, msg, sizeof(msg)), 0);
    /* pretend it is CUDA so the compiler controls are the register cap, fast math and ptxas's cache
     * operators */
    c->lang = TEMPER_LANG_CUDA;
    assert_int_equal(temper_space_init(s, c, compiler, msg, sizeof(msg)), 0);
}

static void test_space(void **state)
{
    (void)state;
    struct temper_candidate c;
    struct temper_space s;
    load(&c, &s, 1);
    assert_int_equal(s.ndims, 7);
    assert_true(s.size == 6 * 4 * 3 * 2 * 4 * 2 * 3);
    /* BLOCK * VEC <= 2048 removes 1024x4, 1024x8, 512x8: 3 of 24 (BLOCK, VEC) pairs */
    assert_int_equal(temper_space_count(&s, 0), (24 - 3) * 3 * 2 * 4 * 2 * 3);
    assert_true(s.dims[0].ordered && s.dims[1].ordered && !s.dims[3].ordered);
    struct temper_config p;
    memset(&p, 0, sizeof(p));
    p.v[0] = 5; /* BLOCK=1024 */
    p.v[1] = 3; /* VEC=8 */
    assert_false(temper_space_valid(&s, &p));
    p.v[1] = 1; /* VEC=2 */
    p.v[4] = 2; /* regcap=64 */
    p.v[5] = 1; /* fastmath on */
    p.v[6] = 2; /* stores evict-first */
    assert_true(temper_space_valid(&s, &p));
    char opts[512], text[512];
    assert_int_equal(temper_space_options(&s, &p, opts, sizeof(opts)), 0);
    assert_string_equal(opts, "-DBLOCK=1024 -DVEC=2 -DUNROLL=1 -DMODE=fast --maxrregcount=64 --use_fast_math "
                              "-Xptxas -dscm=cs");
    temper_space_format(&s, &p, text, sizeof(text));
    assert_string_equal(text, "BLOCK=1024 VEC=2 UNROLL=1 MODE=fast regcap=64 fastmath=on cache=dscm=cs");
    struct temper_rng rng;
    temper_rng_seed(&rng, 5);
    for (int i = 0; i < 200; i++) {
        struct temper_config a, b;
        assert_int_equal(temper_space_sample(&s, &rng, &a), 0);
        assert_true(temper_space_valid(&s, &a));
        assert_int_equal(temper_space_neighbour(&s, &rng, &a, &b), 0);
        assert_true(temper_space_valid(&s, &b));
        int changed = 0;
        for (int d = 0; d < s.ndims; d++)
            if (a.v[d] != b.v[d]) {
                changed++;
                if (s.dims[d].ordered)
                    assert_int_equal(abs(a.v[d] - b.v[d]), 1);
            }
        assert_int_equal(changed, 1);
    }
    temper_candidate_free(&c);
}

/* Runs a strategy on the landscape; returns the best score found, checks proposals. */
static double run(const struct temper_strategy_ops *ops, const struct temper_space *s, uint64_t seed, int budget,
                  int *proposed)
{
    void *st = ops->init(s, seed, budget);
    assert_non_null(st);
    struct temper_config *seen = calloc((size_t)budget + 8, sizeof(*seen));
    int n = 0;
    double best = INFINITY;
    while (n < budget) {
        struct temper_config c[6];
        int k = ops->propose(st, c, budget - n < 6 ? budget - n : 6);
        if (!k)
            break;
        for (int i = 0; i < k; i++) {
            assert_true(temper_space_valid(s, &c[i]));
            for (int j = 0; j < n; j++)
                assert_false(temper_config_equal(s, &seen[j], &c[i]));
            seen[n++] = c[i];
            double score = landscape(s, &c[i]);
            /* a failing configuration now and then, as real tunes have */
            if (c[i].v[2] == 2 && c[i].v[1] == 0)
                score = INFINITY;
            ops->observe(st, &c[i], score);
            best = fmin(best, score);
        }
    }
    ops->free(st);
    free(seen);
    *proposed = n;
    return best;
}

static void test_strategies_propose_valid_new_points(void **state)
{
    (void)state;
    struct temper_candidate c;
    struct temper_space s;
    load(&c, &s, 1);
    for (int i = 0; temper_strategies()[i]; i++) {
        int n;
        run(temper_strategies()[i], &s, 3, 120, &n);
        assert_int_equal(n, 120);
    }
    temper_candidate_free(&c);
}

static void test_exhaustive_covers_the_space(void **state)
{
    (void)state;
    struct temper_candidate c;
    struct temper_space s;
    load(&c, &s, 0);
    int64_t valid = temper_space_count(&s, 0);
    int n;
    double best = run(temper_strategy("exhaustive"), &s, 1, 100000, &n);
    assert_int_equal(n, valid);
    assert_true(fabs(best - 1.0) < 1e-12);
    temper_candidate_free(&c);
}

/* How many of seeds 1..nseeds find the optimum (within 5 %) with the given budget, for the default
 * strategy and for random search. */
static void optimum_hits(const struct temper_space *s, int budget, int nseeds, int *hits_default, int *hits_random)
{
    int n;
    *hits_default = *hits_random = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)nseeds; seed++) {
        *hits_default += run(temper_strategies()[0], s, seed, budget, &n) <= 1.05;
        *hits_random += run(temper_strategy("random"), s, seed, budget, &n) <= 1.05;
    }
}

/* Budgets stay small (the model's cost grows with the cube of the points seen; a budget of 300
 * took minutes under the sanitizers), and both ways the model picks from are covered: every
 * unseen point of a small space, and sampled points and neighbours in a large one. */
static void test_default_beats_random_on_a_smooth_landscape(void **state)
{
    (void)state;
    assert_string_equal(temper_strategies()[0]->name, "bayes");
    struct temper_candidate c;
    struct temper_space s;
    int hits_default, hits_random;
    /* Small: 126 valid points (no compiler controls), one optimum, a fifth of the space. */
    load(&c, &s, 0);
    assert_int_equal(temper_space_count(&s, 0), 126);
    optimum_hits(&s, 25, 10, &hits_default, &hits_random);
    if (hits_default < 9 || hits_default <= hits_random)
        fail_msg("small space: default found the optimum for %d of 10 seeds, random for %d", hits_default,
                 hits_random);
    temper_candidate_free(&c);
    /* Large: 3024 valid points, 6 optimal (fast math and cache operators do not matter here),
     * 40 evaluations, where random search finds one 8 % of the time. */
    load(&c, &s, 1);
    assert_int_equal(temper_space_count(&s, 0), 3024);
    optimum_hits(&s, 40, 10, &hits_default, &hits_random);
    if (hits_default < 5 || hits_default <= hits_random)
        fail_msg("large space: default found the optimum for %d of 10 seeds, random for %d", hits_default,
                 hits_random);
    temper_candidate_free(&c);
}

static void test_unknown_strategy(void **state)
{
    (void)state;
    assert_null(temper_strategy("hillclimb"));
    assert_non_null(temper_strategy("genetic"));
    assert_non_null(temper_strategy("anneal"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space),
        cmocka_unit_test(test_strategies_propose_valid_new_points),
        cmocka_unit_test(test_exhaustive_covers_the_space),
        cmocka_unit_test(test_default_beats_random_on_a_smooth_landscape),
        cmocka_unit_test(test_unknown_strategy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
