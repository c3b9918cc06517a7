/* bench.c: a bench from result records: each evaluation read as a sample, the metrics per task
 * and for the suite (metrics.c), the comparison of two benches, and their tables for people.
 * docs/bench.md defines every number and the JSON's shape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/bench.h"
#include "temper/error.h"
#include "temper/result.h"

/* A number, or null where the metric is not defined (NAN) or not measured (<= 0 where allowed). */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *positive_or_null(double v)
{
    return v > 0 && isfinite(v) ? json_real(v) : json_null();
}

/* What a bench takes of one result, read from its typed record. */
static void sample_of(const struct temper_result *r, struct temper_bench_sample *s)
{
    memset(s, 0, sizeof(*s));
    s->correct = r->verdict && !strcmp(r->verdict, "correct");
    s->backend_cuda = r->device && !strncmp(r->device, "cuda", 4);
    double log_speedup = 0, log_expert = 0;
    int nspeedup = 0, nexpert = 0;
    for (size_t i = 0; i < r->timings.n; i++) {
        const struct temper_result_timing *t = &r->timings.v[i];
        double sp = t->speedup.set ? t->speedup.v : 0;
        double ex = t->speedup_vs_expert.set ? t->speedup_vs_expert.v : 0;
        if (sp > 0 && isfinite(sp)) {
            log_speedup += log(sp);
            nspeedup++;
        }
        if (ex > 0 && isfinite(ex)) {
            log_expert += log(ex);
            nexpert++;
        }
        if (i == 0)
            s->roofline_share = t->roofline_share.set ? t->roofline_share.v : 0;
    }
    s->timed = nspeedup > 0;
    s->speedup = nspeedup ? exp(log_speedup / nspeedup) : 0;
    s->speedup_vs_expert = nexpert ? exp(log_expert / nexpert) : 0;
}

void temper_bench_sample_read(json_t *result, struct temper_bench_sample *s)
{
    /* Lenient: a bench reads results as the store or a file gives them. Out of memory, the sample
     * is empty (not correct, not timed). */
    struct temper_result r;
    if (temper_result_from_stored(result, &r)) {
        memset(s, 0, sizeof(*s));
        return;
    }
    sample_of(&r, s);
    temper_result_free(&r);
}

/* A task's results, each read once into its typed record and its sample. */
struct task_results {
    size_t n;                         /* results */
    struct temper_result *r;          /* their records (owned) */
    struct temper_bench_sample *s;    /* their samples */
};

static void task_results_free(struct task_results *rs)
{
    for (size_t i = 0; rs->r && i < rs->n; i++)
        temper_result_free(&rs->r[i]);
    free(rs->r);
    free(rs->s);
    memset(rs, 0, sizeof(*rs));
}

/* Reads the results of an array (borrowed) leniently (temper_result_from_stored: as the store or a
 * file gives them; one that is no object reads as empty). 0, or TEMPER_ENOMEM with rs freed. */
static int task_results_read(json_t *results, struct task_results *rs)
{
    memset(rs, 0, sizeof(*rs));
    size_t n = json_array_size(results);
    rs->r = calloc(n + 1, sizeof(*rs->r));
    rs->s = calloc(n + 1, sizeof(*rs->s));
    if (!rs->r || !rs->s) {
        task_results_free(rs);
        return TEMPER_ENOMEM;
    }
    for (; rs->n < n; rs->n++) {
        if (temper_result_from_stored(json_array_get(results, rs->n), &rs->r[rs->n])) {
            task_results_free(rs);
            return TEMPER_ENOMEM;
        }
        sample_of(&rs->r[rs->n], &rs->s[rs->n]);
    }
    return 0;
}

/* The expert routine a task's results were timed against, or NULL (borrowed from rs). */
static const char *results_expert(const struct task_results *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rs->r[i].expert && *rs->r[i].expert)
            return rs->r[i].expert;
    return NULL;
}

/* 1 when a later result of the same configuration (source, compiler options, device) in rs
 * counts: a configuration's best counts with its latest timed evaluation of any verdict, as
 * `temper best` counts it (a tune's re-timing, not its screening sample of the same code; one found
 * wrong later drops out); a correct result without a time does not count. Later: a larger store
 * id, or later in the array where there are none. */
