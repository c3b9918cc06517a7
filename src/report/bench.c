/* bench.c: the report of a bench (the object `temper bench --json` prints: id, tasks[], suite):
 * the fast_p curve (share of tasks with a correct sample faster than p times the baseline,
 * against p), and the suite's and the tasks' tables. Takes the bench object itself, so it
 * renders a stored bench and a saved --json alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"
#include "temper/error.h"
#include "report/report.h"

/* Columns of the tasks' table at most. */
#define BENCH_COLUMNS_MAX 14

static void value_cell(FILE *f, json_t *v)
{
    if (json_is_number(v))
        fprintf(f, "<td class=\"num\">%.4g</td>", json_number_value(v));
    else if (json_is_string(v)) {
        fprintf(f, "<td>");
        html_text(f, json_string_value(v));
        fprintf(f, "</td>");
    } else if (json_is_boolean(v))
        fprintf(f, "<td>%s</td>", json_is_true(v) ? "yes" : "no");
    else if (v && !json_is_null(v)) {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fprintf(f, "<td><code>");
        html_text(f, text ? text : "");
        fprintf(f, "</code></td>");
        free(text);
    } else
        fprintf(f, "<td class=\"num\">-</td>");
}

/* The share of tasks whose best correct speedup is over p (tasks without one count as not). */
static double fast_p_at(json_t *tasks, double p)
{
    size_t n = json_array_size(tasks), k = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_object_get(json_array_get(tasks, i), "best_speedup");
        k += json_is_number(s) && json_number_value(s) > p;
    }
    return n ? (double)k / (double)n : 0;
}

static void fast_p_chart(FILE *f, json_t *bench)
{
    json_t *tasks = json_object_get(bench, "tasks"), *fp = json_object_get(json_object_get(bench, "suite"), "fast_p");
    double hi = 2.5;
    size_t i;
    json_t *t;
    int have_speedups = 0;
    json_array_foreach(tasks, i, t) {
        json_t *s = json_object_get(t, "best_speedup");
        if (json_is_number(s)) {
            have_speedups = 1;
            hi = fmax(hi, json_number_value(s) * 1.1);
        }
    }
    hi = fmin(hi, 64);
    struct svg_axis x = {0, 0, 0, "p: speedup over the baseline required"};
    struct svg_axis y = {0, 1, 0, "fast_p (share of tasks)"};
    svg_linear_range(0, hi, &x.lo, &x.hi);
    struct svg_plot plot;
    svg_plot_init(&plot, 720, 380, x, y);
    svg_begin(f, &plot, "fast-p", "fast_p against p");
    if (have_speedups) {
        /* a step down at each task's best speedup */
        fprintf(f, "<polyline class=\"fastp-curve\" fill=\"none\" stroke=\"" COLOR_POINT "\" stroke-width=\"2.2\" points=\"");
        double prev = fast_p_at(tasks, 0);
        fprintf(f, "%.2f,%.2f", svg_px(&plot, 0), svg_py(&plot, prev));
        for (int s = 1; s <= 2000; s++) {
            double p = x.hi * s / 2000, v = fast_p_at(tasks, p);
            if (v != prev) {
                fprintf(f, " %.2f,%.2f %.2f,%.2f", svg_px(&plot, p), svg_py(&plot, prev), svg_px(&plot, p), svg_py(&plot, v));
                prev = v;
            }
        }
        fprintf(f, " %.2f,%.2f\"/>\n", svg_px(&plot, x.hi), svg_py(&plot, prev));
    }
    const char *key;
    json_t *v;
    json_object_foreach(fp, key, v) {
        char *end;
        double p = strtod(key, &end);
        if (*end || !json_is_number(v) || p < x.lo || p > x.hi)
            continue;
        double yv = json_number_value(v);
        fprintf(f, "<circle class=\"pt fastp\" data-p=\"%.9g\" data-x=\"%.9g\" data-y=\"%.9g\" cx=\"%.3f\" cy=\"%.3f\" "
                   "r=\"5\" fill=\"" COLOR_BEST "\" stroke=\"#7c2d12\"><title>fast_%s = %.3g</title></circle>\n",
                p, p, yv, svg_px(&plot, p), svg_py(&plot, yv), key, yv);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#7c2d12\">%.2f</text>\n", svg_px(&plot, p) + 7,
                svg_py(&plot, yv) - 7, yv);
    }
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"" COLOR_BASELINE "\" stroke-dasharray=\"4 4\"/>\n",
            svg_px(&plot, 1), plot.top, svg_px(&plot, 1), plot.top + plot.inner_h);
    svg_end(f);
    html_caption(f, "The line: for each p, the share of the bench's tasks with a correct sample whose best speedup over "
                    "the baseline is above p, from the tasks' best_speedup. The dots: the suite's fast_p values as the "
                    "bench computed them. The dashed line is p = 1, the baseline's speed.");
}

