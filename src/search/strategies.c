/* strategies.c: search strategies behind one interface (propose a batch, observe scores):
 * exhaustive, random, genetic with islands and migration, simulated annealing, and a
 * model-based one (a Gaussian-process surrogate with expected improvement), the default.
 * Scores are times (lower is better); a failed point scores INFINITY. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "temper/search.h"
#include "util/util.h"

#define MAX_POINTS 100000 /* points a strategy remembers */

/* What every strategy keeps: the points it proposed, and their scores once known. */
struct history {
    const struct temper_space *s;  /* the space */
    struct temper_rng rng;         /* its randomness */
    int n;                         /* points proposed */
    int cap;                       /* allocated */
    struct temper_config *points;  /* proposed points */
    double *scores;                /* their scores, NAN until observed */
};

static int history_init(struct history *h, const struct temper_space *s, uint64_t seed)
{
    memset(h, 0, sizeof(*h));
    h->s = s;
    temper_rng_seed(&h->rng, seed);
    return 0;
}

static void history_free(struct history *h)
{
    free(h->points);
    free(h->scores);
}

static int history_find(const struct history *h, const struct temper_config *c)
{
    for (int i = 0; i < h->n; i++)
        if (temper_config_equal(h->s, &h->points[i], c))
            return i;
    return -1;
}

/* Records a proposal; -1 if it was proposed before (or memory ran out). */
static int history_add(struct history *h, const struct temper_config *c)
{
    if (history_find(h, c) >= 0 || h->n >= MAX_POINTS)
        return -1;
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 64;
        struct temper_config *p = realloc(h->points, (size_t)cap * sizeof(*p));
        double *sc = realloc(h->scores, (size_t)cap * sizeof(*sc));
        if (p)
            h->points = p;
        if (sc)
            h->scores = sc;
        if (!p || !sc)
            return -1;
        h->cap = cap;
    }
    h->points[h->n] = *c;
    h->scores[h->n] = NAN;
    return h->n++;
}

static void history_observe(struct history *h, const struct temper_config *c, double score)
{
    int i = history_find(h, c);
    if (i < 0)
        i = history_add(h, c);
    if (i >= 0)
        h->scores[i] = score;
}

/* A random valid point not proposed before; -1 if none found. */
static int fresh_sample(struct history *h, struct temper_config *c)
{
    for (int tries = 0; tries < 500; tries++)
        if (!temper_space_sample(h->s, &h->rng, c) && history_find(h, c) < 0)
            return 0;
    return -1;
}

/* ---- exhaustive ---- */

/* State of the exhaustive strategy. */
struct exhaustive {
    struct history h; /* what was proposed */
    int64_t next;     /* next point index to try */
};

static void *exhaustive_init(const struct temper_space *s, uint64_t seed, int budget)
{
    (void)budget;
    struct exhaustive *e = calloc(1, sizeof(*e));
    if (e)
        history_init(&e->h, s, seed);
    return e;
}

static int exhaustive_propose(void *state, struct temper_config *out, int max)
{
    struct exhaustive *e = state;
    int n = 0;
    while (n < max && e->next < (int64_t)e->h.s->size) {
        temper_space_point(e->h.s, e->next++, &out[n]);
        if (temper_space_valid(e->h.s, &out[n]) && history_add(&e->h, &out[n]) >= 0)
            n++;
    }
    return n;
}

static void plain_observe(void *state, const struct temper_config *c, double score)
{
    history_observe(state, c, score); /* every state starts with its history */
}

static void plain_free(void *state)
{
    history_free(state);
    free(state);
}

/* ---- random ---- */

static void *random_init(const struct temper_space *s, uint64_t seed, int budget)
{
    (void)budget;
    struct history *h = calloc(1, sizeof(*h));
    if (h)
        history_init(h, s, seed);
    return h;
}

