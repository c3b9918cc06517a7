/* bench_compare.c: what changed between two benches (per task and for the suite), and the tables
 * people read: a bench's per-task rows and suite metrics, and a comparison's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "temper/bench.h"

/* A task's entry in a bench by name (borrowed), or NULL. */
static json_t *find_task(json_t *bench, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(bench, "tasks"), i, t) {
        if (!strcmp(json_string_value(json_object_get(t, "task")) ?: "", name))
            return t;
    }
    return NULL;
}

/* What a comparison shows of a task in one bench; a new reference. */
static json_t *task_side(json_t *t)
{
    if (!t)
        return json_null();
    return json_pack("{s:O, s:O, s:O, s:O}", "samples", json_object_get(t, "samples"), "correct",
                     json_object_get(t, "correct"), "best_speedup", json_object_get(t, "best_speedup") ?: json_null(),
                     "best_roofline_share", json_object_get(t, "best_roofline_share") ?: json_null());
}

/* "better", "worse" or "same" for a task in both benches. */
static const char *task_change(json_t *a, json_t *b, double tolerance)
{
    int ca = json_integer_value(json_object_get(a, "correct")) > 0;
    int cb = json_integer_value(json_object_get(b, "correct")) > 0;
    if (ca != cb)
        return cb ? "better" : "worse";
    double sa = json_number_value(json_object_get(a, "best_speedup"));
    double sb = json_number_value(json_object_get(b, "best_speedup"));
    if (sa > 0 && sb > 0) {
        if (sb > sa * (1 + tolerance))
            return "better";
        if (sb < sa / (1 + tolerance))
            return "worse";
    } else if (sa > 0 || sb > 0) {
        return sb > 0 ? "better" : "worse"; /* timed in one only */
    }
    return "same";
}

/* Adds {"a", "b", "delta"} under name when either bench has the metric. */
static void add_metric(json_t *out, const char *name, json_t *va, json_t *vb)
{
    if (!json_is_number(va) && !json_is_number(vb))
        return;
    json_t *delta = json_is_number(va) && json_is_number(vb) ?
                        json_real(json_number_value(vb) - json_number_value(va)) :
                        json_null();
    json_object_set_new(out, name, json_pack("{s:O, s:O, s:o}", "a", va ?: json_null(), "b", vb ?: json_null(),
                                             "delta", delta));
}

json_t *temper_bench_compare(json_t *a, json_t *b, double tolerance)
{
    json_t *tasks = json_array();
    for (int side = 0; side < 2; side++) {
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(side ? b : a, "tasks"), i, t) {
            const char *name = json_string_value(json_object_get(t, "task"));
            if (!name || (side && find_task(a, name)))
                continue; /* a task in both is listed once, from a */
            json_t *ta = side ? NULL : t, *tb = side ? t : find_task(b, name);
            const char *change = !ta ? "added" : !tb ? "removed" : task_change(ta, tb, tolerance);
            json_array_append_new(tasks, json_pack("{s:s, s:o, s:o, s:s}", "task", name, "a", task_side(ta), "b",
                                                   task_side(tb), "change", change));
        }
    }
    json_t *sa = json_object_get(a, "suite"), *sb = json_object_get(b, "suite"), *suite = json_object();
    static const char *const groups[] = {"pass_at_k", "fast_p"};
    for (int g = 0; g < 2; g++) {
        json_t *ga = json_object_get(sa, groups[g]), *gb = json_object_get(sb, groups[g]);
        const char *key;
        json_t *v;
        char name[64];
        json_object_foreach(ga, key, v) {
            snprintf(name, sizeof(name), "%s.%s", groups[g], key);
            add_metric(suite, name, v, json_object_get(gb, key));
        }
        json_object_foreach(gb, key, v) {
            snprintf(name, sizeof(name), "%s.%s", groups[g], key);
            if (!json_object_get(ga, key))
                add_metric(suite, name, NULL, v);
        }
    }
    static const char *const plain[] = {"geomean_speedup", "geomean_best_speedup", "both_backends_share"};
    for (int i = 0; i < 3; i++)
        add_metric(suite, plain[i], json_object_get(sa, plain[i]), json_object_get(sb, plain[i]));
    add_metric(suite, "vs_expert.geomean_speedup", json_object_get(json_object_get(sa, "vs_expert"), "geomean_speedup"),
               json_object_get(json_object_get(sb, "vs_expert"), "geomean_speedup"));
    return json_pack("{s:O, s:O, s:o, s:o}", "a", json_object_get(a, "id") ?: json_null(), "b",
                     json_object_get(b, "id") ?: json_null(), "tasks", tasks, "suite", suite);
}

