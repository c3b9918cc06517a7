/* bench.h: the field's metrics over a set of evaluations (pass@k with the unbiased estimator,
 * fast_p, geometric-mean speedups, speed against an expert, the share of tasks correct on both
 * backends), and a bench: those metrics per task and for a suite, computed from result records
 * (docs/result.md) the same way every time, as one JSON object (docs/bench.md). The command line's
 * `temper bench`, `temper report` and an MCP server read the same functions. Nothing here runs a
 * kernel or opens a store. */
#ifndef TEMPER_BENCH_H
#define TEMPER_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* ---- metrics over numbers (no JSON) ---- */

/* The unbiased pass@k estimator of one task with n samples of which c are correct: the chance
 * that at least one of k samples drawn without replacement is correct, 1 - C(n-c,k)/C(n,k),
 * computed as 1 - prod_{i=n-c+1..n} (1 - k/i) so that no binomial overflows. NAN when k < 1,
 * n < k, c < 0 or c > n. */
double temper_metric_pass_at_k(int n, int c, int k);

/* The geometric mean of the positive, finite values among values[0..n-1] (others are skipped);
 * NAN when there are none. */
double temper_metric_geomean(const double *values, int n);

/* What the suite metrics need of one task. */
struct temper_metric_task {
    int samples;                   /* candidates evaluated */
    int correct;                   /* of them, correct */
    double best_speedup;           /* the largest speedup over the baseline of a correct, timed sample; 0: none */
    int has_expert;                /* 1: the task's evaluations were timed against an expert */
    double best_speedup_vs_expert; /* the largest speedup over the expert of a correct sample; 0: none */
    int ran_cuda;                  /* samples evaluated on a CUDA device */
    int ran_opencl;                /* samples evaluated on an OpenCL device */
    int correct_cuda;              /* of them, correct */
    int correct_opencl;            /* of them, correct */
};

/* The mean of pass@k over the tasks with at least k samples; *counted (optional) gets how many
 * those were. NAN when none has k samples. */
double temper_metric_suite_pass_at_k(const struct temper_metric_task *tasks, int ntasks, int k, int *counted);

/* fast_p: the share of all ntasks tasks with a correct sample faster than p times the baseline
 * (best_speedup > p). For p <= 0 every task with a correct sample counts, timed or not (any
 * time is faster than zero times the baseline), so fast_0 is the share of tasks solved. NAN when
 * ntasks is 0. */
double temper_metric_fast_p(const struct temper_metric_task *tasks, int ntasks, double p);

/* Speed against the expert over the tasks that have one (has_expert) and a correct timed
 * sample against it: the geometric mean of their best_speedup_vs_expert (*geomean, NAN when
 * none), the share of the tasks with an expert whose best sample beats it (*faster_share, NAN
 * when no task has an expert), and how many tasks have an expert (*with_expert). */
void temper_metric_vs_expert(const struct temper_metric_task *tasks, int ntasks, double *geomean,
                             double *faster_share, int *with_expert);

/* The share of tasks correct on both backends among the tasks run on both (samples on a CUDA
 * and on an OpenCL device); *counted (optional) gets how many were run on both. NAN when none. */
double temper_metric_both_backends(const struct temper_metric_task *tasks, int ntasks, int *counted);

/* The p values of fast_p a bench reports, in order, and how many there are. */
extern const double temper_metric_fast_p_values[];
extern const int temper_metric_fast_p_count;
/* The k values of pass@k a bench reports (each where some task has at least k samples). */
extern const int temper_metric_pass_k_values[];
extern const int temper_metric_pass_k_count;

/* Two candidates re-timed in rounds: x_ms[i] and y_ms[i] were timed in round i, interleaved. */
struct temper_metric_ratio {
    int rounds;    /* rounds where both were timed */
    double median; /* the median over those rounds of x_ms[i] / y_ms[i]: above 1, x is slower */
    double min;    /* the smallest of those ratios */
    double max;    /* the largest */
    double spread; /* (max - min) / median */
};

/* Fills *out from n rounds (a round where either time is not positive and finite is skipped;
 * with none left, rounds is 0 and the rest NAN); returns the rounds used. */
int temper_metric_ratio(const double *x_ms, const double *y_ms, int n, struct temper_metric_ratio *out);

/* ---- one sample, read out of a result record ---- */

/* What a bench takes of one evaluation's result. */
struct temper_bench_sample {
    int correct;              /* verdict "correct" */
    int timed;                /* 1: it has timings with a speedup */
    double speedup;           /* over the baseline: the geometric mean over its timed bench shapes; 0: untimed */
    double speedup_vs_expert; /* over the expert, the same way; 0: no expert timed */
    double roofline_share;    /* the share of the roofline floor reached at the first bench shape; 0: unknown */
    int backend_cuda;         /* 1: it ran on a CUDA device, 0: OpenCL (from "device") */
};

/* Reads a result record (borrowed) into *sample. */
void temper_bench_sample_read(json_t *result, struct temper_bench_sample *sample);

/* ---- a bench ---- */

/* Builds a bench (docs/bench.md) from results grouped by task: by_task is an object whose keys
 * are task names and whose values are arrays of result records (borrowed), each as the session
 * or the store gives it (with "store_id"; a result without one, such as a file that could not be
 * read, counts as a sample that is not correct). levels (optional, borrowed) maps task names to
 * their level (integers). The result has "tasks" (sorted by name) and "suite"; the caller adds
 * "id" and whatever else it knows (where the samples came from, the device). Caller decrefs;
 * NULL only when out of memory. */
json_t *temper_bench_compute(json_t *by_task, json_t *levels);

/* Compares two benches (borrowed): per task present in either, and for the suite, what changed
 * ({"a", "b", "tasks": [{"task", "a": {...}, "b": {...}, "change": "better"|"worse"|"same"|
 * "added"|"removed"}], "suite": {metric: {"a", "b", "delta"}}}). A task is better when it became
 * correct or its best speedup grew by more than tolerance (a fraction, 0.05 is 5 %), worse the
 * other way. Caller decrefs. */
json_t *temper_bench_compare(json_t *a, json_t *b, double tolerance);

/* Prints a bench as tables for people (per task, then the suite) on out. */
void temper_bench_print(FILE *out, json_t *bench);
/* Prints a comparison from temper_bench_compare as a table for people. */
void temper_bench_print_compare(FILE *out, json_t *cmp);

#endif
