/* eval_print.c: a result as people read it (temper_eval_print): the verdict, the message, the
 * deep checks' findings and each timing with its place on the roofline. The result is read once,
 * leniently (temper_result_from_stored: a printed result may come from the store), and printed
 * from struct temper_result; a null number prints as 0, as it always did. */
#include <stdio.h>
#include <string.h>

#include "eval/eval_internal.h"
#include "temper/result.h"

static double real_or_0(struct temper_opt_f64 x)
{
    return x.set ? x.v : 0;
}

static long long int_or_0(struct temper_opt_i64 x)
{
    return x.set ? (long long)x.v : 0;
}

/* "pass", "FAIL", or "error" where the check did not say. */
static const char *passed_text(struct temper_opt_bool passed)
{
    return !passed.set ? "error" : passed.v ? "pass" : "FAIL";
}

/* "  12 of 4096 outputs NaN or inf (...)" for a check whose outputs were not all finite where
 * the answer is, else "": its max errors are over the finite ones only, so that a row of NaN
 * does not read as a near pass. */
static void nonfinite_note(struct temper_opt_i64 bad, struct temper_opt_i64 all, char *out, size_t size)
{
    out[0] = 0;
    if (bad.set && bad.v > 0)
        snprintf(out, size, "  %lld of %lld outputs NaN or inf (the errors are over the finite ones)", (long long)bad.v,
                 int_or_0(all));
}

/* The candidate, its task, device and knobs. */
static void print_header(FILE *out, const struct temper_result *r)
{
    fprintf(out, "candidate  %s\n", r->candidate);
    if (r->task && *r->task)
        fprintf(out, "task       %s\n", r->task);
    const struct temper_result_device *dev = r->device_info;
    if (dev)
        fprintf(out, "device     %s  %s (%s)\n", dev->id, dev->name, dev->class);
    if (json_object_size(r->knobs)) {
        fprintf(out, "knobs     ");
        const char *k;
        json_t *v;
        json_object_foreach(r->knobs, k, v) fprintf(out, " %s=%s", k, json_string_value(v));
        fprintf(out, "\n");
    }
}

/* The sanitizers' summary, then a table of each one's findings. san is the result's "sanitize"
 * object (its tools' findings are JSON the reader keeps as it is). */
static void print_sanitize(FILE *out, json_t *san)
{
    char summary[1024];
    temper_sanitize_summary(san, summary, sizeof(summary));
    fprintf(out, "sanitize   %s\n", summary);
    const char *tool;
    json_t *t;
    int header = 0;
    json_object_foreach(san, tool, t)
    {
        if (!json_is_object(t))
            continue;
        json_t *h = json_object_get(t, "hazards"), *n = json_object_get(t, "hazard_instances");
        if (!header++)
            fprintf(out, "\n%-12s %8s %8s %12s %12s  %s\n", "sanitizer", "errors", "warnings", "write-write",
                    "read-write", "status");
        char ww[48] = "-", rw[48] = "-";
        if (h) {
            snprintf(ww, sizeof(ww), "%lld (%lld)", (long long)json_integer_value(json_object_get(h, "write_write")),
                     (long long)json_integer_value(json_object_get(n, "write_write")));
            snprintf(rw, sizeof(rw), "%lld (%lld)", (long long)json_integer_value(json_object_get(h, "read_write")),
                     (long long)json_integer_value(json_object_get(n, "read_write")));
        }
        fprintf(out, "%-12s %8lld %8lld %12s %12s  %s\n", tool,
                (long long)json_integer_value(json_object_get(t, "errors")),
                (long long)json_integer_value(json_object_get(t, "warnings")), ww, rw,
                json_is_string(json_object_get(t, "incomplete")) ? json_string_value(json_object_get(t, "incomplete"))
                                                                 : "complete");
    }
}