/* The plural ending for a count: "" for 1, else "s". */
static const char *plural(long long n)
{
    return n == 1 ? "" : "s";
}

/* Prints a number with a format, or "-" in the same width. */
static void print_num(FILE *out, const char *fmt, int width, json_t *v)
{
    if (json_is_number(v))
        fprintf(out, fmt, json_number_value(v));
    else
        fprintf(out, "%*s", width, "-");
}

void temper_bench_print(FILE *out, json_t *bench)
{
    json_t *id = json_object_get(bench, "id");
    if (json_is_integer(id))
        fprintf(out, "bench %lld\n", (long long)json_integer_value(id));
    fprintf(out, "%-24s %5s %7s %7s %9s %9s %9s\n", "task", "level", "samples", "correct", "speedup", "vs expert",
            "roofline");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(bench, "tasks"), i, t) {
        json_t *level = json_object_get(t, "level");
        fprintf(out, "%-24s ", json_string_value(json_object_get(t, "task")));
        if (json_is_integer(level))
            fprintf(out, "%5lld ", (long long)json_integer_value(level));
        else
            fprintf(out, "%5s ", "-");
        fprintf(out, "%7lld %7lld ", (long long)json_integer_value(json_object_get(t, "samples")),
                (long long)json_integer_value(json_object_get(t, "correct")));
        print_num(out, "%8.3gx", 9, json_object_get(t, "best_speedup"));
        fprintf(out, " ");
        print_num(out, "%8.3gx", 9, json_object_get(t, "best_speedup_vs_expert"));
        fprintf(out, " ");
        json_t *roof = json_object_get(t, "best_roofline_share");
        if (json_is_number(roof))
            fprintf(out, "%8.3g%%", 100 * json_number_value(roof));
        else
            fprintf(out, "%9s", "-");
        fprintf(out, "\n");
    }
    /* The suite's tasks the run has no folder for: rows of their own, and counted below, as the
     * JSON lists them (missing_tasks), so that a bench of part of a suite reads as one. */
    json_t *missing = json_object_get(bench, "missing_tasks");
    json_t *name;
    json_array_foreach(missing, i, name)
        fprintf(out, "%-24s %5s %7s %7s  not in this run (no folder of samples)\n", json_string_value(name), "-", "-",
                "-");
    json_t *s = json_object_get(bench, "suite");
    long long ntasks = (long long)json_integer_value(json_object_get(s, "tasks"));
    long long nsamples = (long long)json_integer_value(json_object_get(s, "samples"));
    fprintf(out, "\nsuite: %lld task%s (%lld with a correct sample), %lld sample%s, %lld correct\n", ntasks,
            plural(ntasks), (long long)json_integer_value(json_object_get(s, "tasks_correct")), nsamples,
            plural(nsamples), (long long)json_integer_value(json_object_get(s, "correct_samples")));
    size_t nmissing = json_array_size(missing);
    if (nmissing) {
        const char *level = json_string_value(json_object_get(bench, "level"));
        int one = level && strcmp(level, "all");
        fprintf(out, "  missing   %zu task%s of %s%s %s not in this run (not counted above):", nmissing,
                nmissing == 1 ? "" : "s", one ? "suite " : "the suite", one ? level : "", nmissing == 1 ? "is" : "are");
        json_array_foreach(missing, i, name)
            fprintf(out, "%s %s", i ? "," : "", json_string_value(name));
        fprintf(out, "\n");
    }
    json_t *left_out = json_object_get(bench, "left_out");
    if (json_array_size(left_out))
        fprintf(out, "  left out  %zu file%s (the JSON's left_out says which and why)\n", json_array_size(left_out),
                json_array_size(left_out) == 1 ? "" : "s");
    const char *key;
    json_t *v;
    fprintf(out, "  pass@k   ");
    if (!json_object_size(json_object_get(s, "pass_at_k")))
        fprintf(out, " - (no task has enough samples)");
    json_object_foreach(json_object_get(s, "pass_at_k"), key, v) {
        long long n = (long long)json_integer_value(json_object_get(json_object_get(s, "pass_at_k_tasks"), key));
        fprintf(out, " pass@%s %.3f (%lld task%s)", key, json_number_value(v), n, plural(n));
    }
    fprintf(out, "\n  fast_p   ");
    json_object_foreach(json_object_get(s, "fast_p"), key, v) {
        fprintf(out, " fast_%s ", key);
        print_num(out, "%.3f", 1, v);
    }
    fprintf(out, "\n  geomean speedup ");
    print_num(out, "%.3gx", 1, json_object_get(s, "geomean_speedup"));
    long long timed = (long long)json_integer_value(json_object_get(s, "timed_correct_samples"));
    fprintf(out, " over %lld correct timed sample%s; of each task's best ", timed, plural(timed));
    print_num(out, "%.3gx", 1, json_object_get(s, "geomean_best_speedup"));
    json_t *ve = json_object_get(s, "vs_expert");
    long long experts = json_integer_value(json_object_get(ve, "tasks"));
    fprintf(out, "\n  vs expert ");
    if (!experts) {
        fprintf(out, "- (no task was timed against an expert)");
    } else {
        fprintf(out, "geomean ");
        print_num(out, "%.3gx", 1, json_object_get(ve, "geomean_speedup"));
        fprintf(out, ", faster than the expert on ");
        print_num(out, "%.3f", 1, json_object_get(ve, "faster_share"));
        fprintf(out, " of %lld task%s with one", experts, plural(experts));
    }
    long long both = json_integer_value(json_object_get(s, "both_backends_tasks"));
    fprintf(out, "\n  both backends ");
    if (!both) {
        fprintf(out, "- (no task was run on both CUDA and OpenCL)\n");
    } else {
        print_num(out, "%.3f", 1, json_object_get(s, "both_backends_share"));
        fprintf(out, " of %lld task%s run on both %s correct on both\n", both, plural(both), both == 1 ? "is" : "are");
    }
}

