/* eval_print.c: a result as people read it (temper_eval_print): the verdict, the message, the
 * deep checks' findings and each timing with its place on the roofline. */
#include <stdio.h>
#include <string.h>

#include "temper/eval.h"

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* "  12 of 4096 outputs NaN or inf (...)" for a check whose outputs were not all finite where
 * the answer is, else "": its max errors are over the finite ones only, so that a row of NaN
 * does not read as a near pass. */
static void nonfinite_note(json_t *c, char *out, size_t size)
{
    json_t *bad = json_object_get(c, "nonfinite"), *all = json_object_get(c, "elements");
    out[0] = 0;
    if (json_is_integer(bad) && json_integer_value(bad) > 0)
        snprintf(out, size, "  %lld of %lld outputs NaN or inf (the errors are over the finite ones)",
                 (long long)json_integer_value(bad), (long long)json_integer_value(all));
}

/* The candidate, its task, device and knobs. */
static void print_header(FILE *out, json_t *r)
{
    fprintf(out, "candidate  %s\n", json_string_value(json_object_get(r, "candidate")));
    const char *task = json_string_value(json_object_get(r, "task"));
    if (task && *task)
        fprintf(out, "task       %s\n", task);
    json_t *dev = json_object_get(r, "device_info");
    if (json_is_object(dev))
        fprintf(out, "device     %s  %s (%s)\n", json_string_value(json_object_get(dev, "id")),
                json_string_value(json_object_get(dev, "name")), json_string_value(json_object_get(dev, "class")));
    json_t *knobs = json_object_get(r, "knobs");
    if (json_object_size(knobs)) {
        fprintf(out, "knobs     ");
        const char *k;
        json_t *v;
        json_object_foreach(knobs, k, v) fprintf(out, " %s=%s", k, json_string_value(v));
        fprintf(out, "\n");
    }
}

/* The sanitizers' summary, then a table of each one's findings. */
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
static void print_checks(FILE *out, json_t *checks, json_t *bench)
{
    if (json_array_size(checks)) {
        fprintf(out, "\n%-28s %-7s %-6s %12s %12s %10s\n", "check shape", "seed", "result", "max abs err",
                "max rel err", "mismatches");
        size_t i;
        json_t *c;
        json_array_foreach(checks, i, c)
        {
            json_t *passed = json_object_get(c, "passed");
            const char *res = !json_is_boolean(passed) ? "error" : json_is_true(passed) ? "pass" : "FAIL";
            char note[128];
            nonfinite_note(c, note, sizeof(note));
            fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld%s%s\n", json_string_value(json_object_get(c, "shape")),
                    json_string_value(json_object_get(c, "seed")), res, num(c, "max_abs_err"), num(c, "max_rel_err"),
                    (long long)json_integer_value(json_object_get(c, "mismatches")), note,
                    json_is_false(json_object_get(c, "deterministic")) ? "  nondeterministic" : "");
        }
    }
    if (json_array_size(bench)) {
        size_t i;
        json_t *c;
        json_array_foreach(bench, i, c)
        {
            json_t *passed = json_object_get(c, "passed");
            char note[128];
            nonfinite_note(c, note, sizeof(note));
            fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld%s\n", json_string_value(json_object_get(c, "shape")),
                    "bench", !json_is_boolean(passed) ? "error" : json_is_true(passed) ? "pass" : "FAIL", num(c, "max_abs_err"),
                    num(c, "max_rel_err"), (long long)json_integer_value(json_object_get(c, "mismatches")), note);
        }
    }
}

/* A row for each timed shape, with its place on the roofline and the ceilings measured. */
static void print_timings(FILE *out, json_t *timings)
{
    fprintf(out, "\n%-24s %10s %8s %7s %10s %9s %9s %8s %8s\n", "timed at", "median ms", "spread", "samples", "GB/s",
            "TFLOP/s", "roofline", "base ms", "speedup");
    size_t i;
    json_t *t;
    json_array_foreach(timings, i, t)
    {
        json_t *share = json_object_get(t, "roofline_share");
        char share_text[32];
        if (json_is_number(share))
            snprintf(share_text, sizeof(share_text), "%.1f%%", json_number_value(share) * 100);
        else
            snprintf(share_text, sizeof(share_text), "-");
        fprintf(out, "%-24s %10.4g %7.1f%% %7lld %10.1f %9.3f %9s %8.4g %7.2fx%s\n",
                json_string_value(json_object_get(t, "shape")), num(t, "median_ms"), num(t, "spread") * 100,
                (long long)json_integer_value(json_object_get(t, "samples")), num(t, "gbps"), num(t, "tflops"),
                share_text, num(t, "baseline_median_ms"), num(t, "speedup"),
                json_is_true(json_object_get(t, "impossible")) ? "  IMPOSSIBLE" : "");
        if (json_is_string(json_object_get(t, "warning")))
            fprintf(out, "%-24s warning: %s\n", "", json_string_value(json_object_get(t, "warning")));
        json_t *ceil = json_object_get(t, "ceilings");
        if (json_is_object(ceil) && i == 0)
            fprintf(out, "%-24s measured ceilings: copy %.1f GB/s, FMA %.1f GFLOP/s; %s-bound\n", "",
                    num(ceil, "copy_gbs"), num(ceil, "fma_gflops"), json_string_value(json_object_get(t, "bound")));
    }
}

void temper_eval_print(FILE *out, json_t *r)
{
    const char *verdict = json_string_value(json_object_get(r, "verdict"));
    print_header(out, r);
    fprintf(out, "verdict    %s\n", verdict ? verdict : "?");
    fprintf(out, "message    %s\n", json_string_value(json_object_get(r, "message")));
    json_t *san = json_object_get(r, "sanitize");
    if (json_is_object(san))
        print_sanitize(out, san);
    print_checks(out, json_object_get(r, "checks"), json_object_get(r, "bench_checks"));
    json_t *timings = json_object_get(r, "timings");
    if (json_array_size(timings))
        print_timings(out, timings);
    const char *log = json_string_value(json_object_get(r, "compile_log"));
    if (verdict && !strcmp(verdict, "compile_error") && log && *log)
        fprintf(out, "\ncompiler log:\n%s\n", log);
    json_t *ph = json_object_get(r, "phases_ms");
    if (json_is_object(ph))
        fprintf(out,
                "\ntime       %.0f ms (build %.0f, inputs %.0f, reference %.0f, device runs %.0f, compare %.0f, "
                "timing %.0f)\n",
                num(r, "elapsed_ms"), num(ph, "build"), num(ph, "inputs"), num(ph, "reference"), num(ph, "device"),
                num(ph, "compare"), num(ph, "timing"));
}
