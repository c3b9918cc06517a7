/* report_plots.c: the report's two plots, as SVG: the roofline (every timed evaluation at its
 * arithmetic intensity under the device's measured roof) and the convergence of each tune run
 * (best time against evaluations). docs/report.md says how their coordinates are computed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"
#include "report_plots.h"

/* A white outline under a label, so that it reads over lines and points. */
#define HALO "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\""

/* ---- the roofline ---- */

/* A point's attributes and tooltip. */
static void point_attrs(FILE *f, const struct point *p, double x, double y)
{
    fprintf(f, " data-eval-id=\"%lld\" data-run-id=\"%lld\" data-verdict=\"%s\" data-x=\"%.9g\" data-y=\"%.9g\"",
            (long long)p->id, (long long)p->run_id, p->verdict, x, y);
}

static void point_title(FILE *f, const struct point *p)
{
    char ms[32];
    fprintf(f, "<title>evaluation %lld: %s, %s ms", (long long)p->id, p->verdict, fmt_ms(p->ms, ms, sizeof(ms)));
    if (p->speedup > 0)
        fprintf(f, ", %.2fx the baseline", p->speedup);
    fprintf(f, "\n");
    html_text(f, p->options);
    fprintf(f, "</title>");
}

/* The ranges of the timed evaluations with a FLOP and byte model: intensity and performance (with
 * the baseline and expert timed beside each); and how many evaluations were not timed. */
struct roof_range {
    double ai_lo, ai_hi; /* arithmetic intensity, FLOP/byte */
    double y_lo, y_hi;   /* performance, GFLOP/s */
    int untimed;         /* evaluations without a time */
};

static void roofline_range(const struct gather *g, struct roof_range *r)
{
    double ai_lo = INFINITY, ai_hi = 0, y_lo = INFINITY, y_hi = 0;
    int untimed = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (!p->timed) {
            untimed++;
            continue;
        }
        if (!(p->flops > 0 && p->bytes > 0))
            continue;
        double ai = p->flops / p->bytes, y = p->flops / (p->ms * 1e6);
        ai_lo = fmin(ai_lo, ai), ai_hi = fmax(ai_hi, ai);
        y_lo = fmin(y_lo, y), y_hi = fmax(y_hi, y);
        if (p->baseline_ms > 0)
            y_lo = fmin(y_lo, p->flops / (p->baseline_ms * 1e6)), y_hi = fmax(y_hi, p->flops / (p->baseline_ms * 1e6));
        if (p->expert_ms > 0)
            y_lo = fmin(y_lo, p->flops / (p->expert_ms * 1e6)), y_hi = fmax(y_hi, p->flops / (p->expert_ms * 1e6));
    }
    *r = (struct roof_range){ai_lo, ai_hi, y_lo, y_hi, untimed};
}

/* The device's roof (calibrated): the bandwidth's slope to the ridge, the compute ceiling, labels. */
static void roofline_roof(FILE *f, const struct svg_plot *plot, const struct ceilings *c, double ridge,
                          const struct svg_axis *x)
{
    fprintf(f, "<g clip-path=\"url(#roof-clip)\">\n");
    fprintf(f,
            "<polyline class=\"roof\" data-mem-gbs=\"%.9g\" data-compute-gflops=\"%.9g\" fill=\"none\" "
            "stroke=\"" COLOR_ROOF "\" stroke-width=\"2.2\" points=\"%.2f,%.2f %.2f,%.2f %.2f,%.2f\"/>\n",
            c->mem_gbs, c->compute_gflops, svg_px(plot, x->lo), svg_py(plot, x->lo * c->mem_gbs),
            svg_px(plot, ridge), svg_py(plot, c->compute_gflops), svg_px(plot, x->hi),
            svg_py(plot, c->compute_gflops));
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#94a3b8\" stroke-dasharray=\"3 3\"/>\n",
            svg_px(plot, ridge), svg_py(plot, c->compute_gflops), svg_px(plot, ridge), plot->top + plot->inner_h);
    fprintf(f, "</g>\n");
    char rate[32];
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"" COLOR_ROOF "\" text-anchor=\"end\">%s %s</text>\n",
            plot->left + plot->inner_w - 4, svg_py(plot, c->compute_gflops) - 6,
            !strcmp(c->compute_key, "fma_gflops") ? "FMA" : c->compute_key,
            fmt_rate(c->compute_gflops, "FLOP", rate, sizeof(rate)));
    /* the bandwidth's label at the slope's start: the range puts the ridge 4x or more past it */
    double lx = x->lo * 1.3, ly = lx * c->mem_gbs;
    double angle = -atan2(svg_py(plot, ly) - svg_py(plot, ly * 10), svg_px(plot, lx * 10) - svg_px(plot, lx)) *
                   180 / M_PI;
    fprintf(f, "<text transform=\"translate(%.2f %.2f) rotate(%.2f)\" font-size=\"11\" fill=\"" COLOR_ROOF "\">"
               "copy %s</text>\n",
            svg_px(plot, lx), svg_py(plot, ly) - 6, angle, fmt_rate(c->mem_gbs, "B", rate, sizeof(rate)));
}

