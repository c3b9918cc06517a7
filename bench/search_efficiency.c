/* search_efficiency.c: how quickly each search strategy finds a fast configuration, measured by
 * replaying the strategies on a landscape measured exhaustively on a device. An exhaustive tune
 * (`temper tune FILE --strategy exhaustive`) records every configuration's time in the store;
 * this program then runs every strategy with a budget of a fraction of the space, over several
 * seeds, taking each proposed point's time from the store instead of the device, and reports
 * how close each came to the exhaustive best.
 *
 * usage: search_efficiency STORE.db DEVICE FRACTION SEEDS COMPILER_KNOBS CANDIDATE...
 *        (e.g. search_efficiency temper.db cuda:0 0.2 5 1 tasks/L1/softmax/fast.cu; COMPILER_KNOBS
 *        is 1 if the exhaustive tune searched the compiler's controls too, 0 if it ran with
 *        --no-compiler-knobs) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune.h"
#include "temper/store.h"
#include "util/util.h"

/* The measured landscape: options text to time. */
struct landscape {
    int n;            /* entries */
    char **options;   /* each configuration's compiler options */
    double *score;    /* its screening time, INFINITY if it failed */
};

static double lookup(const struct landscape *l, const char *options)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->options[i], options))
            return l->score[i];
    return NAN;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: search_efficiency STORE.db DEVICE FRACTION SEEDS COMPILER_KNOBS CANDIDATE...\n");
        return 2;
    }
    const char *device = argv[2];
    double fraction = atof(argv[3]);
    int seeds = atoi(argv[4]);
    int compiler_knobs = atoi(argv[5]);
    char msg[2048];
    struct temper_store *store;
    if (temper_store_open(argv[1], &store, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    printf("%-34s %-11s %6s %6s %7s %7s %10s %10s %12s\n", "candidate (space)", "strategy", "budget", "seeds",
           "within5", "within1", "best/opt", "worst/opt", "evals to 5%");
    int failures = 0;
    for (int ci = 6; ci < argc; ci++) {
        struct temper_candidate cand;
        if (temper_candidate_load(argv[ci], &cand, msg, sizeof(msg))) {
            fprintf(stderr, "%s\n", msg);
            return 2;
        }
        char hex[17];
        temper_hash_hex(cand.source_hash, hex);
        char *source = NULL;
        json_t *results = temper_store_results(store, hex, device, &source);
        free(source);
        struct landscape l = {0, NULL, NULL};
        size_t nr = json_array_size(results);
        l.options = calloc(nr + 1, sizeof(char *));
        l.score = calloc(nr + 1, sizeof(double));
        double opt = INFINITY;
        for (size_t i = 0; i < nr; i++) {
            json_t *r = json_array_get(results, i);
            const char *phase = json_string_value(json_object_get(r, "tune_phase"));
            const char *options = json_string_value(json_object_get(r, "options"));
            if (!options || (phase && strcmp(phase, "screen")) || !isnan(lookup(&l, options)))
                continue;
            l.options[l.n] = strdup(options);
            l.score[l.n] = temper_result_score(r);
            opt = fmin(opt, l.score[l.n]);
            l.n++;
        }
        struct temper_space space;
        if (temper_space_init(&space, &cand, compiler_knobs, msg, sizeof(msg))) {
            fprintf(stderr, "%s\n", msg);
            return 2;
        }
        int64_t valid = temper_space_count(&space, 0);
        int budget = (int)ceil(fraction * (double)valid);
        char label[64];
        snprintf(label, sizeof(label), "%.28s (%lld)", argv[ci] + (strlen(argv[ci]) > 28 ? strlen(argv[ci]) - 28 : 0),
                 (long long)valid);
        if (l.n < valid || isinf(opt)) {
            printf("%-34s measured %d of %lld configurations: run the exhaustive tune first\n", label, l.n,
                   (long long)valid);
            failures++;
            continue;
        }
        /* How hard the landscape is: a strategy that samples blindly reaches the 5 % band in about
         * 1 / share evaluations. */
        int near5 = 0, near1 = 0;
        double worst_cfg = 0;
        for (int i = 0; i < l.n; i++) {
            near5 += l.score[i] <= 1.05 * opt;
            near1 += l.score[i] <= 1.01 * opt;
            if (isfinite(l.score[i]))
                worst_cfg = fmax(worst_cfg, l.score[i]);
        }
        printf("%-34s landscape: %d of %d configurations within 5 %% of the best (%.1f %%), %d within 1 %%; the "
               "slowest %.2fx the best\n",
               label, near5, l.n, 100.0 * near5 / l.n, near1, worst_cfg / opt);
        for (int si = 0; temper_strategies()[si]; si++) {
            const struct temper_strategy_ops *ops = temper_strategies()[si];
            double ratio[64], reach[64];
            int within = 0, within1 = 0, missing = 0;
            for (int seed = 1; seed <= seeds && seed <= 64; seed++) {
                void *st = ops->init(&space, (uint64_t)seed, budget);
                double best = INFINITY;
                int evals = 0, reached = 0;
                while (evals < budget) {
                    struct temper_config c[8];
                    int want = budget - evals < 8 ? budget - evals : 8;
                    int n = ops->propose(st, c, want);
                    if (!n)
                        break;
                    for (int k = 0; k < n; k++) {
                        char options[4096];
                        temper_space_options(&space, &c[k], options, sizeof(options));
                        double sc = lookup(&l, options);
                        if (isnan(sc)) {
                            missing++;
                            sc = INFINITY;
                        }
                        ops->observe(st, &c[k], sc);
                        evals++;
                        best = fmin(best, sc);
                        if (!reached && best <= 1.05 * opt)
                            reached = evals;
                    }
                }
                ops->free(st);
                ratio[seed - 1] = best / opt;
                reach[seed - 1] = reached ? reached : INFINITY;
                within += best <= 1.05 * opt;
                within1 += best <= 1.01 * opt;
            }
            int n = seeds < 64 ? seeds : 64;
            double worst = 0;
            for (int k = 0; k < n; k++)
                worst = fmax(worst, ratio[k]);
            double med_ratio = median(ratio, n), med_reach = median(reach, n);
            char reach_text[32];
            if (isinf(med_reach))
                snprintf(reach_text, sizeof(reach_text), "-");
            else
                snprintf(reach_text, sizeof(reach_text), "%.0f", med_reach);
            printf("%-34s %-11s %6d %6d %4d/%-2d %4d/%-2d %10.4f %10.4f %12s%s\n", "", ops->name, budget, n,
                   within, n, within1, n, med_ratio, worst, reach_text,
                   missing ? "  (points missing from the store)" : "");
        }
        for (int i = 0; i < l.n; i++)
            free(l.options[i]);
        free(l.options);
        free(l.score);
        json_decref(results);
        temper_candidate_free(&cand);
    }
    temper_store_close(store);
    return failures ? 1 : 0;
}