static int random_propose(void *state, struct temper_config *out, int max)
{
    struct history *h = state;
    int n = 0;
    while (n < max && !fresh_sample(h, &out[n])) {
        history_add(h, &out[n]);
        n++;
    }
    return n;
}

/* ---- genetic, with islands ---- */

#define ISLANDS 4

/* State of the genetic strategy: each island breeds from its own population of evaluated
 * points; every few generations each island's best migrates to the next island. */
struct genetic {
    struct history h;      /* everything proposed and scored */
    int pop;               /* population per island */
    int *island;           /* island of each proposed point (parallel to h.points) */
    int island_cap;        /* allocated */
    int next_island;       /* round robin */
    int born[ISLANDS];     /* children proposed per island, to time migrations */
    int migrants[ISLANDS][8]; /* indices of points that migrated into each island */
    int nmigrants[ISLANDS];   /* how many */
};

static void *genetic_init(const struct temper_space *s, uint64_t seed, int budget)
{
    struct genetic *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    history_init(&g->h, s, seed);
    g->pop = budget / (ISLANDS * 4);
    if (g->pop < 3)
        g->pop = 3;
    if (g->pop > 16)
        g->pop = 16;
    return g;
}

/* The best `pop` scored members of an island (its own points and its migrants), best first. */
static int island_members(struct genetic *g, int isl, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < g->h.n; i++) {
        int member = i < g->island_cap && g->island[i] == isl;
        for (int m = 0; m < g->nmigrants[isl] && !member; m++)
            member = g->migrants[isl][m] == i;
        if (!member || isnan(g->h.scores[i]) || isinf(g->h.scores[i]))
            continue;
        int j;
        if (n < max) {
            j = n++;
        } else if (g->h.scores[i] < g->h.scores[out[max - 1]]) {
            j = max - 1;
        } else {
            continue;
        }
        out[j] = i;
        while (j > 0 && g->h.scores[out[j]] < g->h.scores[out[j - 1]]) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
            j--;
        }
    }
    return n;
}

static int tournament(struct genetic *g, const int *members, int n)
{
    int best = members[temper_rng_next(&g->h.rng) % (uint64_t)n];
    for (int k = 0; k < 2; k++) {
        int c = members[temper_rng_next(&g->h.rng) % (uint64_t)n];
        if (g->h.scores[c] < g->h.scores[best])
            best = c;
    }
    return best;
}

static int genetic_propose(void *state, struct temper_config *out, int max)
{
    struct genetic *g = state;
    const struct temper_space *s = g->h.s;
    int n = 0;
    for (int attempt = 0; n < max && attempt < max * 50; attempt++) {
        int isl = g->next_island;
        g->next_island = (g->next_island + 1) % ISLANDS;
        int members[16];
        int m = island_members(g, isl, members, g->pop);
        struct temper_config child;
        if (m < 2) {
            if (fresh_sample(&g->h, &child))
                break;
        } else {
            const struct temper_config *a = &g->h.points[tournament(g, members, m)];
            const struct temper_config *b = &g->h.points[tournament(g, members, m)];
            for (int d = 0; d < s->ndims; d++)
                child.v[d] = temper_rng_next(&g->h.rng) & 1 ? a->v[d] : b->v[d];
            /* Mutation keeps diversity; a child seen before mutates until it is new. */
            struct temper_config mutated;
            int tries = 0;
            while ((!temper_space_valid(s, &child) || history_find(&g->h, &child) >= 0 ||
                    temper_rng_uniform(&g->h.rng) < 0.3) &&
                   tries++ < 20)
                if (!temper_space_neighbour(s, &g->h.rng, &child, &mutated))
                    child = mutated;
            if (!temper_space_valid(s, &child) || history_find(&g->h, &child) >= 0)
                if (fresh_sample(&g->h, &child))
                    continue;
        }
        int idx = history_add(&g->h, &child);
        if (idx < 0)
            continue;
        if (idx >= g->island_cap) {
            int cap = g->island_cap ? g->island_cap * 2 : 64;
            while (cap <= idx)
                cap *= 2;
            int *p = realloc(g->island, (size_t)cap * sizeof(int));
            if (!p)
                return n;
            g->island = p;
            g->island_cap = cap;
        }
        g->island[idx] = isl;
        out[n++] = child;
        /* Migration: every `pop` births, the island's best joins the next island. */
        if (++g->born[isl] % g->pop == 0 && m > 0) {
            int to = (isl + 1) % ISLANDS;
            g->migrants[to][g->nmigrants[to] % 8] = members[0];
            if (g->nmigrants[to] < 8)
                g->nmigrants[to]++;
        }
    }
    return n;
}