/* The task's intensity, every timed evaluation, the baseline and expert beside the best, and the
 * marks of the evaluations without a time. */
static void roofline_points(FILE *f, const struct gather *g, const struct svg_plot *plot, double ai_lo, long best)
{
    /* the task's intensity */
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#cbd5e1\" stroke-dasharray=\"2 4\"/>\n",
            svg_px(plot, ai_lo), plot->top, svg_px(plot, ai_lo), plot->top + plot->inner_h);
    const struct point *ref = best >= 0 ? &g->pts[best] : NULL;
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (!p->timed || !(p->flops > 0 && p->bytes > 0))
            continue;
        double ai = p->flops / p->bytes, yv = p->flops / (p->ms * 1e6);
        int is_best = (long)i == best;
        fprintf(f, "<circle class=\"pt%s\"", is_best ? " best" : "");
        point_attrs(f, p, ai, yv);
        fprintf(f, " cx=\"%.3f\" cy=\"%.3f\" r=\"%s\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"%s\">", svg_px(plot, ai),
                svg_py(plot, yv), is_best ? "6" : "4.5", is_best ? COLOR_BEST : COLOR_POINT, is_best ? "1" : "0.55",
                is_best ? "#7c2d12" : "#1e3a8a");
        point_title(f, p);
        fprintf(f, "</circle>\n");
        if (is_best)
            fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" font-weight=\"600\" fill=\"#92400e\" " HALO ">"
                       "best %.2fx</text>\n",
                    svg_px(plot, ai) + 10, svg_py(plot, yv) + 4, p->speedup);
    }
    /* baseline and expert over the points (reference marks): timed beside the best */
    if (ref && ref->baseline_ms > 0 && ref->flops > 0) {
        double ai = ref->flops / ref->bytes, yv = ref->flops / (ref->baseline_ms * 1e6);
        double px = svg_px(plot, ai), py = svg_py(plot, yv);
        fprintf(f, "<rect class=\"baseline\" data-x=\"%.9g\" data-y=\"%.9g\" data-ms=\"%.9g\" x=\"%.2f\" y=\"%.2f\" "
                   "width=\"11\" height=\"11\" fill=\"" COLOR_BASELINE "\" stroke=\"#fff\"><title>baseline: %.4g ms</title></rect>\n",
                ai, yv, ref->baseline_ms, px - 5.5, py - 5.5, ref->baseline_ms);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"" COLOR_BASELINE "\" text-anchor=\"end\" " HALO
                   ">baseline</text>\n",
                px - 10, py + 4);
    }
    if (ref && ref->expert_ms > 0 && ref->flops > 0) {
        double ai = ref->flops / ref->bytes, yv = ref->flops / (ref->expert_ms * 1e6);
        double px = svg_px(plot, ai), py = svg_py(plot, yv);
        fprintf(f, "<path class=\"expert\" data-x=\"%.9g\" data-y=\"%.9g\" data-ms=\"%.9g\" d=\"M%.2f %.2fl7 7l-7 7l-7-7z\" "
                   "fill=\"" COLOR_EXPERT "\" stroke=\"#fff\"><title>expert: %.4g ms</title></path>\n",
                ai, yv, ref->expert_ms, px, py - 7, ref->expert_ms);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"" COLOR_EXPERT "\" text-anchor=\"end\" " HALO
                   ">expert</text>\n",
                px - 10, py + 4);
    }
    /* evaluations without a time: a row of marks under the axis at the task's intensity */
    int k = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (p->timed)
            continue;
        double px = svg_px(plot, ai_lo) + 9 * (k % 16), py = plot->top + plot->inner_h - 8 - 9 * (k / 16);
        k++;
        fprintf(f, "<path class=\"untimed\" data-eval-id=\"%lld\" data-run-id=\"%lld\" data-verdict=\"%s\" "
                   "data-timed=\"0\" d=\"M%.2f %.2fl6 6m0 -6l-6 6\" stroke=\"" COLOR_FAIL "\" stroke-width=\"1.6\">",
                (long long)p->id, (long long)p->run_id, p->verdict, px - 3, py - 3);
        point_title(f, p);
        fprintf(f, "</path>\n");
    }
}

