/* population.c: the agent's population of correct kernels, on islands that evolve apart and
 * trade their best now and then; within an island, kernels with the same features (tiling,
 * vector width, shared memory, tensor cores, shuffles, launches) compete, so that different
 * ways of writing the kernel stay alive next to the fastest one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"

int agent_pop_init(struct agent_population *p, int nislands, int cap)
{
    memset(p, 0, sizeof(*p));
    p->count = calloc((size_t)nislands, sizeof(int));
    p->m = calloc((size_t)nislands * (size_t)cap, sizeof(struct agent_member));
    if (!p->count || !p->m) {
        free(p->count);
        free(p->m);
        return -1;
    }
    p->nislands = nislands;
    p->cap = cap;
    return 0;
}

static void member_clear(struct agent_member *m)
{
    free(m->source);
    json_decref(m->result);
    memset(m, 0, sizeof(*m));
}

void agent_pop_free(struct agent_population *p)
{
    for (int i = 0; p->m && i < p->nislands * p->cap; i++)
        member_clear(&p->m[i]);
    free(p->m);
    free(p->count);
    memset(p, 0, sizeof(*p));
}

static int same_features(const struct temper_kernel_features *a, const struct temper_kernel_features *b)
{
    return a->tiled == b->tiled && a->vector_width == b->vector_width && a->shared_mem == b->shared_mem &&
           a->tensor_cores == b->tensor_cores && a->warp_shuffle == b->warp_shuffle && a->launches == b->launches;
}

static int member_set(struct agent_member *m, int64_t eval_id, const char *source, json_t *result, double ms,
                      const struct temper_kernel_features *f, const char *made_by)
{
    char *copy = strdup(source);
    if (!copy)
        return 0;
    member_clear(m);
    m->eval_id = eval_id;
    m->source = copy;
    m->result = json_incref(result);
    m->ms = ms;
    m->f = *f;
    strncpy(m->made_by, made_by, sizeof(m->made_by) - 1);
    return 1;
}

int agent_pop_offer(struct agent_population *p, int island, int64_t eval_id, const char *source, json_t *result,
                    double ms, const char *made_by)
{
    if (isnan(ms))
        ms = INFINITY;
    struct temper_kernel_features f;
    temper_kernel_features_detect(source, &f);
    struct agent_member *is = &p->m[island * p->cap];
    int n = p->count[island], slowest = -1;
    for (int k = 0; k < n; k++) {
        if (is[k].eval_id == eval_id || (is[k].source && !strcmp(is[k].source, source) && is[k].ms <= ms))
            return 0;
        if (same_features(&is[k].f, &f))
            return ms < is[k].ms ? member_set(&is[k], eval_id, source, result, ms, &f, made_by) : 0;
        if (slowest < 0 || is[k].ms > is[slowest].ms)
            slowest = k;
    }
    if (n < p->cap) {
        if (!member_set(&is[n], eval_id, source, result, ms, &f, made_by))
            return 0;
        p->count[island]++;
        return 1;
    }
    return slowest >= 0 && ms < is[slowest].ms ? member_set(&is[slowest], eval_id, source, result, ms, &f, made_by) : 0;
}

const struct agent_member *agent_pop_parent(const struct agent_population *p, int island, struct temper_rng *rng)
{
    int n = p->count[island];
    if (!n)
        return NULL;
    const struct agent_member *is = &p->m[island * p->cap];
    const struct agent_member *a = &is[temper_rng_next(rng) % (uint64_t)n];
    const struct agent_member *b = &is[temper_rng_next(rng) % (uint64_t)n];
    return b->ms < a->ms ? b : a;
}

void agent_pop_migrate(struct agent_population *p)
{
    if (p->nislands < 2)
        return;
    /* the best of each island, taken before any moves, so that one migrant does not travel on */
    int *best = calloc((size_t)p->nislands, sizeof(int));
    if (!best)
        return;
    for (int i = 0; i < p->nislands; i++) {
        best[i] = -1;
        for (int k = 0; k < p->count[i]; k++)
            if (best[i] < 0 || p->m[i * p->cap + k].ms < p->m[i * p->cap + best[i]].ms)
                best[i] = k;
    }
    struct agent_member *moving = calloc((size_t)p->nislands, sizeof(*moving));
    for (int i = 0; moving && i < p->nislands; i++)
        if (best[i] >= 0) {
            const struct agent_member *m = &p->m[i * p->cap + best[i]];
            moving[i] = *m;
            moving[i].source = strdup(m->source);
            moving[i].result = json_incref(m->result);
        }
    for (int i = 0; moving && i < p->nislands; i++)
        if (moving[i].source) {
            agent_pop_offer(p, (i + 1) % p->nislands, moving[i].eval_id, moving[i].source, moving[i].result,
                            moving[i].ms, moving[i].made_by);
            member_clear(&moving[i]);
        }
    free(moving);
    free(best);
}