static void suite_table(FILE *f, json_t *suite)
{
    fprintf(f, "<table id=\"suite\"><tr><th>metric</th><th class=\"num\">value</th></tr>\n");
    const char *key, *sub;
    json_t *v, *w;
    json_object_foreach(suite, key, v) {
        if (json_is_object(v)) {
            json_object_foreach(v, sub, w) {
                fprintf(f, "<tr><td>");
                html_text(f, !strcmp(key, "pass_at_k") ? "pass@" : !strcmp(key, "fast_p") ? "fast_" : key);
                if (strcmp(key, "pass_at_k") && strcmp(key, "fast_p"))
                    fprintf(f, " ");
                html_text(f, sub);
                fprintf(f, "</td>");
                value_cell(f, w);
                fprintf(f, "</tr>\n");
            }
        } else {
            fprintf(f, "<tr><td>");
            html_text(f, key);
            fprintf(f, "</td>");
            value_cell(f, v);
            fprintf(f, "</tr>\n");
        }
    }
    fprintf(f, "</table>\n");
}

static void tasks_table(FILE *f, json_t *tasks)
{
    const char *cols[BENCH_COLUMNS_MAX];
    int ncols = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) {
        const char *key;
        json_t *v;
        json_object_foreach(t, key, v) {
            int k = 0;
            while (k < ncols && strcmp(cols[k], key))
                k++;
            if (k == ncols && ncols < BENCH_COLUMNS_MAX)
                cols[ncols++] = key;
        }
    }
    fprintf(f, "<div class=\"scroll\"><table id=\"bench-tasks\"><tr>");
    for (int k = 0; k < ncols; k++) {
        int numeric = 0; /* a column of numbers is aligned right, its heading too */
        json_array_foreach(tasks, i, t) {
            json_t *v = json_object_get(t, cols[k]);
            if (v && !json_is_null(v)) {
                numeric = json_is_number(v);
                break;
            }
        }
        fprintf(f, numeric ? "<th class=\"num\">" : "<th>");
        html_text(f, cols[k]);
        fprintf(f, "</th>");
    }
    fprintf(f, "</tr>\n");
    json_array_foreach(tasks, i, t) {
        fprintf(f, "<tr>");
        for (int k = 0; k < ncols; k++)
            value_cell(f, json_object_get(t, cols[k]));
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table></div>\n");
}

int temper_report_bench_write(json_t *bench, FILE *f, char *msg, size_t msg_size)
{
    json_t *tasks = json_object_get(bench, "tasks"), *suite = json_object_get(bench, "suite");
    if (!json_is_array(tasks) || !json_is_object(suite))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "a bench needs \"tasks\" (a list) and \"suite\" (an object)");
    char title[256], id[128];
    json_t *idv = json_object_get(bench, "id");
    if (json_is_string(idv))
        snprintf(id, sizeof(id), "%s", json_string_value(idv));
    else
        snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(idv));
    snprintf(title, sizeof(title), "temper bench %s", id);
    html_begin(f, title);
    fprintf(f, "<header><h1>");
    html_text(f, title);
    fprintf(f, "</h1><div class=\"sub\">%zu tasks</div></header>\n<main>\n", json_array_size(tasks));
    fprintf(f, "<div class=\"row\"><section><h2>fast_p</h2>\n");
    fast_p_chart(f, bench);
    fprintf(f, "</section><section style=\"flex:0 1 320px\"><h2>Suite</h2>\n");
    suite_table(f, suite);
    fprintf(f, "</section></div>\n<section><h2>Tasks</h2>\n");
    tasks_table(f, tasks);
    fprintf(f, "</section>\n");
    html_end(f, "(a bench's JSON)");
    if (ferror(f))
        return temper_fail(msg, msg_size, TEMPER_EIO, "writing the report failed");
    return 0;
}