/* A row for each check shape and seed, then one for each bench shape. */
static void print_checks(FILE *out, const struct temper_result *r)
{
    char note[128];
    if (r->checks.n)
        fprintf(out, "\n%-28s %-7s %-6s %12s %12s %10s\n", "check shape", "seed", "result", "max abs err",
                "max rel err", "mismatches");
    for (size_t i = 0; i < r->checks.n; i++) {
        const struct temper_result_check *c = &r->checks.v[i];
        nonfinite_note(c->nonfinite, c->elements, note, sizeof(note));
        fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld%s%s\n", c->shape, c->seed, passed_text(c->passed),
                real_or_0(c->max_abs_err), real_or_0(c->max_rel_err), int_or_0(c->mismatches), note,
                c->deterministic.set && !c->deterministic.v ? "  nondeterministic" : "");
    }
    for (size_t i = 0; i < r->bench_checks.n; i++) {
        const struct temper_result_bench_check *c = &r->bench_checks.v[i];
        nonfinite_note(c->nonfinite, c->elements, note, sizeof(note));
        fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld%s\n", c->shape, "bench", passed_text(c->passed),
                real_or_0(c->max_abs_err), real_or_0(c->max_rel_err), int_or_0(c->mismatches), note);
    }
}

/* A row for each timed shape, with its place on the roofline, and under the first the ceilings
 * measured. */
static void print_timings(FILE *out, const struct temper_result *r)
{
    fprintf(out, "\n%-24s %10s %8s %7s %10s %9s %9s %8s %8s\n", "timed at", "median ms", "spread", "samples", "GB/s",
            "TFLOP/s", "roofline", "base ms", "speedup");
    for (size_t i = 0; i < r->timings.n; i++) {
        const struct temper_result_timing *t = &r->timings.v[i];
        char share_text[32];
        if (t->roofline_share.set)
            snprintf(share_text, sizeof(share_text), "%.1f%%", t->roofline_share.v * 100);
        else
            snprintf(share_text, sizeof(share_text), "-");
        fprintf(out, "%-24s %10.4g %7.1f%% %7lld %10.1f %9.3f %9s %8.4g %7.2fx%s\n", t->shape, real_or_0(t->median_ms),
                real_or_0(t->spread) * 100, int_or_0(t->samples), real_or_0(t->gbps), real_or_0(t->tflops), share_text,
                real_or_0(t->baseline_median_ms), real_or_0(t->speedup),
                t->impossible.set && t->impossible.v ? "  IMPOSSIBLE" : "");
        if (t->warning)
            fprintf(out, "%-24s warning: %s\n", "", t->warning);
        /* ceilings is the device's calibration (temper calibrate --json), not a result record */
        json_t *ceil = t->ceilings;
        if (json_is_object(ceil) && t == temper_result_first_timing(r))
            fprintf(out, "%-24s measured ceilings: copy %.1f GB/s, FMA %.1f GFLOP/s; %s-bound\n", "",
                    json_number_value(json_object_get(ceil, "copy_gbs")),
                    json_number_value(json_object_get(ceil, "fma_gflops")), t->bound);
    }
}

/* The compiler's log after a compile error, then where the time went. */
static void print_footer(FILE *out, const struct temper_result *r)
{
    if (r->verdict && !strcmp(r->verdict, "compile_error") && r->compile_log && *r->compile_log)
        fprintf(out, "\ncompiler log:\n%s\n", r->compile_log);
    const struct temper_result_phases *ph = r->phases_ms;
    if (ph)
        fprintf(out,
                "\ntime       %.0f ms (build %.0f, inputs %.0f, reference %.0f, device runs %.0f, compare %.0f, "
                "timing %.0f)\n",
                real_or_0(r->elapsed_ms), real_or_0(ph->build), real_or_0(ph->inputs), real_or_0(ph->reference),
                real_or_0(ph->device), real_or_0(ph->compare), real_or_0(ph->timing));
}

void temper_eval_print(FILE *out, json_t *result)
{
    struct temper_result r;
    if (temper_result_from_stored(result, &r)) {
        fprintf(stderr, "temper: out of memory reading the result\n");
        return;
    }
    print_header(out, &r);
    fprintf(out, "verdict    %s\n", r.verdict ? r.verdict : "?");
    fprintf(out, "message    %s\n", r.message);
    if (json_is_object(r.sanitize))
        print_sanitize(out, r.sanitize);
    print_checks(out, &r);
    if (r.timings.n)
        print_timings(out, &r);
    print_footer(out, &r);
    temper_result_free(&r);
}