static void genetic_free(void *state)
{
    struct genetic *g = state;
    free(g->island);
    history_free(&g->h);
    free(g);
}

/* ---- simulated annealing ---- */

/* State of simulated annealing: a current point that moves to worse neighbours with a
 * probability that falls as the temperature cools. */
struct anneal {
    struct history h;        /* everything proposed */
    int have_current;        /* 1 once a point scored */
    struct temper_config cur; /* the current point */
    double cur_score;        /* its score */
    double temperature;      /* in units of log(time) */
    double cooling;          /* factor per observation */
};

static void *anneal_init(const struct temper_space *s, uint64_t seed, int budget)
{
    struct anneal *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    history_init(&a->h, s, seed);
    a->temperature = 0.3;
    a->cooling = pow(0.01 / 0.3, 1.0 / (budget > 1 ? budget : 1));
    return a;
}

static int anneal_propose(void *state, struct temper_config *out, int max)
{
    struct anneal *a = state;
    int n = 0;
    for (int tries = 0; n < max && tries < max * 20; tries++) {
        struct temper_config c;
        if (!a->have_current || temper_space_neighbour(a->h.s, &a->h.rng, &a->cur, &c) ||
            history_find(&a->h, &c) >= 0) {
            /* A neighbour seen before: walk from it instead, or restart somewhere new. */
            if (a->have_current && !temper_space_neighbour(a->h.s, &a->h.rng, &a->cur, &c)) {
                struct temper_config c2;
                if (!temper_space_neighbour(a->h.s, &a->h.rng, &c, &c2) && history_find(&a->h, &c2) < 0)
                    c = c2;
                else if (fresh_sample(&a->h, &c))
                    break;
            } else if (fresh_sample(&a->h, &c)) {
                break;
            }
        }
        if (history_add(&a->h, &c) >= 0)
            out[n++] = c;
    }
    return n;
}

static void anneal_observe(void *state, const struct temper_config *c, double score)
{
    struct anneal *a = state;
    history_observe(&a->h, c, score);
    if (isinf(score) || isnan(score))
        return;
    if (!a->have_current || score < a->cur_score ||
        temper_rng_uniform(&a->h.rng) < exp(-(log(score) - log(a->cur_score)) / a->temperature)) {
        a->cur = *c;
        a->cur_score = score;
        a->have_current = 1;
    }
    a->temperature *= a->cooling;
}

/* ---- model-based: Gaussian process with expected improvement ---- */

#define GP_POOL 3000 /* candidate points scored by the acquisition per proposal */

/* State of the model-based strategy. */
struct bayes {
    struct history h;   /* everything proposed and scored */
    int initial;        /* random points before the model is trusted */
    int64_t valid;      /* valid points in the space if few (enumerable), else -1 */
};

static void *bayes_init(const struct temper_space *s, uint64_t seed, int budget)
{
    struct bayes *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    history_init(&b->h, s, seed);
    b->initial = budget / 6;
    if (b->initial < 4)
        b->initial = 4;
    if (b->initial > 12)
        b->initial = 12;
    b->valid = s->size <= GP_POOL ? temper_space_count(s, 0) : -1;
    return b;
}