/* The legend and the caption. */
static void roofline_legend(FILE *f, const struct ceilings *c, const struct point *ref, int untimed, int calibrated)
{
    fprintf(f, "<div class=\"legend\"><span><i class=\"sw\" style=\"background:" COLOR_POINT "\"></i>evaluation</span>"
               "<span><i class=\"sw\" style=\"background:" COLOR_BEST "\"></i>best</span>"
               "<span><i class=\"sw\" style=\"background:" COLOR_BASELINE ";border-radius:0\"></i>baseline</span>");
    if (ref && ref->expert_ms > 0)
        fprintf(f, "<span><i class=\"sw\" style=\"background:" COLOR_EXPERT ";transform:rotate(45deg);border-radius:0\"></i>expert</span>");
    if (untimed)
        fprintf(f, "<span style=\"color:" COLOR_FAIL "\">&#x2715; not correct or not timed (%d)</span>", untimed);
    fprintf(f, "</div>\n");
    char cap[640], compute[32], mem[32];
    if (calibrated)
        snprintf(cap, sizeof(cap),
                 "x: the task's FLOP model over its byte model at the bench shape; y: FLOPs over the median time. "
                 "The roof is min(%s %s, intensity x copy bandwidth %s), the device's ceilings %s; "
                 "a point's height over the roof below it is its roofline share.",
                 !strcmp(c->compute_key, "fma_gflops") ? "FMA" : c->compute_key,
                 fmt_rate(c->compute_gflops, "FLOP", compute, sizeof(compute)), fmt_rate(c->mem_gbs, "B", mem, sizeof(mem)),
                 c->source);
    else
        snprintf(cap, sizeof(cap), "The device was never calibrated (temper calibrate), so no roof is drawn. x: the "
                                   "task's FLOP model over its byte model; y: FLOPs over the median time.");
    html_caption(f, cap);
    fprintf(f, "</section>\n");
}

void report_roofline(FILE *f, const struct gather *g, const struct ceilings *c, long best)
{
    fprintf(f, "<section><h2>Roofline</h2>\n");
    struct roof_range r;
    roofline_range(g, &r);
    if (!(r.ai_hi > 0)) {
        fprintf(f, "<p class=\"muted\">No evaluation here has both a time and a nonzero FLOP and byte model, so "
                   "none has an arithmetic intensity to place on the roofline.</p></section>\n");
        return;
    }
    int calibrated = c->mem_gbs > 0 && c->compute_gflops > 0;
    double ridge = calibrated ? c->compute_gflops / c->mem_gbs : r.ai_hi;
    struct svg_axis x = {0, 0, 1, "arithmetic intensity (FLOP/byte, the task's models at the bench shape)"};
    struct svg_axis y = {0, 0, 1, "performance (GFLOP/s)"};
    svg_log_range(fmin(r.ai_lo, ridge) / 4, fmax(r.ai_hi, ridge) * 4, &x.lo, &x.hi);
    double roof_lo = calibrated ? fmin(c->compute_gflops, x.lo * c->mem_gbs) : r.y_lo;
    svg_log_range(fmin(r.y_lo, roof_lo) / 1.5, fmax(r.y_hi, calibrated ? c->compute_gflops : r.y_hi) * 1.5, &y.lo,
                  &y.hi);
    struct svg_plot plot;
    svg_plot_init(&plot, 560, 380, x, y);
    svg_begin(f, &plot, "roofline", "Roofline: every evaluation of the report at its arithmetic intensity");
    svg_clip_path(f, &plot, "roof-clip");
    if (calibrated)
        roofline_roof(f, &plot, c, ridge, &x);
    roofline_points(f, g, &plot, r.ai_lo, best);
    svg_end(f);
    roofline_legend(f, c, best >= 0 ? &g->pts[best] : NULL, r.untimed, calibrated);
}

