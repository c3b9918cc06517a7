/* report.c: `temper report --run ID | --task T`: gathers a tune's (or a task's) evaluations from
 * the store and writes one self-contained HTML page: headline numbers, the device's roofline
 * from its measured ceilings with every evaluation as a point, best time against evaluations
 * for each run, the table of evaluations, and the best kernel's source against the baseline's.
 * docs/report.md says what each plot shows and how its coordinates are computed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"
#include "report_plots.h"
#include "temper/error.h"
#include "report/report.h"
#include "temper/result.h"
#include "temper/task.h"
#include "util/util.h"

/* Rows in the table at most (the plots show every evaluation). */
#define REPORT_TABLE_MAX 2000

/* A string of a store row or a JSON object that is not a result, or NULL. */
static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static double opt_or_nan(struct temper_opt_f64 o)
{
    return o.set ? o.v : NAN;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void keep(char **slot, const char *value)
{
    if (value && !*slot)
        *slot = strdup(value);
}

/* The first timing of the newest timed evaluation; NULL when none was timed. */
static const struct temper_result_timing *newest_timing(const struct gather *g)
{
    return g->timed ? temper_result_first_timing(g->timed) : NULL;
}

/* A point's numbers from its result's first timing (NAN where unset). */
static void point_timing(struct point *p, const struct temper_result_timing *t)
{
    p->ms = opt_or_nan(t->median_ms);
    p->timed = p->correct && p->ms > 0;
    p->spread = opt_or_nan(t->spread);
    p->speedup = opt_or_nan(t->speedup);
    p->vs_expert = opt_or_nan(t->speedup_vs_expert);
    p->share = opt_or_nan(t->roofline_share);
    p->flops = t->flops.set ? (double)t->flops.v : NAN;
    p->bytes = t->bytes.set ? (double)t->bytes.v : NAN;
    p->baseline_ms = opt_or_nan(t->baseline_median_ms);
    p->expert_ms = opt_or_nan(t->expert_median_ms);
}

static int gather_row(void *user, json_t *row)
{
    static const struct temper_result_timing untimed;
    struct gather *g = user;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct point *p = realloc(g->pts, cap * sizeof(*p));
        if (!p)
            return TEMPER_ENOMEM;
        g->pts = p;
        g->cap = cap;
    }
    /* A store keeps a result as it was recorded: read it as stored. */
    struct temper_result r;
    if (temper_result_from_stored(json_object_get(row, "result"), &r))
        return TEMPER_ENOMEM;
    const struct temper_result_timing *t = temper_result_first_timing(&r);
    struct point *p = &g->pts[g->n++];
    memset(p, 0, sizeof(*p));
    p->id = json_integer_value(json_object_get(row, "id"));
    p->run_id = json_integer_value(json_object_get(row, "run_id"));
    p->parent_id = json_integer_value(json_object_get(row, "parent_id"));
    snprintf(p->verdict, sizeof(p->verdict), "%s", str(row, "verdict") ?: "none");
    snprintf(p->phase, sizeof(p->phase), "%s", r.tune_phase ?: "");
    p->correct = !strcmp(p->verdict, "correct");
    point_timing(p, t ? t : &untimed);
    p->device_key = dup_or_null(str(row, "device_key") ?: str(row, "device") ?: "");
    p->options = dup_or_null(str(row, "options") ?: "");
    p->source_hash = dup_or_null(r.source_hash ?: "");
    p->made_by = dup_or_null(str(row, "operator"));
    keep(&g->baseline_path, r.baseline);
    keep(&g->task, str(row, "task"));
    keep(&g->language, r.device_info ? r.device_info->language : NULL);
    keep(&g->device_name, r.device_info ? r.device_info->name : NULL);
    if (p->timed && (g->timed || (g->timed = calloc(1, sizeof(*g->timed))))) {
        temper_result_free(g->timed);
        *g->timed = r; /* moved */
        return 0;
    }
    temper_result_free(&r);
    return p->timed ? TEMPER_ENOMEM : 0;
}

static int source_row(void *user, json_t *row)
{
    struct gather *g = user;
    if (json_integer_value(json_object_get(row, "id")) != g->want_id)
        return 0;
    g->source = dup_or_null(str(row, "source"));
    g->source_path = dup_or_null(str(row, "path"));
    return 1;
}

static void point_free(struct point *p)
{
    free(p->device_key);
    free(p->options);
    free(p->source_hash);
    free(p->made_by);
}

static void gather_free(struct gather *g)
{
    for (size_t i = 0; i < g->n; i++)
        point_free(&g->pts[i]);
    free(g->pts);
    temper_result_free(g->timed);
    free(g->timed);
    free(g->baseline_path);
    free(g->task);
    free(g->language);
    free(g->device_name);
    free(g->source);
    free(g->source_path);
}