static int superseded(const struct task_results *rs, size_t i)
{
    const struct temper_result *r = &rs->r[i];
    const char *hash = r->source_hash, *opts = r->options, *dev = r->device;
    int64_t id = r->store_id.set ? r->store_id.v : 0;
    if (!hash)
        return 0;
    for (size_t j = 0; j < rs->n; j++) {
        const struct temper_result *q = &rs->r[j];
        int64_t qid = q->store_id.set ? q->store_id.v : 0;
        const char *qv = q->verdict, *qh = q->source_hash, *qo = q->options, *qd = q->device;
        int later = id && qid ? qid > id : j > i;
        if (later && qv && (strcmp(qv, "correct") || rs->s[j].timed) && qh && !strcmp(qh, hash) &&
            !strcmp(qo ? qo : "", opts ? opts : "") && !strcmp(qd ? qd : "", dev ? dev : ""))
            return 1;
    }
    return 0;
}

/* The task's evaluations, one entry each, counted into m (and their bests), with the speedups of
 * the correct, timed ones appended to correct_speedups; caller decrefs. */
static json_t *task_evaluations(const char *name, const struct task_results *rs, struct temper_metric_task *m,
                                json_t *correct_speedups, double *best_roofline, int64_t *best_id)
{
    json_t *evals = json_array();
    for (size_t i = 0; i < rs->n; i++) {
        const struct temper_result *r = &rs->r[i];
        const struct temper_bench_sample *s = &rs->s[i];
        /* A sample is for the task of its folder: one naming another task is not correct here. */
        int mine = r->task && !strcmp(r->task, name), other = r->task && *r->task && !mine;
        int correct = s->correct && mine;
        m->samples++;
        m->correct += correct;
        if (s->backend_cuda) {
            m->ran_cuda++;
            m->correct_cuda += correct;
        } else {
            m->ran_opencl++;
            m->correct_opencl += correct;
        }
        if (correct && s->timed) {
            json_array_append_new(correct_speedups, json_real(s->speedup));
            int latest = !superseded(rs, i); /* the bests count each configuration once */
            if (latest && s->speedup > m->best_speedup) {
                m->best_speedup = s->speedup;
                *best_id = r->store_id.set ? r->store_id.v : 0;
            }
            if (latest && s->speedup_vs_expert > m->best_speedup_vs_expert)
                m->best_speedup_vs_expert = s->speedup_vs_expert;
            if (latest && s->roofline_share > *best_roofline)
                *best_roofline = s->roofline_share;
        }
        json_array_append_new(
            evals, json_pack("{s:o?, s:s?, s:s?, s:b, s:o, s:o, s:o, s:s?}", "store_id",
                             r->store_id.set ? json_integer(r->store_id.v) : NULL, "candidate", r->candidate,
                             "verdict", other ? "other_task" : r->verdict, "correct", correct, "speedup",
                             positive_or_null(s->speedup), "speedup_vs_expert", positive_or_null(s->speedup_vs_expert),
                             "roofline_share", positive_or_null(s->roofline_share), "device", r->device));
    }
    return evals;
}

/* One task's entry and its metric summary; caller decrefs the entry. NULL when out of memory. */
static json_t *task_entry(const char *name, json_t *results, json_t *levels, struct temper_metric_task *m,
                          json_t *correct_speedups)
{
    memset(m, 0, sizeof(*m));
    struct task_results rs;
    if (task_results_read(results, &rs))
        return NULL;
    double best_roofline = 0;
    int64_t best_id = 0;
    json_t *evals = task_evaluations(name, &rs, m, correct_speedups, &best_roofline, &best_id);
    const char *expert = results_expert(&rs);
    m->has_expert = expert != NULL;
    json_t *pass = json_object();
    for (int k = 0; k < temper_metric_pass_k_count; k++) {
        double p = temper_metric_pass_at_k(m->samples, m->correct, temper_metric_pass_k_values[k]);
        if (!isnan(p)) {
            char key[16];
            snprintf(key, sizeof(key), "%d", temper_metric_pass_k_values[k]);
            json_object_set_new(pass, key, json_real(p));
        }
    }
    json_t *backends = json_object();
    if (m->ran_cuda)
        json_object_set_new(backends, "cuda", json_pack("{s:i, s:i}", "samples", m->ran_cuda, "correct", m->correct_cuda));
    if (m->ran_opencl)
        json_object_set_new(backends, "opencl",
                            json_pack("{s:i, s:i}", "samples", m->ran_opencl, "correct", m->correct_opencl));
    json_t *level = json_object_get(levels, name);
    json_t *entry = json_pack("{s:s, s:O?, s:i, s:i, s:o, s:o, s:s?, s:o, s:o, s:o, s:o, s:o}", "task", name, "level",
                              json_is_integer(level) ? level : NULL, "samples", m->samples, "correct", m->correct,
                              "best_speedup", positive_or_null(m->best_speedup), "best_speedup_vs_expert",
                              positive_or_null(m->best_speedup_vs_expert), "expert", expert, "best_roofline_share",
                              positive_or_null(best_roofline), "best_store_id",
                              best_id ? json_integer(best_id) : json_null(), "pass_at_k", pass, "backends", backends,
                              "evaluations", evals);
    task_results_free(&rs); /* after the entry copied the expert's name */
    return entry;
}