/* A point as coordinates in [0, 1]: ordered values by position, others one-hot. */
static int encode(const struct temper_space *s, const struct temper_config *c, double *x)
{
    int k = 0;
    for (int d = 0; d < s->ndims; d++) {
        const struct temper_dim *dim = &s->dims[d];
        if (dim->ordered || dim->nvalues <= 2) {
            x[k++] = dim->nvalues > 1 ? (double)c->v[d] / (dim->nvalues - 1) : 0;
        } else {
            for (int v = 0; v < dim->nvalues; v++)
                x[k++] = v == c->v[d] ? 0.7071 : 0;
        }
    }
    return k;
}

static double kernel(const double *a, const double *b, int k, double length)
{
    double d2 = 0;
    for (int i = 0; i < k; i++)
        d2 += (a[i] - b[i]) * (a[i] - b[i]);
    return exp(-0.5 * d2 / (length * length));
}

/* Cholesky of an n x n matrix in place (lower); nonzero if not positive definite. */
static int cholesky(double *m, int n)
{
    for (int j = 0; j < n; j++) {
        double s = m[j * n + j];
        for (int k = 0; k < j; k++)
            s -= m[j * n + k] * m[j * n + k];
        if (s <= 0)
            return -1;
        m[j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = m[i * n + j];
            for (int k = 0; k < j; k++)
                t -= m[i * n + k] * m[j * n + k];
            m[i * n + j] = t / m[j * n + j];
        }
    }
    return 0;
}

/* Solves L L^T x = b given the Cholesky factor. */
static void chol_solve(const double *l, int n, const double *b, double *x)
{
    for (int i = 0; i < n; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++)
            t -= l[i * n + k] * x[k];
        x[i] = t / l[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double t = x[i];
        for (int k = i + 1; k < n; k++)
            t -= l[k * n + i] * x[k];
        x[i] = t / l[i * n + i];
    }
}

/* A fitted model: observations (encoded), standardised targets, factor and weights. */
struct gp {
    int n;          /* observations */
    int k;          /* coordinates per point */
    double *x;      /* n x k */
    double *l;      /* n x n Cholesky factor */
    double *alpha;  /* K^-1 y */
    double length;  /* kernel length scale */
    double mean;    /* of the targets */
    double scale;   /* their standard deviation */
    double best;    /* best standardised target */
};

static void gp_free(struct gp *g)
{
    free(g->x);
    free(g->l);
    free(g->alpha);
}

/* Fits log(score) of the observed points; failures count as a little worse than the worst.
 * The length scale is the one of a few that maximises the marginal likelihood. */
