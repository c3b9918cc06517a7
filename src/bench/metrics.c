/* metrics.c: the field's metrics over numbers: pass@k with the unbiased estimator, fast_p,
 * geometric means, speed against an expert and the share of tasks correct on both backends
 * (docs/bench.md defines each). Pure functions: no JSON, no store. */
#include <math.h>
#include <stdlib.h>

#include "temper/bench.h"

const double temper_metric_fast_p_values[] = {0, 0.5, 0.8, 1, 1.5, 2};
const int temper_metric_fast_p_count = sizeof(temper_metric_fast_p_values) / sizeof(temper_metric_fast_p_values[0]);
const int temper_metric_pass_k_values[] = {1, 5, 10};
const int temper_metric_pass_k_count = sizeof(temper_metric_pass_k_values) / sizeof(temper_metric_pass_k_values[0]);

double temper_metric_pass_at_k(int n, int c, int k)
{
    if (k < 1 || n < k || c < 0 || c > n)
        return NAN;
    /* Every draw of k holds a correct sample when fewer than k are wrong. */
    if (n - c < k)
        return 1.0;
    /* C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i): each factor is in [0, 1), so the product
     * neither overflows nor loses more than a few ulps per factor. */
    double none = 1.0;
    for (int i = n - c + 1; i <= n; i++)
        none *= 1.0 - (double)k / i;
    return 1.0 - none;
}

double temper_metric_geomean(const double *values, int n)
{
    double log_sum = 0;
    int used = 0;
    for (int i = 0; i < n; i++)
        if (values[i] > 0 && isfinite(values[i])) {
            log_sum += log(values[i]);
            used++;
        }
    return used ? exp(log_sum / used) : NAN;
}

double temper_metric_suite_pass_at_k(const struct temper_metric_task *tasks, int ntasks, int k, int *counted)
{
    double sum = 0;
    int used = 0;
    for (int i = 0; i < ntasks; i++) {
        double p = temper_metric_pass_at_k(tasks[i].samples, tasks[i].correct, k);
        if (!isnan(p)) {
            sum += p;
            used++;
        }
    }
    if (counted)
        *counted = used;
    return used ? sum / used : NAN;
}

double temper_metric_fast_p(const struct temper_metric_task *tasks, int ntasks, double p)
{
    if (ntasks <= 0)
        return NAN;
    int fast = 0;
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].correct > 0 && (p <= 0 || tasks[i].best_speedup > p))
            fast++;
    return (double)fast / ntasks;
}

void temper_metric_vs_expert(const struct temper_metric_task *tasks, int ntasks, double *geomean,
                             double *faster_share, int *with_expert)
{
    double log_sum = 0;
    int timed = 0, experts = 0, faster = 0;
    for (int i = 0; i < ntasks; i++) {
        if (!tasks[i].has_expert)
            continue;
        experts++;
        double v = tasks[i].best_speedup_vs_expert;
        if (tasks[i].correct > 0 && v > 0 && isfinite(v)) {
            log_sum += log(v);
            timed++;
            faster += v > 1;
        }
    }
    if (geomean)
        *geomean = timed ? exp(log_sum / timed) : NAN;
    if (faster_share)
        *faster_share = experts ? (double)faster / experts : NAN;
    if (with_expert)
        *with_expert = experts;
}

double temper_metric_both_backends(const struct temper_metric_task *tasks, int ntasks, int *counted)
{
    int both = 0, correct = 0;
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].ran_cuda > 0 && tasks[i].ran_opencl > 0) {
            both++;
            correct += tasks[i].correct_cuda > 0 && tasks[i].correct_opencl > 0;
        }
    if (counted)
        *counted = both;
    return both ? (double)correct / both : NAN;
}

/* Sorts a few doubles in place (insertion sort: rounds are few). */
static void sort_doubles(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

int temper_metric_ratio(const double *x_ms, const double *y_ms, int n, struct temper_metric_ratio *out)
{
    double stack[64];
    double *r = n <= 64 ? stack : malloc((size_t)n * sizeof(*r));
    out->rounds = 0;
    out->median = out->min = out->max = out->spread = NAN;
    if (!r)
        return 0;
    int used = 0;
    for (int i = 0; i < n; i++)
        if (x_ms[i] > 0 && y_ms[i] > 0 && isfinite(x_ms[i]) && isfinite(y_ms[i]))
            r[used++] = x_ms[i] / y_ms[i];
    if (used) {
        sort_doubles(r, used);
        out->rounds = used;
        out->median = used % 2 ? r[used / 2] : 0.5 * (r[used / 2 - 1] + r[used / 2]);
        out->min = r[0];
        out->max = r[used - 1];
        out->spread = (out->max - out->min) / out->median;
    }
    if (r != stack)
        free(r);
    return used;
}