/* ---- convergence: best time against evaluations, one line per run ---- */

static const char *const run_colors[] = {"#2563eb", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2",
                                         "#65a30d", "#dc2626"};

/* A run's step line of the best time so far. live: room for every evaluation's index. */
/* A dashed horizontal line across the plot at time ms, labelled "NAME MS ms" at its right end
 * (the baseline's and the expert's times on the convergence plot). */
static void time_line(FILE *f, const struct svg_plot *plot, double ms, const char *name, const char *color,
                      const char *dash)
{
    fprintf(f, "<line class=\"%s\" data-y=\"%.9g\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
               "stroke=\"%s\" stroke-dasharray=\"%s\"/><text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
               "fill=\"%s\" text-anchor=\"end\">%s %.4g ms</text>\n",
            name, ms, plot->left, svg_py(plot, ms), plot->left + plot->inner_w, svg_py(plot, ms), color, dash,
            plot->left + plot->inner_w - 4, svg_py(plot, ms) - 5, color, name, ms);
}

static void convergence_line(FILE *f, const struct gather *g, const struct svg_plot *plot, const struct run_info *run,
                             const char *color, size_t *live)
{
    /* the step line of the best so far */
    fprintf(f, "<polyline class=\"best-line\" data-run-id=\"%lld\" data-strategy=\"", (long long)run->id);
    html_text(f, run->strategy);
    fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    /* The header's rule: each configuration counts with its latest timed evaluation of any
     * verdict so far (live holds them; a slower re-timing replaces a screening sample, a later
     * failure drops the configuration), so the line ends at the best. */
    double best = INFINITY;
    int last = 0;
    size_t nlive = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (p->run_id != run->id)
            continue;
        last = p->index;
        if (!p->timed && (p->correct || !strcmp(p->verdict, "none")))
            continue;
        size_t k = 0;
        while (k < nlive && !same_config(&g->pts[live[k]], p))
            k++;
        live[k < nlive ? k : nlive++] = i;
        double now = INFINITY;
        for (k = 0; k < nlive; k++)
            if (g->pts[live[k]].timed)
                now = fmin(now, g->pts[live[k]].ms);
        if (now != best) {
            if (isfinite(best))
                fprintf(f, "%.2f,%.2f ", svg_px(plot, p->index), svg_py(plot, best));
            best = now;
            fprintf(f, "%.2f,%.2f ", svg_px(plot, p->index), svg_py(plot, best));
        }
    }
    if (isfinite(best))
        fprintf(f, "%.2f,%.2f", svg_px(plot, last), svg_py(plot, best));
    fprintf(f, "\"/>\n");
}

/* A run's evaluations: dots where timed, marks on the floor where not. */
static void convergence_points(FILE *f, const struct gather *g, const struct svg_plot *plot,
                               const struct run_info *run, const char *color)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (p->run_id != run->id)
            continue;
        if (p->timed) {
            fprintf(f, "<circle class=\"pt\"");
            point_attrs(f, p, p->index, p->ms);
            fprintf(f, " cx=\"%.3f\" cy=\"%.3f\" r=\"3.5\" fill=\"%s\" fill-opacity=\"0.45\">", svg_px(plot, p->index),
                    svg_py(plot, p->ms), color);
        } else {
            double px = svg_px(plot, p->index), py = plot->top + plot->inner_h - 6;
            fprintf(f, "<path class=\"untimed\" data-eval-id=\"%lld\" data-run-id=\"%lld\" data-verdict=\"%s\" "
                       "data-timed=\"0\" data-x=\"%d\" d=\"M%.2f %.2fl6 6m0 -6l-6 6\" stroke=\"" COLOR_FAIL "\" "
                       "stroke-width=\"1.6\">",
                    (long long)p->id, (long long)p->run_id, p->verdict, p->index, px - 3, py - 3);
        }
        point_title(f, p);
        fprintf(f, p->timed ? "</circle>\n" : "</path>\n");
    }
}