static int gp_fit(struct bayes *b, struct gp *g)
{
    memset(g, 0, sizeof(*g));
    const struct temper_space *s = b->h.s;
    double worst = -INFINITY;
    int n = 0;
    for (int i = 0; i < b->h.n; i++)
        if (!isnan(b->h.scores[i])) {
            n++;
            if (!isinf(b->h.scores[i]))
                worst = fmax(worst, log(b->h.scores[i]));
        }
    if (n < 2 || isinf(worst))
        return -1;
    double xs[64];
    g->k = encode(s, &b->h.points[0], xs);
    g->x = malloc((size_t)n * g->k * sizeof(double));
    double *y = malloc((size_t)n * sizeof(double));
    g->l = malloc((size_t)n * n * sizeof(double));
    g->alpha = malloc((size_t)n * sizeof(double));
    if (!g->x || !y || !g->l || !g->alpha) {
        free(y);
        gp_free(g);
        return -1;
    }
    int j = 0;
    for (int i = 0; i < b->h.n; i++)
        if (!isnan(b->h.scores[i])) {
            encode(s, &b->h.points[i], g->x + (size_t)j * g->k);
            y[j++] = isinf(b->h.scores[i]) ? worst + 0.5 : log(b->h.scores[i]);
        }
    g->n = n;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += y[i];
    g->mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (y[i] - g->mean) * (y[i] - g->mean);
    g->scale = sqrt(sq / n) > 1e-9 ? sqrt(sq / n) : 1;
    g->best = INFINITY;
    for (int i = 0; i < n; i++) {
        y[i] = (y[i] - g->mean) / g->scale;
        g->best = fmin(g->best, y[i]);
    }
    /* Length scale and noise: the pair that maximises the marginal likelihood. Screening times
     * are noisy on a busy machine and exact on a quiet one; the data say which. */
    static const double lengths[] = {0.15, 0.3, 0.6, 1.2};
    static const double noises[] = {1e-2, 0.05, 0.2};
    double best_ll = -INFINITY, best_len = 0.3, best_noise = 1e-2;
    for (size_t ni = 0; ni < sizeof(noises) / sizeof(noises[0]); ni++)
        for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
            for (int r = 0; r < n; r++)
                for (int c = 0; c < n; c++)
                    g->l[r * n + c] = kernel(g->x + (size_t)r * g->k, g->x + (size_t)c * g->k, g->k, lengths[li]) +
                                      (r == c ? noises[ni] : 0);
            if (cholesky(g->l, n))
                continue;
            chol_solve(g->l, n, y, g->alpha);
            double ll = 0;
            for (int i = 0; i < n; i++)
                ll -= 0.5 * y[i] * g->alpha[i] + log(g->l[i * n + i]);
            if (ll > best_ll) {
                best_ll = ll;
                best_len = lengths[li];
                best_noise = noises[ni];
            }
        }
    g->length = best_len;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++)
            g->l[r * n + c] = kernel(g->x + (size_t)r * g->k, g->x + (size_t)c * g->k, g->k, g->length) +
                              (r == c ? best_noise : 0);
    int err = cholesky(g->l, n);
    if (!err)
        chol_solve(g->l, n, y, g->alpha);
    free(y);
    if (err)
        gp_free(g);
    return err;
}

/* Expected improvement (over the best standardised target) of a point. */
static double gp_ei(const struct gp *g, const double *x, double *work)
{
    double mu = 0;
    for (int i = 0; i < g->n; i++) {
        work[i] = kernel(x, g->x + (size_t)i * g->k, g->k, g->length);
        mu += work[i] * g->alpha[i];
    }
    /* variance: k(x,x) - v^T v with L v = k */
    double var = 1.0;
    for (int i = 0; i < g->n; i++) {
        double t = work[i];
        for (int k = 0; k < i; k++)
            t -= g->l[i * g->n + k] * work[g->n + k];
        work[g->n + i] = t / g->l[i * g->n + i];
        var -= work[g->n + i] * work[g->n + i];
    }
    double sd = sqrt(var > 1e-12 ? var : 1e-12);
    double z = (g->best - mu) / sd;
    return (g->best - mu) * 0.5 * erfc(-z / sqrt(2.0)) + sd * exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
}