void temper_bench_print_compare(FILE *out, json_t *cmp)
{
    fprintf(out, "bench %lld -> %lld\n", (long long)json_integer_value(json_object_get(cmp, "a")),
            (long long)json_integer_value(json_object_get(cmp, "b")));
    fprintf(out, "%-24s %15s %19s  %s\n", "task", "correct", "best speedup", "change");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(cmp, "tasks"), i, t) {
        json_t *a = json_object_get(t, "a"), *b = json_object_get(t, "b");
        char ca[32] = "-", cb[32] = "-";
        if (json_is_object(a))
            snprintf(ca, sizeof(ca), "%lld/%lld", (long long)json_integer_value(json_object_get(a, "correct")),
                     (long long)json_integer_value(json_object_get(a, "samples")));
        if (json_is_object(b))
            snprintf(cb, sizeof(cb), "%lld/%lld", (long long)json_integer_value(json_object_get(b, "correct")),
                     (long long)json_integer_value(json_object_get(b, "samples")));
        fprintf(out, "%-24s %6s -> %-6s ", json_string_value(json_object_get(t, "task")), ca, cb);
        print_num(out, "%7.3gx", 8, json_object_get(a, "best_speedup"));
        fprintf(out, " -> ");
        print_num(out, "%7.3gx", 8, json_object_get(b, "best_speedup"));
        fprintf(out, "  %s\n", json_string_value(json_object_get(t, "change")));
    }
    fprintf(out, "\nsuite%*s %9s %9s %9s\n", 25, "", "a", "b", "change");
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(cmp, "suite"), key, v) {
        fprintf(out, "  %-28s ", key);
        print_num(out, "%9.3f", 9, json_object_get(v, "a"));
        fprintf(out, " ");
        print_num(out, "%9.3f", 9, json_object_get(v, "b"));
        fprintf(out, " ");
        print_num(out, "%+9.3f", 9, json_object_get(v, "delta"));
        fprintf(out, "\n");
    }
}