/* The runs' legend and the caption. */
static void convergence_legend(FILE *f, const struct run_info *runs, int nruns)
{
    fprintf(f, "<div class=\"legend\">");
    for (int r = 0; r < nruns; r++) {
        fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>run %lld: ",
                run_colors[r % (int)(sizeof(run_colors) / sizeof(run_colors[0]))], (long long)runs[r].id);
        html_text(f, runs[r].strategy);
        fprintf(f, " (%d evaluations)</span>", runs[r].evaluations);
    }
    fprintf(f, "</div>\n");
    html_caption(f, "x: each evaluation's place in its run (screening and re-timing alike); y: its median time at the "
                    "first bench shape (dots) and the best correct time so far (line: each configuration at its latest "
                    "time, so a slower re-timing can raise it). The dashed lines are the baseline (and expert) as "
                    "timed beside the best. Marks on the floor are evaluations that were not correct or not timed.");
    fprintf(f, "</section>\n");
}

void report_convergence(FILE *f, const struct gather *g, const struct run_info *runs, int nruns, long best)
{
    fprintf(f, "<section><h2>Convergence</h2>\n");
    /* the baseline and expert as timed beside the best (each evaluation times them anew) */
    double lo = INFINITY, hi = 0, base = best >= 0 ? g->pts[best].baseline_ms : NAN,
           expert = best >= 0 ? g->pts[best].expert_ms : NAN;
    int n_max = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct point *p = &g->pts[i];
        if (!p->run_id)
            continue;
        n_max = p->index > n_max ? p->index : n_max;
        if (p->timed)
            lo = fmin(lo, p->ms), hi = fmax(hi, p->ms);
    }
    if (!nruns || !(hi > 0)) {
        fprintf(f, "<p class=\"muted\">No tune run with a correct, timed evaluation here: nothing converges.</p></section>\n");
        return;
    }
    if (base > 0)
        lo = fmin(lo, base), hi = fmax(hi, base);
    if (expert > 0)
        lo = fmin(lo, expert), hi = fmax(hi, expert);
    struct svg_axis x = {0.5, n_max + 0.5, 0, "evaluation (in the order the run recorded them)"};
    struct svg_axis y = {0, 0, hi / lo > 20, "median time (ms, lower is better)"};
    if (y.log)
        svg_log_range(lo / 1.2, hi * 1.2, &y.lo, &y.hi);
    else
        svg_linear_range(0, hi, &y.lo, &y.hi);
    struct svg_plot plot;
    svg_plot_init(&plot, 560, 380, x, y);
    size_t *live = malloc(g->n * sizeof(*live)); /* see the step line below */
    if (!live)
        return (void)fprintf(f, "<p class=\"muted\">Out of memory drawing the convergence.</p></section>\n");
    svg_begin(f, &plot, "convergence", "Best time so far against evaluations, one line per tune run");
    if (base > 0)
        time_line(f, &plot, base, "baseline", COLOR_BASELINE, "6 4");
    if (expert > 0)
        time_line(f, &plot, expert, "expert", COLOR_EXPERT, "2 3");
    for (int r = 0; r < nruns; r++) {
        const char *color = run_colors[r % (int)(sizeof(run_colors) / sizeof(run_colors[0]))];
        convergence_line(f, g, &plot, &runs[r], color, live);
        convergence_points(f, g, &plot, &runs[r], color);
    }
    free(live);
    svg_end(f);
    convergence_legend(f, runs, nruns);
}