/* The suite's metrics over the tasks' summaries. */
static json_t *suite_entry(const struct temper_metric_task *m, int n, json_t *correct_speedups)
{
    int samples = 0, correct = 0, solved = 0;
    for (int i = 0; i < n; i++) {
        samples += m[i].samples;
        correct += m[i].correct;
        solved += m[i].correct > 0;
    }
    json_t *pass = json_object(), *pass_tasks = json_object(), *fast = json_object();
    for (int k = 0; k < temper_metric_pass_k_count; k++) {
        int counted = 0;
        double p = temper_metric_suite_pass_at_k(m, n, temper_metric_pass_k_values[k], &counted);
        if (counted) {
            char key[16];
            snprintf(key, sizeof(key), "%d", temper_metric_pass_k_values[k]);
            json_object_set_new(pass, key, json_real(p));
            json_object_set_new(pass_tasks, key, json_integer(counted));
        }
    }
    for (int i = 0; i < temper_metric_fast_p_count; i++) {
        char key[16];
        snprintf(key, sizeof(key), "%g", temper_metric_fast_p_values[i]);
        json_object_set_new(fast, key, num_or_null(temper_metric_fast_p(m, n, temper_metric_fast_p_values[i])));
    }
    size_t nsp = json_array_size(correct_speedups);
    double *speedups = malloc((nsp + (size_t)n + 1) * sizeof(*speedups)), *best = speedups + nsp;
    if (!speedups)
        return NULL;
    for (size_t i = 0; i < nsp; i++)
        speedups[i] = json_real_value(json_array_get(correct_speedups, i));
    for (int i = 0; i < n; i++)
        best[i] = m[i].best_speedup;
    double vs_geomean, vs_faster;
    int experts, both_tasks;
    temper_metric_vs_expert(m, n, &vs_geomean, &vs_faster, &experts);
    double both = temper_metric_both_backends(m, n, &both_tasks);
    double geomean = temper_metric_geomean(speedups, (int)nsp), geomean_best = temper_metric_geomean(best, n);
    free(speedups);
    return json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:i, s:o, s:{s:i, s:o, s:o}, s:o, s:i}", "tasks", n,
                     "samples", samples, "correct_samples", correct, "tasks_correct", solved, "pass_at_k", pass,
                     "pass_at_k_tasks", pass_tasks, "fast_p", fast, "geomean_speedup",
                     num_or_null(geomean), "timed_correct_samples", (int)nsp,
                     "geomean_best_speedup", num_or_null(geomean_best), "vs_expert", "tasks",
                     experts, "geomean_speedup", num_or_null(vs_geomean), "faster_share", num_or_null(vs_faster),
                     "both_backends_share", num_or_null(both), "both_backends_tasks", both_tasks);
}

json_t *temper_bench_compute(json_t *by_task, json_t *levels)
{
    /* Tasks in name order, so that the same results always give the same bench. */
    size_t n = json_object_size(by_task);
    const char **names = malloc((n + 1) * sizeof(*names));
    size_t count = 0;
    if (!names)
        return NULL;
    const char *key;
    json_t *value;
    json_object_foreach(by_task, key, value) names[count++] = key;
    for (size_t i = 1; i < count; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    struct temper_metric_task *m = calloc(n + 1, sizeof(*m));
    json_t *tasks = json_array(), *speedups = json_array();
    int read = m != NULL;
    for (size_t i = 0; read && i < count; i++) {
        json_t *entry = task_entry(names[i], json_object_get(by_task, names[i]), levels, &m[i], speedups);
        read = entry != NULL;
        json_array_append_new(tasks, entry);
    }
    json_t *suite = read ? suite_entry(m, (int)count, speedups) : NULL;
    json_decref(speedups);
    free(m);
    free(names);
    if (!suite) {
        json_decref(tasks);
        return NULL;
    }
    return json_pack("{s:o, s:o}", "tasks", tasks, "suite", suite);
}
