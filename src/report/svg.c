/* svg.c: the report's plot frame: axes on a linear or log10 scale, their grid, ticks and titles,
 * and the mapping from data to page coordinates, which every point's data-* attributes and the
 * frame's own attributes make checkable (tests/report/check_report.py recomputes it). */
#include <math.h>
#include <stdio.h>

#include "report_impl.h"

void svg_plot_init(struct svg_plot *p, double width, double height, struct svg_axis x, struct svg_axis y)
{
    p->width = width;
    p->height = height;
    p->left = 78;
    p->top = 16;
    p->inner_w = width - p->left - 24;
    p->inner_h = height - p->top - 58;
    p->x = x;
    p->y = y;
}

/* Where v falls on an axis, from 0 (lo) to 1 (hi). */
static double frac(const struct svg_axis *a, double v)
{
    if (a->log)
        return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    return (v - a->lo) / (a->hi - a->lo);
}

double svg_px(const struct svg_plot *p, double x)
{
    return p->left + frac(&p->x, x) * p->inner_w;
}

double svg_py(const struct svg_plot *p, double y)
{
    return p->top + (1 - frac(&p->y, y)) * p->inner_h;
}

void svg_log_range(double lo, double hi, double *out_lo, double *out_hi)
{
    double a = floor(log10(lo)), b = ceil(log10(hi));
    if (b <= a)
        b = a + 1;
    *out_lo = pow(10, a);
    *out_hi = pow(10, b);
}

void svg_linear_range(double lo, double hi, double *out_lo, double *out_hi)
{
    *out_lo = lo < 0 ? lo : 0;
    if (!(hi > *out_lo))
        hi = *out_lo + 1;
    double step = pow(10, floor(log10(hi - *out_lo)));
    double top = ceil(hi / step) * step;
    if (top < hi * 1.05) /* keep the highest point off the frame */
        top += step / 2;
    *out_hi = top;
}

/* A tick's label: 3 significant digits, thousands as k, millions as M. */
static void tick_label(double v, char *out, size_t size)
{
    double a = fabs(v);
    if (a >= 1e6 && fmod(a, 1e6) == 0)
        snprintf(out, size, "%gM", v / 1e6);
    else if (a >= 1e3 && fmod(a, 1e3) == 0)
        snprintf(out, size, "%gk", v / 1e3);
    else
        snprintf(out, size, "%.3g", v);
}

/* The ticks of an axis: decades (and 2, 5 within them when there are few) or round steps. */
static int ticks(const struct svg_axis *a, double *out, int max)
{
    int n = 0;
    if (a->log) {
        int decades = (int)lround(log10(a->hi) - log10(a->lo));
        for (double d = a->lo; d <= a->hi * 1.0001 && n < max; d *= 10) {
            out[n++] = d;
            if (decades <= 2 && d * 10 <= a->hi * 1.0001)
                for (int m = 2; m <= 5 && n < max; m += 3)
                    out[n++] = d * m;
        }
        return n;
    }
    double span = a->hi - a->lo, step = pow(10, floor(log10(span)));
    if (span / step < 2.5)
        step /= 5;
    else if (span / step < 5)
        step /= 2;
    for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9 && n < max; v += step)
        out[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

void svg_begin(FILE *f, const struct svg_plot *p, const char *id, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" "
            "width=\"%.0f\" height=\"%.0f\" role=\"img\" font-family=\"inherit\">\n<title>",
            id, p->width, p->height, p->width, p->height);
    html_text(f, title);
    fprintf(f, "</title>\n");
    fprintf(f,
            "<g class=\"plot\" data-left=\"%.3f\" data-top=\"%.3f\" data-width=\"%.3f\" data-height=\"%.3f\" "
            "data-x-lo=\"%.9g\" data-x-hi=\"%.9g\" data-x-log=\"%d\" data-y-lo=\"%.9g\" data-y-hi=\"%.9g\" "
            "data-y-log=\"%d\">\n",
            p->left, p->top, p->inner_w, p->inner_h, p->x.lo, p->x.hi, p->x.log, p->y.lo, p->y.hi, p->y.log);
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#ffffff\" stroke=\"none\"/>\n",
            p->left, p->top, p->inner_w, p->inner_h);
    double t[64];
    char label[32];
    int n = ticks(&p->x, t, 64);
    for (int i = 0; i < n; i++) {
        double x = svg_px(p, t[i]);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e2e8f0\"/>\n", x, p->top, x,
                p->top + p->inner_h);
        tick_label(t[i], label, sizeof(label));
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#475569\" text-anchor=\"middle\">%s</text>\n",
                x, p->top + p->inner_h + 16, label);
    }
    n = ticks(&p->y, t, 64);
    for (int i = 0; i < n; i++) {
        double y = svg_py(p, t[i]);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e2e8f0\"/>\n", p->left, y,
                p->left + p->inner_w, y);
        tick_label(t[i], label, sizeof(label));
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#475569\" text-anchor=\"end\">%s</text>\n",
                p->left - 6, y + 4, label);
    }
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#94a3b8\"/>\n",
            p->left, p->top, p->inner_w, p->inner_h);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"12\" fill=\"#1e293b\" text-anchor=\"middle\">",
            p->left + p->inner_w / 2, p->height - 14);
    html_text(f, p->x.label);
    fprintf(f, "</text>\n<text transform=\"translate(18 %.2f) rotate(-90)\" font-size=\"12\" fill=\"#1e293b\" "
               "text-anchor=\"middle\">",
            p->top + p->inner_h / 2);
    html_text(f, p->y.label);
    fprintf(f, "</text>\n");
}

void svg_clip_path(FILE *f, const struct svg_plot *p, const char *id)
{
    fprintf(f,
            "<clipPath id=\"%s\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/></clipPath>\n",
            id, p->left, p->top, p->inner_w, p->inner_h);
}

void svg_end(FILE *f)
{
    fprintf(f, "</g>\n</svg>\n");
}