/* Keeps only the evaluations on one device (a task's evaluations may span several). */
static void keep_device(struct gather *g, const char *key)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!strcmp(g->pts[i].device_key, key))
            g->pts[k++] = g->pts[i];
        else
            point_free(&g->pts[i]);
    }
    g->n = k;
}

/* Numbers each run's evaluations from 1 in their order. */
static void number_runs(struct gather *g)
{
    for (size_t i = 0; i < g->n; i++) {
        if (!g->pts[i].run_id)
            continue;
        int index = 1;
        for (size_t j = 0; j < i; j++)
            index += g->pts[j].run_id == g->pts[i].run_id;
        g->pts[i].index = index;
    }
}

/* 1 when a later evaluation of the same configuration (source, options, device) that counts
 * exists: a configuration counts with its latest timed evaluation of any verdict, as `temper best`
 * counts it (a tune's re-timing, not its noisy screening sample of the same code; one found wrong
 * later drops out). A correct evaluation without a time does not count. */
static int superseded(const struct gather *g, size_t i)
{
    const struct point *p = &g->pts[i];
    for (size_t j = 0; j < g->n; j++) {
        const struct point *q = &g->pts[j];
        int counts = q->timed || (!q->correct && strcmp(q->verdict, "none"));
        if (counts && q->id > p->id && same_config(p, q))
            return 1;
    }
    return 0;
}

/* The fastest correct, timed evaluation that its configuration counts with, or -1. */
static long best_index(const struct gather *g)
{
    long best = -1;
    for (size_t i = 0; i < g->n; i++)
        if (g->pts[i].timed && (best < 0 || g->pts[i].ms < g->pts[best].ms) && !superseded(g, i))
            best = (long)i;
    return best;
}

/* ---- the device's ceilings ---- */

static int read_ceilings(struct temper_store *store, const struct gather *g, const char *device_key,
                         struct ceilings *c, char *msg, size_t msg_size)
{
    memset(c, 0, sizeof(*c));
    const struct temper_result_timing *t = newest_timing(g);
    snprintf(c->compute_key, sizeof(c->compute_key), "%s", t && t->compute_ceiling ? t->compute_ceiling : "fma_gflops");
    json_t *dev = NULL;
    int err = temper_store_device_get(store, device_key, &dev, msg, msg_size);
    if (err)
        return err;
    json_t *ceil = json_object_get(dev, "ceilings");
    if (json_is_object(ceil)) {
        snprintf(c->source, sizeof(c->source), "measured by temper calibrate at %s", str(dev, "calibrated_at") ?: "?");
    } else {
        ceil = t ? t->ceilings : NULL;
        snprintf(c->source, sizeof(c->source), "as used by the evaluations' timings");
    }
    c->mem_gbs = json_number_value(json_object_get(ceil, "copy_gbs"));
    c->compute_gflops = json_number_value(json_object_get(ceil, c->compute_key));
    json_decref(dev);
    return 0;
}

/* ---- the table, the cards, the source ---- */

