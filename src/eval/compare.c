/* compare.c: element-by-element comparison of outputs with what they should be, and verdict
 * names. Every element is compared; nothing is sampled. */
#include <math.h>
#include <string.h>

#include "eval/eval_internal.h"
#include "util/util.h"

static const char *const verdict_names[] = {"correct", "incorrect", "compile_error", "runtime_error", "timeout",
                                            "invalid"};

const char *temper_verdict_name(enum temper_verdict v)
{
    return verdict_names[v];
}

int temper_verdict_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof(verdict_names) / sizeof(verdict_names[0])); i++)
        if (!strcmp(name, verdict_names[i]))
            return i;
    return -1;
}

/* One element: its error recorded in r, and counted when it is outside the tolerance. */
static inline void compare_one(struct temper_compare *r, int64_t i, double got, double w, double atol, double rtol)
{
    int bad;
    if (!isfinite(w)) {
        bad = isnan(w) ? !isnan(got) : got != w;
    } else if (!isfinite(got)) {
        bad = 1;
        r->nonfinite++;
    } else {
        double err = fabs(got - w);
        if (err > r->max_abs_err)
            r->max_abs_err = err;
        if (w != 0 && err / fabs(w) > r->max_rel_err)
            r->max_rel_err = err / fabs(w);
        bad = !(err <= atol + rtol * fabs(w));
    }
    if (bad) {
        if (r->first_bad < 0) {
            r->first_bad = i;
            r->first_got = got;
            r->first_want = w;
        }
        r->mismatches++;
    }
}

static void compare_start(struct temper_compare *r, int64_t n)
{
    memset(r, 0, sizeof(*r));
    r->count = n;
    r->first_bad = -1;
}

/* The loops below count into a local copy of the result, written back once: kept in registers,
 * it costs no memory access per element (and, in the sanitizer build, no check of one). */
void temper_compare_values(enum temper_dtype t, const void *out, const double *want, int64_t n, double atol,
                           double rtol, struct temper_compare *r)
{
    struct temper_compare acc;
    compare_start(&acc, n);
    for (int64_t i = 0; i < n; i++)
        compare_one(&acc, i, temper_dtype_load(t, out, (size_t)i), want[i], atol, rtol);
    *r = acc;
}

void temper_compare_arrays(enum temper_dtype t, const void *out, const void *want, int64_t n, double atol, double rtol,
                           struct temper_compare *r)
{
    struct temper_compare acc;
    compare_start(&acc, n);
    if (t == TEMPER_DTYPE_F32) {
        const float *o = out, *w = want;
        for (int64_t i = 0; i < n; i++)
            compare_one(&acc, i, o[i], w[i], atol, rtol);
    } else {
        for (int64_t i = 0; i < n; i++)
            compare_one(&acc, i, temper_dtype_load(t, out, (size_t)i), temper_dtype_load(t, want, (size_t)i), atol,
                        rtol);
    }
    *r = acc;
}
