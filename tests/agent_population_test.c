/* agent_population_test.c: the agent's population (src/agent/population.c, an internal part of
 * the library, hence a test of its own beside the public unit tests): kernels with the same
 * features compete and the faster stays, different ones live side by side, a full island drops
 * its slowest for a faster newcomer, a parent is always a member and the faster of two draws,
 * and migration carries an island's fastest to the next. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"

static int failures;
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* Kernels whose text gives different features. */
static const char *const scalar = "__kernel void k() { }";
static const char *const scalar2 = "__kernel void k() { /* another */ }";
static const char *const vec4 = "__kernel void k() { float4 v; }";
static const char *const shared = "__kernel void k() { __local float b[64]; }";
static const char *const tiled = "__kernel void k() { __local float t[16][17]; }";

static double ms_of(const struct agent_population *p, int island, int k)
{
    return p->m[island * p->cap + k].ms;
}

int main(void)
{
    struct agent_population p;
    CHECK(agent_pop_init(&p, 2, 3) == 0);
    json_t *r = json_object();
    /* same features: the faster replaces, the slower is refused */
    CHECK(agent_pop_offer(&p, 0, 1, scalar, r, 10, "coder") == 1);
    CHECK(agent_pop_offer(&p, 0, 2, scalar2, r, 12, "coder") == 0);
    CHECK(agent_pop_offer(&p, 0, 3, scalar2, r, 8, "coder") == 1);
    CHECK(p.count[0] == 1 && p.m[0].eval_id == 3 && ms_of(&p, 0, 0) == 8);
    /* different features live side by side, even when slower */
    CHECK(agent_pop_offer(&p, 0, 4, vec4, r, 20, "coder") == 1);
    CHECK(agent_pop_offer(&p, 0, 5, shared, r, 30, "debugger") == 1);
    CHECK(p.count[0] == 3);
    /* full: a newcomer of new features replaces the slowest only when faster */
    CHECK(agent_pop_offer(&p, 0, 6, tiled, r, 40, "coder") == 0);
    CHECK(agent_pop_offer(&p, 0, 7, tiled, r, 25, "coder") == 1);
    int has5 = 0, has7 = 0;
    for (int k = 0; k < p.count[0]; k++) {
        has5 |= p.m[k].eval_id == 5;
        has7 |= p.m[k].eval_id == 7;
    }
    CHECK(!has5 && has7);
    /* the same evaluation is not taken twice; an untimed kernel (NAN) counts as the slowest */
    CHECK(agent_pop_offer(&p, 0, 7, tiled, r, 25, "coder") == 0);
    CHECK(agent_pop_offer(&p, 1, 8, scalar, r, NAN, "start") == 1 && isinf(ms_of(&p, 1, 0)));
    /* parents: members, and the faster of the two drawn wins */
    struct temper_rng rng;
    temper_rng_seed(&rng, 5);
    int fastest = 0;
    for (int i = 0; i < 200; i++) {
        const struct agent_member *m = agent_pop_parent(&p, 0, &rng);
        CHECK(m && m >= &p.m[0] && m < &p.m[p.count[0]]);
        fastest += m && m->eval_id == 3;
    }
    /* the fastest of three is the parent unless both draws miss it: 5/9 of the time */
    CHECK(fastest > 80 && fastest < 150);
    struct agent_population empty;
    CHECK(agent_pop_init(&empty, 1, 2) == 0);
    CHECK(agent_pop_parent(&empty, 0, &rng) == NULL);
    agent_pop_free(&empty);
    /* migration: island 0's fastest goes to island 1 (whose untimed member it beats on features
     * it shares: both are scalar), island 1's to island 0 (refused: slower, same features) */
    agent_pop_migrate(&p);
    CHECK(p.count[1] == 1 && p.m[1 * p.cap].eval_id == 3 && strcmp(p.m[1 * p.cap].source, scalar2) == 0);
    CHECK(p.count[0] == 3);
    agent_pop_free(&p);
    json_decref(r);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    else
        printf("population: ok\n");
    return failures ? 1 : 0;
}