static void table(FILE *f, const struct gather *g, long best)
{
    fprintf(f, "<section><h2>Evaluations</h2>\n<div class=\"scroll\"><table id=\"evaluations\">\n"
               "<tr><th>id</th><th>run</th><th>phase</th><th>compiler options</th><th>verdict</th>"
               "<th class=\"num\">median ms</th><th class=\"num\">spread</th><th class=\"num\">speedup</th>"
               "<th class=\"num\">vs expert</th><th class=\"num\">roofline</th><th>parent</th><th>made by</th></tr>\n");
    size_t shown = g->n < REPORT_TABLE_MAX ? g->n : REPORT_TABLE_MAX;
    for (size_t i = 0; i < shown; i++) {
        const struct point *p = &g->pts[i];
        char ms[32];
        fprintf(f, "<tr data-eval-id=\"%lld\"%s><td class=\"num\">%lld</td><td class=\"num\">", (long long)p->id,
                (long)i == best ? " class=\"best\"" : "", (long long)p->id);
        if (p->run_id)
            fprintf(f, "%lld", (long long)p->run_id);
        fprintf(f, "</td><td>%s</td><td><code>", p->phase);
        /* one option never breaks at its own hyphens */
        for (const char *o = p->options; *o;) {
            size_t len = strcspn(o, " ");
            if (len) {
                fprintf(f, "<span class=\"opt\">");
                html_textn(f, o, len);
                fprintf(f, "</span>");
            }
            o += len;
            if (*o)
                fprintf(f, " "), o++;
        }
        fprintf(f, "</code></td><td class=\"%s\">%s</td><td class=\"num\">%s</td>", p->correct ? "v-correct" : "v-bad",
                p->verdict, p->timed ? fmt_ms(p->ms, ms, sizeof(ms)) : "-");
        if (p->timed)
            fprintf(f, "<td class=\"num\">%.1f%%</td><td class=\"num\">%.2fx</td>", 100 * p->spread, p->speedup);
        else
            fprintf(f, "<td class=\"num\">-</td><td class=\"num\">-</td>");
        if (p->timed && isfinite(p->vs_expert))
            fprintf(f, "<td class=\"num\">%.2fx</td>", p->vs_expert);
        else
            fprintf(f, "<td class=\"num\">-</td>");
        if (p->timed && isfinite(p->share))
            fprintf(f, "<td class=\"num\">%.1f%%</td>", 100 * p->share);
        else
            fprintf(f, "<td class=\"num\">-</td>");
        fprintf(f, "<td class=\"num\">");
        if (p->parent_id)
            fprintf(f, "%lld", (long long)p->parent_id);
        fprintf(f, "</td><td>");
        html_text(f, p->made_by ? p->made_by : "");
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table></div>\n");
    if (shown < g->n)
        fprintf(f, "<p class=\"muted\">The first %zu of %zu evaluations; the plots show every one.</p>\n", shown, g->n);
    fprintf(f, "</section>\n");
}

static void cards(FILE *f, const struct gather *g, long best, const struct ceilings *c)
{
    char v[64], n[160];
    size_t correct = 0;
    for (size_t i = 0; i < g->n; i++)
        correct += g->pts[i].correct;
    fprintf(f, "<div class=\"cards\">\n");
    const struct point *b = best >= 0 ? &g->pts[best] : NULL;
    if (b) {
        snprintf(v, sizeof(v), "%.4g ms", b->ms);
        snprintf(n, sizeof(n), "evaluation %lld, spread %.1f%%", (long long)b->id, 100 * b->spread);
        html_card(f, "best time", v, n);
        snprintf(v, sizeof(v), "%.2fx", b->speedup);
        snprintf(n, sizeof(n), "baseline %.4g ms", b->baseline_ms);
        html_card(f, "speedup over the baseline", v, n);
        if (isfinite(b->vs_expert)) {
            snprintf(v, sizeof(v), "%.2fx", b->vs_expert);
            snprintf(n, sizeof(n), "expert %.4g ms", b->expert_ms);
            html_card(f, "against the expert", v, n);
        }
        if (isfinite(b->share)) {
            snprintf(v, sizeof(v), "%.1f%%", 100 * b->share);
            html_card(f, "of the roofline", v, "the floor the ceilings allow, over the time");
        }
    } else {
        html_card(f, "best time", "none", "no correct, timed evaluation");
    }
    snprintf(v, sizeof(v), "%zu", g->n);
    snprintf(n, sizeof(n), "%zu correct, %zu not", correct, g->n - correct);
    html_card(f, "evaluations", v, n);
    if (c->mem_gbs > 0) {
        char rate[32];
        fmt_rate(c->mem_gbs, "B", v, sizeof(v));
        snprintf(n, sizeof(n), "copy bandwidth; %s %s", !strcmp(c->compute_key, "fma_gflops") ? "FMA" : c->compute_key,
                 fmt_rate(c->compute_gflops, "FLOP", rate, sizeof(rate)));
        html_card(f, "device ceilings", v, n);
    }
    fprintf(f, "</div>\n");
}

static char *read_text(const char *path)
{
    char *text = NULL, msg[256];
    size_t len;
    if (!path || temper_read_file(path, 1 << 20, &text, &len, msg, sizeof(msg)))
        return NULL;
    return text;
}

/* The baseline's source: the file the evaluations were timed against, else the task folder's. */
static char *baseline_source(const struct gather *g, const char *tasks_root, char *name, size_t name_size)
{
    snprintf(name, name_size, "%s", g->baseline_path ? g->baseline_path : "");
    char *text = read_text(g->baseline_path);
    if (text || !g->task)
        return text;
    char dir[TEMPER_PATH_MAX], msg[512];
    struct temper_task *task = malloc(sizeof(*task));
    if (task && !temper_task_find(temper_tasks_root(tasks_root), g->task, dir, sizeof(dir), msg, sizeof(msg)) &&
        !temper_task_load(dir, task, msg, sizeof(msg))) {
        const char *path = g->language && !strcmp(g->language, "cuda") ? task->baseline_cuda : task->baseline_opencl;
        snprintf(name, name_size, "%s", path);
        text = read_text(path);
    }
    free(task);
    return text;
}

/* Collects the runs of the evaluations (each a line of the convergence chart). */
static int collect_runs(struct temper_store *store, const struct gather *g, struct run_info **out, int *n, char *msg,
                        size_t msg_size)
{
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < g->n; i++) {
        int64_t id = g->pts[i].run_id;
        int k = 0;
        while (k < *n && (*out)[k].id != id)
            k++;
        if (!id || k < *n) {
            if (id)
                (*out)[k].evaluations++;
            continue;
        }
        struct run_info *r = realloc(*out, (size_t)(*n + 1) * sizeof(**out));
        if (!r)
            return TEMPER_ENOMEM;
        *out = r;
        json_t *run = NULL;
        int err = temper_store_run_get(store, id, &run, msg, msg_size);
        if (err && err != TEMPER_ENOTFOUND)
            return err;
        r[*n].id = id;
        r[*n].evaluations = 1;
        snprintf(r[*n].strategy, sizeof(r[*n].strategy), "%s",
                 str(json_object_get(run, "settings"), "strategy") ?: "unknown strategy");
        json_decref(run);
        (*n)++;
    }
    return 0;
}