static int bayes_propose(void *state, struct temper_config *out, int max)
{
    struct bayes *b = state;
    int scored = 0;
    for (int i = 0; i < b->h.n; i++)
        scored += !isnan(b->h.scores[i]);
    int n = 0;
    /* The initial design, and whatever the model cannot yet say, is random. */
    while (n < max && (scored + n < b->initial)) {
        if (fresh_sample(&b->h, &out[n]))
            return n;
        history_add(&b->h, &out[n]);
        n++;
    }
    if (n == max)
        return n;
    struct gp g;
    if (gp_fit(b, &g)) {
        while (n < max && !fresh_sample(&b->h, &out[n])) {
            history_add(&b->h, &out[n]);
            n++;
        }
        return n;
    }
    /* The pool: every unseen valid point of a small space, else random points and neighbours of
     * the best so far. */
    int pool_n = 0;
    struct temper_config *pool = malloc(GP_POOL * sizeof(*pool));
    double *work = malloc((size_t)(2 * g.n + 2) * sizeof(double));
    if (!pool || !work) {
        free(pool);
        free(work);
        gp_free(&g);
        return n;
    }
    if (b->valid >= 0) {
        for (int64_t i = 0; i < (int64_t)b->h.s->size && pool_n < GP_POOL; i++) {
            temper_space_point(b->h.s, i, &pool[pool_n]);
            if (temper_space_valid(b->h.s, &pool[pool_n]) && history_find(&b->h, &pool[pool_n]) < 0)
                pool_n++;
        }
    } else {
        int best = -1;
        for (int i = 0; i < b->h.n; i++)
            if (!isnan(b->h.scores[i]) && (best < 0 || b->h.scores[i] < b->h.scores[best]))
                best = i;
        for (int t = 0; t < GP_POOL * 2 && pool_n < GP_POOL; t++) {
            int ok = t % 3 == 0 && best >= 0 ?
                         !temper_space_neighbour(b->h.s, &b->h.rng, &b->h.points[best], &pool[pool_n]) :
                         !temper_space_sample(b->h.s, &b->h.rng, &pool[pool_n]);
            if (ok && history_find(&b->h, &pool[pool_n]) < 0)
                pool_n++;
        }
    }
    /* Greedy batch: the best expected improvement, then the next best that is not too close. */
    double *ei = malloc((size_t)(pool_n ? pool_n : 1) * sizeof(double));
    double x[64];
    for (int i = 0; ei && i < pool_n; i++) {
        encode(b->h.s, &pool[i], x);
        ei[i] = gp_ei(&g, x, work);
    }
    while (ei && n < max) {
        int pick = -1;
        for (int i = 0; i < pool_n; i++)
            if (ei[i] >= 0 && (pick < 0 || ei[i] > ei[pick]))
                pick = i;
        if (pick < 0)
            break;
        out[n] = pool[pick];
        history_add(&b->h, &out[n]);
        n++;
        /* Points near the pick lose value, so a batch spreads out (a cheap local penalty). */
        double xp[64];
        encode(b->h.s, &pool[pick], xp);
        for (int i = 0; i < pool_n; i++) {
            encode(b->h.s, &pool[i], x);
            ei[i] = i == pick ? -1 : ei[i] * (1 - kernel(x, xp, g.k, g.length));
        }
    }
    free(ei);
    free(pool);
    free(work);
    gp_free(&g);
    while (n < max && !fresh_sample(&b->h, &out[n])) {
        history_add(&b->h, &out[n]);
        n++;
    }
    return n;
}

static const struct temper_strategy_ops strategy_bayes = {
    "bayes", "Gaussian-process surrogate of log time with expected improvement (default)", bayes_init,
    bayes_propose, plain_observe, plain_free};
static const struct temper_strategy_ops strategy_genetic = {
    "genetic", "genetic algorithm: 4 islands, tournament selection, crossover, mutation, migration",
    genetic_init, genetic_propose, plain_observe, genetic_free};
static const struct temper_strategy_ops strategy_anneal = {
    "anneal", "simulated annealing over neighbouring configurations", anneal_init, anneal_propose,
    anneal_observe, plain_free};
static const struct temper_strategy_ops strategy_random = {
    "random", "uniform random sampling without repeats", random_init, random_propose, plain_observe, plain_free};
static const struct temper_strategy_ops strategy_exhaustive = {
    "exhaustive", "every valid configuration, in order", exhaustive_init, exhaustive_propose, plain_observe,
    plain_free};

static const struct temper_strategy_ops *const strategies[] = {
    &strategy_bayes, &strategy_genetic, &strategy_anneal, &strategy_random, &strategy_exhaustive, NULL};

const struct temper_strategy_ops *const *temper_strategies(void)
{
    return strategies;
}

const struct temper_strategy_ops *temper_strategy(const char *name)
{
    for (int i = 0; strategies[i]; i++)
        if (!strcmp(strategies[i]->name, name))
            return strategies[i];
    return NULL;
}