int temper_report_write(struct temper_store *store, const struct temper_report_request *req, FILE *f, char *msg,
                        size_t msg_size)
{
    struct gather g;
    memset(&g, 0, sizeof(g));
    struct temper_store_filter filter = {req->run_id, req->run_id ? NULL : req->task};
    if (!filter.run_id && !filter.task)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a report needs a run or a task");
    int err = temper_store_each_evaluation(store, &filter, gather_row, &g, msg, msg_size);
    if (!err && !g.n)
        err = filter.run_id ? temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation of run %lld in the store %s",
                                          (long long)filter.run_id, temper_store_path(store)) :
                              temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation of task '%s' in the store %s",
                                          filter.task, temper_store_path(store));
    char device_key[1024] = "";
    if (!err) {
        snprintf(device_key, sizeof(device_key), "%s", req->device_key ? req->device_key : g.pts[g.n - 1].device_key);
        keep_device(&g, device_key);
        if (!g.n)
            err = temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation of task '%s' on the device %s",
                              filter.task, device_key);
    }
    struct run_info *runs = NULL;
    int nruns = 0;
    struct ceilings c;
    if (!err)
        err = collect_runs(store, &g, &runs, &nruns, msg, msg_size);
    if (!err)
        err = read_ceilings(store, &g, device_key, &c, msg, msg_size);
    long best = err ? -1 : best_index(&g);
    if (!err && best >= 0) {
        g.want_id = g.pts[best].id;
        int stop = temper_store_each_evaluation(store, &filter, source_row, &g, msg, msg_size);
        err = stop == 1 ? 0 : stop;
    }
    if (err) {
        free(runs);
        gather_free(&g);
        return err;
    }
    number_runs(&g);
    char title[512];
    if (req->title)
        snprintf(title, sizeof(title), "%s", req->title);
    else if (req->run_id)
        snprintf(title, sizeof(title), "temper report: %s, run %lld", g.task ? g.task : "?", (long long)req->run_id);
    else
        snprintf(title, sizeof(title), "temper report: %s", g.task ? g.task : "?");
    html_begin(f, title);
    fprintf(f, "<header><h1>");
    html_text(f, title);
    fprintf(f, "</h1><div class=\"sub\">");
    html_text(f, g.device_name ? g.device_name : device_key);
    fprintf(f, " &middot; <code>");
    html_text(f, device_key);
    fprintf(f, "</code>");
    if (newest_timing(&g)) {
        fprintf(f, " &middot; bench shape ");
        html_text(f, newest_timing(&g)->shape);
    }
    fprintf(f, " &middot; %zu evaluations", g.n);
    for (int r = 0; r < nruns && r < 4; r++) {
        fprintf(f, " &middot; run %lld: ", (long long)runs[r].id);
        html_text(f, runs[r].strategy);
    }
    fprintf(f, "</div></header>\n<main>\n");
    cards(f, &g, best, &c);
    fprintf(f, "<div class=\"row\">\n");
    report_roofline(f, &g, &c, best);
    report_convergence(f, &g, runs, nruns, best);
    fprintf(f, "</div>\n");
    table(f, &g, best);
    if (best >= 0 && g.source) {
        char name[TEMPER_PATH_MAX];
        char *base = baseline_source(&g, req->tasks_root, name, sizeof(name));
        fprintf(f, "<section><h2>Best kernel against the baseline</h2>\n<p>Evaluation %lld, <code>",
                (long long)g.pts[best].id);
        html_text(f, g.source_path ? g.source_path : "");
        fprintf(f, "</code> compiled with <code>");
        html_text(f, g.pts[best].options);
        fprintf(f, "</code>.</p>\n");
        html_diff(f, name, base, g.source_path ? g.source_path : "best", g.source);
        fprintf(f, "</section>\n");
        free(base);
    }
    html_end(f, temper_store_path(store));
    free(runs);
    gather_free(&g);
    if (ferror(f))
        return temper_fail(msg, msg_size, TEMPER_EIO, "writing the report failed");
    return 0;
}
